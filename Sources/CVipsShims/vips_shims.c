// libvips operations take NULL-terminated variadic option lists; Swift cannot call them.
// Each function below passes a fixed set of options and forwards unchanged.
#include "CVipsShims.h"

VipsImage *af_vips_image_new_from_file(const char *filename, VipsFailOn fail_on) {
    return vips_image_new_from_file(filename, "fail_on", fail_on, NULL);
}

int af_vips_thumbnail(const char *filename, VipsImage **out, int width, int height,
                      VipsSize size, VipsFailOn fail_on) {
    return vips_thumbnail(filename, out, width, "height", height, "size", size,
                          "fail_on", fail_on, NULL);
}

int af_vips_thumbnail_srgb(const char *filename, VipsImage **out, int width, int height,
                           VipsSize size, VipsFailOn fail_on) {
    return vips_thumbnail(filename, out, width, "height", height, "size", size,
                          "fail_on", fail_on, "export_profile", "srgb",
                          "intent", VIPS_INTENT_RELATIVE, NULL);
}

int af_vips_copy(VipsImage *in, VipsImage **out) {
    return vips_copy(in, out, NULL);
}

int af_vips_extract_area(VipsImage *in, VipsImage **out, int left, int top, int width, int height) {
    return vips_extract_area(in, out, left, top, width, height, NULL);
}

int af_vips_extract_bands(VipsImage *in, VipsImage **out, int first, int count) {
    return vips_extract_band(in, out, first, "n", count, NULL);
}

int af_vips_min(VipsImage *in, double *minimum) {
    return vips_min(in, minimum, NULL);
}

int af_vips_jpegsave_buffer(VipsImage *in, void **buffer, size_t *length, int quality) {
    return vips_jpegsave_buffer(in, buffer, length, "Q", quality, "strip", TRUE, NULL);
}

int af_vips_pngsave_buffer(VipsImage *in, void **buffer, size_t *length) {
    return vips_pngsave_buffer(in, buffer, length, "strip", TRUE, NULL);
}

int af_vips_jpegsave_buffer_unstripped(VipsImage *in, void **buffer, size_t *length, int quality) {
    return vips_jpegsave_buffer(in, buffer, length, "Q", quality, "strip", FALSE, NULL);
}

int af_vips_pngsave_buffer_unstripped(VipsImage *in, void **buffer, size_t *length) {
    return vips_pngsave_buffer(in, buffer, length, "strip", FALSE, NULL);
}

VipsImage *af_vips_image_new_from_file_all_pages(const char *filename, VipsFailOn fail_on) {
    return vips_image_new_from_file(filename, "n", -1, "access", VIPS_ACCESS_SEQUENTIAL, "fail_on", fail_on, NULL);
}

int af_vips_thumbnail_image(VipsImage *in, VipsImage **out, int width, int height, VipsSize size) {
    return vips_thumbnail_image(in, out, width, "height", height, "size", size, NULL);
}

int af_vips_copy_interpretation(VipsImage *in, VipsImage **out, VipsInterpretation interpretation) {
    return vips_copy(in, out, "interpretation", interpretation, NULL);
}

int af_vips_rot(VipsImage *in, VipsImage **out, VipsAngle angle) {
    return vips_rot(in, out, angle, NULL);
}

int af_vips_autorot(VipsImage *in, VipsImage **out) {
    return vips_autorot(in, out, NULL);
}

int af_vips_join_below(VipsImage *first, VipsImage *second, VipsImage **out) {
    return vips_join(first, second, out, VIPS_DIRECTION_VERTICAL, NULL);
}

int af_vips_gifsave_buffer(VipsImage *in, void **buffer, size_t *length) {
    return vips_gifsave_buffer(in, buffer, length, "strip", TRUE, NULL);
}

int af_vips_thumbnail_crop(const char *filename, VipsImage **out, int width, int height,
                           VipsInteresting interesting, VipsFailOn fail_on) {
    return vips_thumbnail(filename, out, width, "height", height, "size", VIPS_SIZE_DOWN,
                          "crop", interesting, "fail_on", fail_on, NULL);
}

int af_vips_thumbnail_crop_srgb(const char *filename, VipsImage **out, int width, int height,
                                VipsInteresting interesting, VipsFailOn fail_on) {
    return vips_thumbnail(filename, out, width, "height", height, "size", VIPS_SIZE_DOWN,
                          "crop", interesting, "fail_on", fail_on, "export_profile", "srgb",
                          "intent", VIPS_INTENT_RELATIVE, NULL);
}

int af_vips_smartcrop(VipsImage *in, VipsImage **out, int width, int height, VipsInteresting interesting) {
    return vips_smartcrop(in, out, width, height, "interesting", interesting, NULL);
}

int af_vips_profile_load(const char *name, VipsBlob **profile) {
    return vips_profile_load(name, profile, NULL);
}

int af_vips_icc_transform_srgb(VipsImage *in, VipsImage **out) {
    return vips_icc_transform(in, out, "srgb", "embedded", TRUE, "intent", VIPS_INTENT_RELATIVE, NULL);
}
