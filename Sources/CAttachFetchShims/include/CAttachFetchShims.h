// Non-variadic entry points for the variadic C calls of libcurl and libvips.
// Swift cannot call a C function that takes `...`, so each shim fixes one argument
// kind and forwards it unchanged. There is no logic here on purpose.
#ifndef C_ATTACH_FETCH_SHIMS_H
#define C_ATTACH_FETCH_SHIMS_H

#include <curl/curl.h>
#include <vips/vips.h>
#include <linux/filter.h>
#include <malloc.h>  // malloc_trim: Swift's Glibc module does not include malloc.h

// MARK: curl_easy_setopt (variadic: the value's C type depends on the option)
CURLcode af_curl_easy_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode af_curl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value);
CURLcode af_curl_easy_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode af_curl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value);
// CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION share this signature.
CURLcode af_curl_easy_setopt_write_function(CURL *handle, CURLoption option, curl_write_callback callback);
CURLcode af_curl_easy_setopt_xferinfo_function(CURL *handle, curl_xferinfo_callback callback);
CURLcode af_curl_easy_setopt_opensocket_function(CURL *handle, curl_opensocket_callback callback);

// MARK: curl_easy_getinfo (variadic: the out-parameter's type depends on the info)
CURLcode af_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLcode af_curl_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value);
CURLcode af_curl_easy_getinfo_string(CURL *handle, CURLINFO info, char **value);
CURLcode af_curl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value);

// MARK: curl_multi_setopt (variadic)
CURLMcode af_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value);

// MARK: curl_share_setopt (variadic)
CURLSHcode af_curl_share_setopt_long(CURLSH *share, CURLSHoption option, long value);

// MARK: libvips operations (variadic: NULL-terminated name/value option lists)
// vips_image_new_from_file: lazy open, reads the header only.
VipsImage *af_vips_image_new_from_file(const char *filename, VipsFailOn fail_on);
// vips_thumbnail: shrink-on-load thumbnail with EXIF auto-rotation.
int af_vips_thumbnail(const char *filename, VipsImage **out, int width, int height,
                      VipsSize size, VipsFailOn fail_on);
// vips_image_new_from_file with every page of a multi-page image (animated WebP) as one tall image.
VipsImage *af_vips_image_new_from_file_all_pages(const char *filename, VipsFailOn fail_on);
// vips_thumbnail_image: the same shrink for an image already in memory (a video frame).
int af_vips_thumbnail_image(VipsImage *in, VipsImage **out, int width, int height, VipsSize size);
// vips_copy that only relabels the pixels' interpretation (raw RGB from libswscale is sRGB).
int af_vips_copy_interpretation(VipsImage *in, VipsImage **out, VipsInterpretation interpretation);
int af_vips_rot(VipsImage *in, VipsImage **out, VipsAngle angle);
int af_vips_extract_area(VipsImage *in, VipsImage **out, int left, int top, int width, int height);
int af_vips_extract_bands(VipsImage *in, VipsImage **out, int first, int count);
int af_vips_min(VipsImage *in, double *minimum);
// Encoders write to memory, so that the caller creates the file itself (O_EXCL, mode 0600).
int af_vips_jpegsave_buffer(VipsImage *in, void **buffer, size_t *length, int quality);
int af_vips_pngsave_buffer(VipsImage *in, void **buffer, size_t *length);
int af_vips_gifsave_buffer(VipsImage *in, void **buffer, size_t *length);

// MARK: files
// renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE): a move that never replaces a file.
int af_rename_noreplace(const char *from, const char *to);
// open(O_TMPFILE | O_RDWR | O_CLOEXEC) in `directory`: a file with no name (_GNU_SOURCE only).
int af_open_unnamed(const char *directory, int mode);
// linkat(AT_SYMLINK_FOLLOW): names an unnamed file through its /proc/self/fd link.
int af_link_following(const char *from, const char *to);

// MARK: descriptors over a socket (SCM_RIGHTS; the CMSG_* macros are not callable from Swift)
#define AF_MAX_PASSED_DESCRIPTORS 4
ssize_t af_send_with_descriptors(int socket, const void *bytes, size_t count, const int *descriptors, int descriptor_count);
ssize_t af_receive_with_descriptors(int socket, void *bytes, size_t count, int *descriptors, int *descriptor_count);

// MARK: decoder worker sandbox
// prctl is variadic: one shim per option the decoder worker sets.
// PR_SET_NO_NEW_PRIVS: no exec can ever gain privileges (and seccomp needs it unprivileged).
int af_prctl_set_no_new_privs(void);
// PR_SET_PDEATHSIG: the worker is killed when the thread that started it ends.
int af_prctl_set_parent_death_signal(int signal);
// PR_SET_SECCOMP with SECCOMP_MODE_FILTER: installs a classic-BPF system-call filter.
int af_prctl_set_seccomp_filter(struct sock_filter *instructions, unsigned short count);
// unshare is declared only under _GNU_SOURCE, which Swift's Glibc module does not define.
int af_unshare(int flags);

// socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC): Swift sees <sys/socket.h>'s SOCK_* constants
// only through whichever module includes that header first, so it cannot name them reliably.
int af_socketpair_stream_cloexec(int fds[2]);
// posix_spawn_file_actions_addclosefrom_np (glibc 2.34+) is declared only under _GNU_SOURCE:
// the worker inherits no descriptor of the pipeline's but its socket.
int af_spawn_close_from(void *actions, int lowest);
// close_range (glibc 2.34+) is declared only under _GNU_SOURCE: a worker forked from the
// program's process closes every descriptor it inherited but its socket.
int af_close_from(int lowest);
// PR_SET_NAME (prctl is variadic): a forked worker carries the program's name and takes the
// spawned worker's; threads name themselves with it too (as ps and the tests see them, 15
// characters kept).
int af_prctl_set_name(const char *name);

#endif
