// Test-only wrappers around variadic libvips calls, used to synthesise large images at test
// time (large bodies are never committed). No logic: each forwards with fixed options.
#ifndef C_TEST_SUPPORT_H
#define C_TEST_SUPPORT_H
#include <vips/vips.h>

// vips_black + vips_jpegsave: a black RGB JPEG; `progressive` selects interlaced encoding,
// which libvips cannot shrink on load (so decoding it is slow on purpose).
int af_test_write_black_jpeg(const char *path, int width, int height, int progressive);
// vips_gaussnoise + vips_cast + vips_pngsave: an uncompressed PNG of noise (`bands` 3 or 4),
// so its size on disk is about width x height x bands: an oversize image that cannot shrink.
int af_test_write_noise_png(const char *path, int width, int height, int bands);
// vips_gaussnoise + vips_jpegsave at quality 100, with EXIF orientation `orientation`.
int af_test_write_noise_jpeg(const char *path, int width, int height, int orientation);
// vips_copy + vips_jpegsave at quality 95: the image at `source` as a JPEG whose EXIF says
// `orientation` (its pixels as stored, not turned).
int af_test_write_oriented_jpeg(const char *source, const char *path, int orientation);
// An ICC v2 RGB profile written to `path` by LittleCMS (cmsCreateRGBProfile): white point and
// primaries as CIE xy, one gamma for all three channels. For sources in spaces no package
// ships a profile of (ProPhoto RGB: D50, ROMM primaries, gamma 1.8).
int af_test_write_rgb_profile(const char *path, double white_x, double white_y, const double primaries_xy[6], double gamma);
// mallinfo2().uordblks: bytes the allocator has handed out and not had back, over every arena
// (the live heap). Here because Swift's Glibc module does not expose <malloc.h>.
size_t af_test_live_heap_bytes(void);
// malloc_trim(0): hands every arena's free pages back to the kernel, so that a resident-size
// reading counts what is in use, not what the allocator keeps (also not in Swift's Glibc).
void af_test_trim_heap(void);
// mallopt(M_MMAP_THRESHOLD) and mallopt(M_TRIM_THRESHOLD) at glibc's own defaults, 128 KiB. Set
// explicitly, they stop moving: otherwise each freed large block raises both, and every arena
// then keeps up to twice that block's size of free memory at its top, which malloc_trim does
// not return for any arena but the main one.
void af_test_fix_malloc_thresholds(void);
// vips_image_new_from_file with the options in the name ("file[fail_on=error]"), as the vips
// command opens its input (random access). NULL on failure, with libvips' error buffer set.
VipsImage *af_test_vips_open(const char *name);
// vips_avg: reads every pixel, so a decoder error anywhere in the image fails it.
int af_test_vips_avg(VipsImage *in, double *average);
// The independent rendering of an image the corpus check compares outputs with, one libvips
// operation each: vips_autorot (EXIF orientation applied), vips_icc_transform to sRGB through
// the embedded profile (`input_profile` when none), relative colorimetric; vips_colourspace to
// sRGB; vips_flatten (alpha onto black); vips_resize by `hscale` and `vscale`; vips_crop;
// vips_subtract; vips_abs.
int af_test_vips_autorot(VipsImage *in, VipsImage **out);
int af_test_vips_icc_srgb(VipsImage *in, VipsImage **out, const char *input_profile);
int af_test_vips_colourspace_srgb(VipsImage *in, VipsImage **out);
int af_test_vips_flatten(VipsImage *in, VipsImage **out);
int af_test_vips_resize(VipsImage *in, VipsImage **out, double hscale, double vscale);
int af_test_vips_crop(VipsImage *in, VipsImage **out, int left, int top, int width, int height);
int af_test_vips_subtract(VipsImage *left, VipsImage *right, VipsImage **out);
int af_test_vips_abs(VipsImage *in, VipsImage **out);

#endif
