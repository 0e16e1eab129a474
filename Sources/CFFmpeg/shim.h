#ifndef VIGIL_CFFMPEG_SHIM_H
#define VIGIL_CFFMPEG_SHIM_H

#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libswscale/swscale.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/log.h>
#include <libavutil/md5.h>
#include <libavutil/base64.h>
#include <errno.h>
#include <sys/prctl.h>

// Swift imports neither function-like macros nor casts in macros: export them here.
static inline int cffmpeg_error_again(void) { return AVERROR(EAGAIN); }
static inline int cffmpeg_error_eof(void) { return AVERROR_EOF; }
static inline int cffmpeg_error_from_errno(int e) { return AVERROR(e); }
static inline int cffmpeg_errno_from_error(int e) { return AVUNERROR(e); }
static inline int64_t cffmpeg_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline int cffmpeg_qp2lambda(void) { return FF_QP2LAMBDA; }

static inline int cffmpeg_error_exit(void) { return AVERROR_EXIT; }
static inline int cffmpeg_error_http_unauthorized(void) { return AVERROR_HTTP_UNAUTHORIZED; }
static inline int cffmpeg_error_http_forbidden(void) { return AVERROR_HTTP_FORBIDDEN; }
static inline int cffmpeg_error_http_not_found(void) { return AVERROR_HTTP_NOT_FOUND; }
static inline uint32_t cffmpeg_tag_hvc1(void) { return MKTAG('h', 'v', 'c', '1'); }

static inline void cffmpeg_error_string(int errnum, char *buf, size_t size) {
    av_strerror(errnum, buf, size);
}

// prctl is variadic, which Swift does not import.
static inline int cffmpeg_disable_transparent_huge_pages(void) { return prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0); }

// FFmpeg's log lines to a sink of Vigil's (Media's FFmpegLog): libav's callback takes a
// va_list, which Swift cannot take in a C function pointer, so the line is formatted here
// (without libav's "[h264 @ 0x…]" prefix) and handed over whole. Only Media calls these.
typedef void (*cffmpeg_log_line_sink)(void *context, int level, const char *line);

// Where the sink is kept: a function's static, since a header's own static is not emitted for Swift.
static inline cffmpeg_log_line_sink *cffmpeg_log_sink_slot(void) {
    static cffmpeg_log_line_sink sink;
    return &sink;
}

static inline void cffmpeg_log_callback(void *context, int level, const char *format, va_list arguments) {
    cffmpeg_log_line_sink sink = *cffmpeg_log_sink_slot();
    if (!sink || level > av_log_get_level()) return;
    char line[1024];
    int print_prefix = 0;
    line[0] = 0;
    av_log_format_line2(context, level, format, arguments, line, (int)sizeof line, &print_prefix);
    sink(context, level, line);
}

static inline void cffmpeg_route_log(cffmpeg_log_line_sink sink, int level) {
    *cffmpeg_log_sink_slot() = sink;
    av_log_set_level(level);
    av_log_set_callback(cffmpeg_log_callback);
}

#endif
