/* data: what the pipeline's files share (data_pipeline.c, data_restart.c). */
#pragma once
#include "lt_internal.h"

/* The MCU rows and restart segments of d covering columns [x0, x1) and rows [y0, y1), as a JPEG of
 * their own in memory from room(bytes) (x1 and y1 clamped to the image's size); its first pixel is the image's (*ox, *oy). 0: made; 1: d has no
 * restart segments that cut its MCU rows, the window is the whole image, or d is not such a JPEG. */
int lt_data_jpeg_window(const uint8_t *d, int64_t len, int64_t x0, int64_t y0, int64_t x1, int64_t y1,
                        uint8_t *(*room)(size_t), const uint8_t **sub, int64_t *sublen, int64_t *ox, int64_t *oy);

#ifdef LT_HAVE_JPEG
#include <setjmp.h>
#include <stdio.h>
#include <jpeglib.h>
#include <jerror.h>

/* libjpeg's errors as a longjmp with the message kept; corrupt-data warnings count as errors (the record
 * then goes to the fallback decoder, which decides). */
typedef struct dp_err {
  struct jpeg_error_mgr mgr;
  jmp_buf jump;
  char msg[JMSG_LENGTH_MAX];
} dp_err;

static inline void dp_error_exit(j_common_ptr cinfo) {
  dp_err *e = (dp_err *)cinfo->err;
  (*cinfo->err->format_message)(cinfo, e->msg);
  longjmp(e->jump, 1);
}

static inline void dp_quiet(j_common_ptr cinfo) { (void)cinfo; }

static inline void dp_emit(j_common_ptr cinfo, int level) {
  if (level < 0) dp_error_exit(cinfo);
}
#endif
