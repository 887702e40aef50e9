// Test-only wrappers around variadic libvips calls, used to synthesise large images at test
// time (large bodies are never committed). No logic: each forwards with fixed options.
#ifndef C_TEST_SUPPORT_H
#define C_TEST_SUPPORT_H
#include <vips/vips.h>

// vips_black + vips_jpegsave: a black RGB JPEG; `progressive` selects interlaced encoding,
// which libvips cannot shrink on load (so decoding it is slow on purpose).
int af_test_write_black_jpeg(const char *path, int width, int height, int progressive);
#endif
