// Non-variadic entry points for libcurl's variadic calls. Swift cannot call a C function that
// takes `...`, so each shim fixes one argument kind and forwards it unchanged. No logic.
#ifndef C_CURL_SHIMS_H
#define C_CURL_SHIMS_H

#include <curl/curl.h>

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

#endif
