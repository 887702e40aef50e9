// Non-variadic entry points for libvips' variadic operations. Swift cannot call a C function
// that takes `...`, so each shim passes a fixed set of options and forwards unchanged. No logic.
#ifndef C_VIPS_SHIMS_H
#define C_VIPS_SHIMS_H

#include <vips/vips.h>

// MARK: libvips operations (variadic: NULL-terminated name/value option lists)
// vips_image_new_from_file: lazy open, reads the header only.
VipsImage *af_vips_image_new_from_file(const char *filename, VipsFailOn fail_on);
// vips_thumbnail: shrink-on-load thumbnail with EXIF auto-rotation.
int af_vips_thumbnail(const char *filename, VipsImage **out, int width, int height,
                      VipsSize size, VipsFailOn fail_on);
// The same, its pixels converted to sRGB through the embedded ICC profile (relative
// colorimetric). For an image with a profile only: libvips 8.14 shifts an untagged image's
// colours when asked to convert it.
int af_vips_thumbnail_srgb(const char *filename, VipsImage **out, int width, int height,
                           VipsSize size, VipsFailOn fail_on);
// vips_copy with no option: a new image of the same pixels whose metadata may be changed.
int af_vips_copy(VipsImage *in, VipsImage **out);
// vips_image_new_from_file with every page of a multi-page image (animated WebP) as one tall image.
VipsImage *af_vips_image_new_from_file_all_pages(const char *filename, VipsFailOn fail_on);
// vips_thumbnail_image: the same shrink for an image already in memory (a video frame).
int af_vips_thumbnail_image(VipsImage *in, VipsImage **out, int width, int height, VipsSize size);
// vips_copy that only relabels the pixels' interpretation (raw RGB from libswscale is sRGB).
int af_vips_copy_interpretation(VipsImage *in, VipsImage **out, VipsInterpretation interpretation);
int af_vips_rot(VipsImage *in, VipsImage **out, VipsAngle angle);
// vips_autorot: the pixels turned and flipped as the image's EXIF orientation says, the tag removed.
int af_vips_autorot(VipsImage *in, VipsImage **out);
// vips_join: `second` below `first`.
int af_vips_join_below(VipsImage *first, VipsImage *second, VipsImage **out);
int af_vips_extract_area(VipsImage *in, VipsImage **out, int left, int top, int width, int height);
int af_vips_extract_bands(VipsImage *in, VipsImage **out, int first, int count);
int af_vips_min(VipsImage *in, double *minimum);
// Encoders write to memory, so that the caller creates the file itself (O_EXCL, mode 0600).
int af_vips_jpegsave_buffer(VipsImage *in, void **buffer, size_t *length, int quality);
int af_vips_pngsave_buffer(VipsImage *in, void **buffer, size_t *length);
// The same without "strip": every metadata item the image still has is written (the caller
// removes all but the ICC profile first).
int af_vips_jpegsave_buffer_unstripped(VipsImage *in, void **buffer, size_t *length, int quality);
int af_vips_pngsave_buffer_unstripped(VipsImage *in, void **buffer, size_t *length);
int af_vips_gifsave_buffer(VipsImage *in, void **buffer, size_t *length);
// Shrink-on-load thumbnail cut to width x height by `interesting` (libvips' smartcrop).
int af_vips_thumbnail_crop(const char *filename, VipsImage **out, int width, int height,
                           VipsInteresting interesting, VipsFailOn fail_on);
// The same, converted to sRGB as af_vips_thumbnail_srgb converts.
int af_vips_thumbnail_crop_srgb(const char *filename, VipsImage **out, int width, int height,
                                VipsInteresting interesting, VipsFailOn fail_on);
// The width x height part `interesting` chooses; the output's Xoffset and Yoffset are minus
// its left and top.
int af_vips_smartcrop(VipsImage *in, VipsImage **out, int width, int height, VipsInteresting interesting);

// vips_profile_load: one of libvips' built-in ICC profiles ("srgb", "cmyk", "p3") by name.
int af_vips_profile_load(const char *name, VipsBlob **profile);
// vips_icc_transform to sRGB through the image's embedded profile, relative colorimetric.
int af_vips_icc_transform_srgb(VipsImage *in, VipsImage **out);

#endif
