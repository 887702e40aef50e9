#include "CFFmpegShims.h"
#include <libavutil/log.h>
#include <stdarg.h>
#include <stdio.h>

static af_av_log_sink sink;
static int sink_max_level;

static void forward(void *context, int level, const char *format, va_list arguments) {
    if (level > sink_max_level) return;
    char message[256];
    vsnprintf(message, sizeof message, format, arguments);
    sink(context, level, message);
}

void af_av_log_set_sink(af_av_log_sink new_sink, int max_level) {
    sink = new_sink;
    sink_max_level = max_level;
    av_log_set_callback(forward);
}
