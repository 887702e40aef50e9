// vips_black, vips_gaussnoise, vips_cast, vips_bandjoin and the savers are variadic; Swift cannot call them.
#include <malloc.h>
#include <lcms2.h>
#include "CTestSupport.h"

int af_test_write_black_jpeg(const char *path, int width, int height, int progressive) {
    VipsImage *image = NULL;
    if (vips_black(&image, width, height, "bands", 3, NULL) != 0) return -1;
    int result = vips_jpegsave(image, path, "Q", 75, "interlace", progressive, NULL);
    g_object_unref(image);
    return result;
}

static VipsImage *af_test_noise(int width, int height, int bands) {
    VipsImage *planes[4] = {NULL, NULL, NULL, NULL};
    VipsImage *joined = NULL, *cast = NULL;
    for (int i = 0; i < bands; i++) {
        if (vips_gaussnoise(&planes[i], width, height, "mean", 128.0, "sigma", 60.0, "seed", 7 + i, NULL) != 0) goto done;
    }
    if (vips_bandjoin(planes, &joined, bands, NULL) != 0) goto done;
    if (vips_cast(joined, &cast, VIPS_FORMAT_UCHAR, NULL) != 0) goto done;
    cast->Type = VIPS_INTERPRETATION_sRGB;
done:
    for (int i = 0; i < bands; i++) if (planes[i]) g_object_unref(planes[i]);
    if (joined) g_object_unref(joined);
    return cast;
}

int af_test_write_noise_png(const char *path, int width, int height, int bands) {
    VipsImage *image = af_test_noise(width, height, bands);
    if (!image) return -1;
    int result = vips_pngsave(image, path, "compression", 0, NULL);
    g_object_unref(image);
    return result;
}

int af_test_write_noise_jpeg(const char *path, int width, int height, int orientation) {
    VipsImage *image = af_test_noise(width, height, 3);
    if (!image) return -1;
    vips_image_set_int(image, "orientation", orientation);
    int result = vips_jpegsave(image, path, "Q", 100, NULL);
    g_object_unref(image);
    return result;
}

int af_test_write_oriented_jpeg(const char *source, const char *path, int orientation) {
    VipsImage *image = vips_image_new_from_file(source, NULL);
    if (!image) return -1;
    VipsImage *copy = NULL;
    int result = vips_copy(image, &copy, NULL);
    if (result == 0) {
        vips_image_set_int(copy, "orientation", orientation);
        result = vips_jpegsave(copy, path, "Q", 95, NULL);
        g_object_unref(copy);
    }
    g_object_unref(image);
    return result;
}

size_t af_test_live_heap_bytes(void) { return mallinfo2().uordblks; }

void af_test_trim_heap(void) { malloc_trim(0); }

void af_test_fix_malloc_thresholds(void) {
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    mallopt(M_TRIM_THRESHOLD, 128 * 1024);
}

VipsImage *af_test_vips_open(const char *name) {
    return vips_image_new_from_file(name, NULL);
}

int af_test_vips_avg(VipsImage *in, double *average) {
    return vips_avg(in, average, NULL);
}



int af_test_vips_autorot(VipsImage *in, VipsImage **out) {
    return vips_autorot(in, out, NULL);
}

int af_test_vips_icc_srgb(VipsImage *in, VipsImage **out, const char *input_profile) {
    return vips_icc_transform(in, out, "srgb", "embedded", TRUE, "input_profile", input_profile,
                              "intent", VIPS_INTENT_RELATIVE, NULL);
}

int af_test_vips_colourspace_srgb(VipsImage *in, VipsImage **out) {
    return vips_colourspace(in, out, VIPS_INTERPRETATION_sRGB, NULL);
}

int af_test_vips_flatten(VipsImage *in, VipsImage **out) {
    return vips_flatten(in, out, NULL);
}

int af_test_vips_resize(VipsImage *in, VipsImage **out, double hscale, double vscale) {
    return vips_resize(in, out, hscale, "vscale", vscale, NULL);
}

int af_test_vips_crop(VipsImage *in, VipsImage **out, int left, int top, int width, int height) {
    return vips_crop(in, out, left, top, width, height, NULL);
}

int af_test_vips_subtract(VipsImage *left, VipsImage *right, VipsImage **out) {
    return vips_subtract(left, right, out, NULL);
}

int af_test_vips_abs(VipsImage *in, VipsImage **out) {
    return vips_abs(in, out, NULL);
}

int af_test_write_rgb_profile(const char *path, double white_x, double white_y, const double primaries_xy[6], double gamma) {
    cmsCIExyY white = {white_x, white_y, 1.0};
    cmsCIExyYTRIPLE primaries = {{primaries_xy[0], primaries_xy[1], 1.0}, {primaries_xy[2], primaries_xy[3], 1.0},
                                 {primaries_xy[4], primaries_xy[5], 1.0}};
    cmsToneCurve *curve = cmsBuildGamma(NULL, gamma);
    if (curve == NULL) return -1;
    cmsToneCurve *curves[3] = {curve, curve, curve};
    cmsHPROFILE profile = cmsCreateRGBProfile(&white, &primaries, curves);
    cmsFreeToneCurve(curve);
    if (profile == NULL) return -1;
    cmsSetProfileVersion(profile, 2.1);
    int written = cmsSaveProfileToFile(profile, path) ? 0 : -1;
    cmsCloseProfile(profile);
    return written;
}
