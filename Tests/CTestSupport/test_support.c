// vips_black and vips_jpegsave are variadic; Swift cannot call them.
#include "CTestSupport.h"

int af_test_write_black_jpeg(const char *path, int width, int height, int progressive) {
    VipsImage *image = NULL;
    if (vips_black(&image, width, height, "bands", 3, NULL) != 0) return -1;
    int result = vips_jpegsave(image, path, "Q", 75, "interlace", progressive, NULL);
    g_object_unref(image);
    return result;
}
