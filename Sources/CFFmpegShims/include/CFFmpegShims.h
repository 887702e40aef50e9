// FFmpeg's log callback takes a va_list, which Swift cannot receive on this platform: the shim
// formats each message and forwards it. No logic beyond the level FFmpeg already passes.
#ifndef C_FFMPEG_SHIMS_H
#define C_FFMPEG_SHIMS_H

// Receives FFmpeg's log messages at `max_level` or more severe (lower), formatted: the logging
// context (an AVClass-bearing struct), the level, and the text.
typedef void (*af_av_log_sink)(void *context, int level, const char *message);

// Installs `sink` as FFmpeg's log callback for messages at `max_level` or more severe.
void af_av_log_set_sink(af_av_log_sink sink, int max_level);

#endif
