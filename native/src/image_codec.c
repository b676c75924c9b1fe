/* image: JPEG (libjpeg-turbo), PNG (libpng) and PPM/PGM (our own reader and writer).
 *
 * Both libraries report errors through a handler that by default prints and calls exit(); here each
 * one longjmps back to the call, which frees what it holds and fails with the library's message
 * and the file's name. */
#include "image_internal.h"

#include <setjmp.h>
/* LT_HAVE_JPEG / LT_HAVE_PNG: set by ffi/build_native.py when the library's headers and linkable
 * library are on the build machine; without one, its functions fail with a line saying what to install. */
#ifdef LT_HAVE_JPEG
#include <jpeglib.h>
#include <jerror.h>
#endif
#ifdef LT_HAVE_PNG
#include <png.h>
#endif
#include <errno.h>

/* ---- shared: raw interleaved samples <-> tensors ---- */

/* dst (byte/float/double) resized to c x h x w from interleaved samples: 8-bit, or 16-bit
 * big-endian (a byte tensor keeps the high byte). */
static int im_store_samples(lt_tensor *dst, const unsigned char *buf, int64_t c, int64_t h, int64_t w,
                            int bytes_per_sample, const char *what) {
  if (!im_supported(dst->type))
    return lt_fail("%s: images load into Byte, Float or Double tensors, not %s", what, lt_type_name(dst->type));
  int64_t size[3] = {c, h, w};
  if (lt_tensor_resize(dst, 3, size)) return -1;
  int64_t plane = h * w;
  void *out = lt_tensor_data(dst);
  int host = lt_host_type(dst->type);
  for (int64_t k = 0; k < c; k++) {
    for (int64_t p = 0; p < plane; p++) {
      const unsigned char *s = buf + (p * c + k) * bytes_per_sample;
      unsigned v = bytes_per_sample == 2 ? ((unsigned)s[0] << 8) | s[1] : s[0];
      int64_t at = k * plane + p;
      if (host == LT_BYTE) ((uint8_t *)out)[at] = s[0];
      else if (host == LT_FLOAT) ((float *)out)[at] = (float)v;
      else ((double *)out)[at] = (double)v;
    }
  }
  return 0;
}

/* The samples of a contiguous ByteTensor image (H x W or C x H x W) interleaved, malloc'd. */
static unsigned char *im_interleave(const lt_tensor *src, int64_t *c, int64_t *h, int64_t *w, const char *fn) {
  if (lt_host_type(src->type) != LT_BYTE || !lt_tensor_is_contiguous(src)) {
    lt_fail("%s: expected a contiguous ByteTensor image", fn);
    return NULL;
  }
  if (src->ndim == 2) { *c = 1; *h = src->size[0]; *w = src->size[1]; }
  else if (src->ndim == 3) { *c = src->size[0]; *h = src->size[1]; *w = src->size[2]; }
  else { lt_fail("%s: expected an H x W or C x H x W image, got %d dimensions", fn, (int)src->ndim); return NULL; }
  if (*h < 1 || *w < 1 || *c < 1) { lt_fail("%s: the image is empty", fn); return NULL; }
  int64_t plane = *h * *w;
  unsigned char *buf = malloc((size_t)(plane * *c));
  if (!buf) { lt_fail("%s: out of memory", fn); return NULL; }
  const uint8_t *in = (const uint8_t *)lt_tensor_data(src);
  for (int64_t k = 0; k < *c; k++)
    for (int64_t p = 0; p < plane; p++) buf[p * *c + k] = in[k * plane + p];
  return buf;
}

/* The bytes of a 1-D contiguous ByteTensor blob. */
static int im_blob(const lt_tensor *blob, const unsigned char **data, size_t *len, const char *what) {
  if (lt_host_type(blob->type) != LT_BYTE || blob->ndim != 1 || !lt_tensor_is_contiguous(blob))
    return lt_fail("%s: the encoded image must be a 1-D contiguous ByteTensor", what);
  *data = (const unsigned char *)lt_tensor_data(blob);
  *len = (size_t)blob->size[0];
  return 0;
}

static int im_write_out(lt_tensor *out, const unsigned char *data, size_t len) {
  int64_t n = (int64_t)len;
  if (lt_tensor_resize(out, 1, &n)) return -1;
  memcpy(lt_tensor_data(out), data, len);
  return 0;
}

/* ---- JPEG ---- */

#ifdef LT_HAVE_JPEG
typedef struct im_jpeg_err {
  struct jpeg_error_mgr mgr;
  jmp_buf jump;
  char msg[JMSG_LENGTH_MAX];
} im_jpeg_err;

static void im_jpeg_error_exit(j_common_ptr cinfo) {
  im_jpeg_err *e = (im_jpeg_err *)cinfo->err;
  (*cinfo->err->format_message)(cinfo, e->msg);
  longjmp(e->jump, 1);
}

/* Warnings stay off stderr and do not stop decoding, except the end of the data coming before the
 * end of the image: libjpeg would pad the picture with grey, we report the truncated file. */
static void im_jpeg_quiet(j_common_ptr cinfo) { (void)cinfo; }

static void im_jpeg_emit(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) {
    im_jpeg_err *e = (im_jpeg_err *)cinfo->err;
    snprintf(e->msg, sizeof e->msg, "the data ends before the image does (truncated file)");
    longjmp(e->jump, 1);
  }
}

/* Decode into dst, or only read the header into chw when dst is NULL. */
static int im_jpeg_read(lt_tensor *dst, int64_t *chw, const char *path, const lt_tensor *blob, const char *what) {
  const unsigned char *data = NULL;
  size_t len = 0;
  if (!path && im_blob(blob, &data, &len, what)) return -1;
  FILE *volatile fp = NULL;
  if (path && !(fp = fopen(path, "rb"))) return lt_fail("%s: cannot open %s for reading: %s", what, path, strerror(errno));
  if (!path && len == 0) return lt_fail("%s: the JPEG data is empty", what);
  struct jpeg_decompress_struct cinfo;
  im_jpeg_err err;
  unsigned char *volatile pixels = NULL;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = im_jpeg_error_exit;
  err.mgr.output_message = im_jpeg_quiet;
  err.mgr.emit_message = im_jpeg_emit;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    if (fp) fclose(fp);
    free(pixels);
    return lt_fail("%s: %s is not a readable JPEG: %s", what, path ? path : "the data", err.msg);
  }
  jpeg_create_decompress(&cinfo);
  if (fp) jpeg_stdio_src(&cinfo, fp);
  else jpeg_mem_src(&cinfo, (unsigned char *)data, (unsigned long)len);
  jpeg_read_header(&cinfo, TRUE);
  int rc = 0;
  if (!dst) {
    jpeg_calc_output_dimensions(&cinfo);
    chw[0] = cinfo.output_components;
    chw[1] = cinfo.output_height;
    chw[2] = cinfo.output_width;
  } else {
    jpeg_start_decompress(&cinfo);
    int64_t c = cinfo.output_components, h = cinfo.output_height, w = cinfo.output_width;
    pixels = malloc((size_t)(c * h * w));
    if (!pixels) {
      snprintf(err.msg, sizeof err.msg, "out of memory for its %lld x %lld pixels", (long long)w, (long long)h);
      longjmp(err.jump, 1);
    }
    while (cinfo.output_scanline < cinfo.output_height) {
      JSAMPROW row = pixels + (size_t)cinfo.output_scanline * (size_t)(w * c);
      jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
    rc = im_store_samples(dst, pixels, c, h, w, 1, what);
  }
  jpeg_destroy_decompress(&cinfo);
  if (fp) fclose(fp);
  free(pixels);
  return rc;
}

int lt_image_jpeg_decode(lt_tensor *dst, const char *path, const lt_tensor *blob, const char *what) {
  return im_jpeg_read(dst, NULL, path, blob, what ? what : "image.loadJPG");
}

int lt_image_jpeg_size(const char *path, int64_t *chw) {
  return im_jpeg_read(NULL, chw, path, NULL, "image.getJPGsize");
}

int lt_image_jpeg_encode(const lt_tensor *src, const char *path, lt_tensor *out, int quality) {
  const char *fn = path ? "image.saveJPG" : "image.compressJPG";
  if (quality < 0 || quality > 100) return lt_fail("%s: quality should be between 0 and 100, got %d", fn, quality);
  int64_t c, h, w;
  unsigned char *volatile pixels = im_interleave(src, &c, &h, &w, fn);
  if (!pixels) return -1;
  if (c != 1 && c != 3) {
    free(pixels);
    return lt_fail("%s: a JPEG image has 1 or 3 channels (grey or RGB), got %lld", fn, (long long)c);
  }
  FILE *volatile fp = NULL;
  if (path && !(fp = fopen(path, "wb"))) {
    free(pixels);
    return lt_fail("%s: cannot open %s for writing: %s", fn, path, strerror(errno));
  }
  struct jpeg_compress_struct cinfo;
  im_jpeg_err err;
  unsigned char *volatile mem = NULL;
  unsigned long mem_len = 0;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = im_jpeg_error_exit;
  err.mgr.output_message = im_jpeg_quiet;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    if (fp) fclose(fp);
    free(pixels);
    free(mem);
    return lt_fail("%s: JPEG encoding failed: %s", fn, err.msg);
  }
  jpeg_create_compress(&cinfo);
  if (fp) jpeg_stdio_dest(&cinfo, fp);
  else jpeg_mem_dest(&cinfo, (unsigned char **)&mem, &mem_len);
  cinfo.image_width = (JDIMENSION)w;
  cinfo.image_height = (JDIMENSION)h;
  cinfo.input_components = (int)c;
  cinfo.in_color_space = c == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, FALSE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = pixels + (size_t)cinfo.next_scanline * (size_t)(w * c);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  int rc = 0;
  if (fp && fclose(fp) != 0) rc = lt_fail("%s: writing %s failed: %s", fn, path, strerror(errno));
  if (!fp) rc = im_write_out(out, mem, mem_len);
  free(pixels);
  free(mem);
  return rc;
}

#else
static int im_no_codec(const char *fn, const char *lib, const char *pkg) {
  return lt_fail("%s: this build of luatorch has no %s support (install Debian's %s, then reinstall luatorch)",
                 fn, lib, pkg);
}
int lt_image_jpeg_decode(lt_tensor *dst, const char *path, const lt_tensor *blob, const char *what) {
  (void)dst, (void)path, (void)blob;
  return im_no_codec(what ? what : "image.loadJPG", "JPEG", "libjpeg-dev");
}
int lt_image_jpeg_size(const char *path, int64_t *chw) {
  (void)path, (void)chw;
  return im_no_codec("image.getJPGsize", "JPEG", "libjpeg-dev");
}
int lt_image_jpeg_encode(const lt_tensor *src, const char *path, lt_tensor *out, int quality) {
  (void)src, (void)out, (void)quality;
  return im_no_codec(path ? "image.saveJPG" : "image.compressJPG", "JPEG", "libjpeg-dev");
}
#endif

/* ---- PNG ---- */

#ifdef LT_HAVE_PNG
typedef struct im_png_io {
  char msg[256];
  const unsigned char *data;  /* reading from memory */
  size_t len, pos;
  unsigned char *out;         /* writing to memory */
  size_t out_len, out_cap;
} im_png_io;

static void im_png_error(png_structp png, png_const_charp msg) {
  im_png_io *io = (im_png_io *)png_get_error_ptr(png);
  snprintf(io->msg, sizeof io->msg, "%s", msg);
  png_longjmp(png, 1);
}

static void im_png_warning(png_structp png, png_const_charp msg) { (void)png; (void)msg; }

static void im_png_read_mem(png_structp png, png_bytep into, png_size_t n) {
  im_png_io *io = (im_png_io *)png_get_io_ptr(png);
  if (n > io->len - io->pos) png_error(png, "the data ends before the image does");
  memcpy(into, io->data + io->pos, n);
  io->pos += n;
}

static void im_png_write_mem(png_structp png, png_bytep from, png_size_t n) {
  im_png_io *io = (im_png_io *)png_get_io_ptr(png);
  if (io->out_len + n > io->out_cap) {
    size_t cap = io->out_cap ? io->out_cap : 4096;
    while (cap < io->out_len + n) cap *= 2;
    unsigned char *grown = realloc(io->out, cap);
    if (!grown) png_error(png, "out of memory");
    io->out = grown;
    io->out_cap = cap;
  }
  memcpy(io->out + io->out_len, from, n);
  io->out_len += n;
}

static void im_png_flush_mem(png_structp png) { (void)png; }

static int im_png_read(lt_tensor *dst, int64_t *chw, int *bit_depth, const char *path, const lt_tensor *blob,
                       const char *what) {
  im_png_io io;
  memset(&io, 0, sizeof io);
  const char *name = path ? path : "the data";
  unsigned char sig[8];
  FILE *volatile fp = NULL;
  if (path) {
    if (!(fp = fopen(path, "rb"))) return lt_fail("%s: cannot open %s for reading: %s", what, path, strerror(errno));
    if (fread(sig, 1, 8, fp) != 8 || png_sig_cmp(sig, 0, 8)) {
      fclose(fp);
      return lt_fail("%s: %s is not a PNG file (bad signature)", what, path);
    }
  } else {
    if (im_blob(blob, &io.data, &io.len, what)) return -1;
    if (io.len < 8 || png_sig_cmp((png_const_bytep)io.data, 0, 8))
      return lt_fail("%s: the ByteTensor is not PNG data (bad signature)", what);
    io.pos = 8;
  }
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &io, im_png_error, im_png_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!info) {
    png_destroy_read_struct(png ? &png : NULL, NULL, NULL);
    if (fp) fclose(fp);
    return lt_fail("%s: out of memory", what);
  }
  unsigned char *volatile pixels = NULL;
  volatile int stage = 0;  /* 0: header, 1: pixels */
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, NULL);
    if (fp) fclose(fp);
    free(pixels);
    /* "Error during init_io" is Torch7's wording for a header error; scripts match it */
    return lt_fail("%s: %s is not a readable PNG (%s: %s)", what, name,
                   stage == 0 ? "Error during init_io" : "error while reading the pixels", io.msg);
  }
  if (fp) png_init_io(png, fp);
  else png_set_read_fn(png, &io, im_png_read_mem);
  png_set_sig_bytes(png, 8);
  png_read_info(png, info);
  int color = png_get_color_type(png, info);
  int depth = png_get_bit_depth(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) {
    png_set_palette_to_rgb(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);  /* palette with alpha: RGBA */
  }
  if ((color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GA) && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth < 8) depth = 8;
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  int64_t c = png_get_channels(png, info), h = png_get_image_height(png, info), w = png_get_image_width(png, info);
  if (!dst) {
    chw[0] = c; chw[1] = h; chw[2] = w;
  } else {
    stage = 1;
    size_t rowbytes = png_get_rowbytes(png, info);
    if (rowbytes != (size_t)(w * c * (depth / 8))) png_error(png, "unexpected row size");
    pixels = malloc(rowbytes * (size_t)h);
    png_bytep *rows = pixels ? malloc(sizeof(png_bytep) * (size_t)h) : NULL;
    if (!rows) png_error(png, "out of memory");
    for (int64_t y = 0; y < h; y++) rows[y] = pixels + (size_t)y * rowbytes;
    png_read_image(png, rows);
    free(rows);
    png_read_end(png, NULL);
  }
  png_destroy_read_struct(&png, &info, NULL);
  if (fp) fclose(fp);
  int rc = 0;
  if (dst) {
    rc = im_store_samples(dst, pixels, c, h, w, depth / 8, what);
    if (bit_depth) *bit_depth = depth;
  }
  free(pixels);
  return rc;
}

int lt_image_png_decode(lt_tensor *dst, const char *path, const lt_tensor *blob, const char *what, int *bit_depth) {
  return im_png_read(dst, NULL, bit_depth, path, blob, what ? what : "image.loadPNG");
}

int lt_image_png_size(const char *path, int64_t *chw) {
  return im_png_read(NULL, chw, NULL, path, NULL, "image.getPNGsize");
}

int lt_image_png_encode(const lt_tensor *src, const char *path, lt_tensor *out) {
  const char *fn = path ? "image.savePNG" : "image.compressPNG";
  int64_t c, h, w;
  unsigned char *volatile pixels = im_interleave(src, &c, &h, &w, fn);
  if (!pixels) return -1;
  static const int types[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GA, PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGBA};
  if (c < 1 || c > 4) {
    free(pixels);
    return lt_fail("%s: a PNG image has 1 to 4 channels, got %lld", fn, (long long)c);
  }
  FILE *volatile fp = NULL;
  if (path && !(fp = fopen(path, "wb"))) {
    free(pixels);
    return lt_fail("%s: cannot open %s for writing: %s", fn, path, strerror(errno));
  }
  im_png_io io;
  memset(&io, 0, sizeof io);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &io, im_png_error, im_png_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  png_bytep *volatile rows = NULL;
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
    if (fp) fclose(fp);
    free(pixels);
    free(rows);
    free(io.out);
    return lt_fail("%s: PNG encoding of %s failed: %s", fn, path ? path : "the image", info ? io.msg : "out of memory");
  }
  if (fp) png_init_io(png, fp);
  else png_set_write_fn(png, &io, im_png_write_mem, im_png_flush_mem);
  png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, types[c], PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  rows = malloc(sizeof(png_bytep) * (size_t)h);
  if (!rows) png_error(png, "out of memory");
  for (int64_t y = 0; y < h; y++) rows[y] = pixels + (size_t)(y * w * c);
  png_write_image(png, rows);
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  int rc = 0;
  if (fp && fclose(fp) != 0) rc = lt_fail("%s: writing %s failed: %s", fn, path, strerror(errno));
  if (!fp) rc = im_write_out(out, io.out, io.out_len);
  free(rows);
  free(pixels);
  free(io.out);
  return rc;
}

#else
#ifdef LT_HAVE_JPEG
static int im_no_codec(const char *fn, const char *lib, const char *pkg) {
  return lt_fail("%s: this build of luatorch has no %s support (install Debian's %s, then reinstall luatorch)",
                 fn, lib, pkg);
}
#endif
int lt_image_png_decode(lt_tensor *dst, const char *path, const lt_tensor *blob, const char *what, int *bit_depth) {
  (void)dst, (void)path, (void)blob, (void)bit_depth;
  return im_no_codec(what ? what : "image.loadPNG", "PNG", "libpng-dev");
}
int lt_image_png_size(const char *path, int64_t *chw) {
  (void)path, (void)chw;
  return im_no_codec("image.getPNGsize", "PNG", "libpng-dev");
}
int lt_image_png_encode(const lt_tensor *src, const char *path, lt_tensor *out) {
  (void)src, (void)out;
  return im_no_codec(path ? "image.savePNG" : "image.compressPNG", "PNG", "libpng-dev");
}
#endif

/* ---- PPM / PGM (P2, P3 ASCII; P5, P6 binary) ---- */

/* The next header number, skipping whitespace and # comments; -1 if none. */
static long im_pnm_number(FILE *fp) {
  int ch = fgetc(fp);
  for (;;) {
    while (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f') ch = fgetc(fp);
    if (ch != '#') break;
    while (ch != '\n' && ch != EOF) ch = fgetc(fp);
  }
  if (ch < '0' || ch > '9') return -1;
  long v = 0;
  while (ch >= '0' && ch <= '9') {
    if (v > 100000000L) return -1;
    v = v * 10 + (ch - '0');
    ch = fgetc(fp);
  }
  /* the single whitespace after the last header number is consumed here (it precedes binary data) */
  return v;
}

/* Open path and read its header: channels, width, height and (unless size_only) the maximum value. */
static int im_pnm_header(const char *path, const char *fn, FILE **out, char *kind, long *c, long *w, long *h,
                         long *maxval, int size_only) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return lt_fail("%s: cannot open %s for reading: %s", fn, path, strerror(errno));
  int p = fgetc(fp), n = fgetc(fp);
  if (p != 'P') {
    fclose(fp);
    return lt_fail("%s: %s is not a PPM/PGM file (corrupted header)", fn, path);
  }
  if (n != '2' && n != '3' && n != '5' && n != '6') {
    fclose(fp);
    return lt_fail("%s: %s: unsupported magic number: P%c (only P2, P3, P5 and P6 are read)", fn, path,
                   n == EOF ? '?' : n);
  }
  *kind = (char)n;
  *c = (n == '3' || n == '6') ? 3 : 1;
  *w = im_pnm_number(fp);
  *h = im_pnm_number(fp);
  *maxval = size_only ? 255 : im_pnm_number(fp);
  if (*w <= 0 || *h <= 0 || *maxval <= 0 || *maxval > 65535) {
    fclose(fp);
    return lt_fail("%s: %s: corrupted header (width, height or maximum value missing or invalid)", fn, path);
  }
  *out = fp;
  return 0;
}

int lt_image_ppm_size(const char *path, int64_t *chw) {
  FILE *fp = NULL;
  char kind = 0;
  long c = 0, w = 0, h = 0, maxval = 0;
  if (im_pnm_header(path, "image.getPPMsize", &fp, &kind, &c, &w, &h, &maxval, 1)) return -1;
  fclose(fp);
  chw[0] = c; chw[1] = h; chw[2] = w;
  return 0;
}

int lt_image_ppm_decode(lt_tensor *dst, const char *path) {
  const char *fn = "image.loadPPM";
  FILE *fp = NULL;
  char kind = 0;
  long c = 0, w = 0, h = 0, maxval = 0;
  if (im_pnm_header(path, fn, &fp, &kind, &c, &w, &h, &maxval, 0)) return -1;
  if (!im_supported(dst->type)) {
    fclose(fp);
    return lt_fail("%s: images load into Byte, Float or Double tensors, not %s", fn, lt_type_name(dst->type));
  }
  size_t n = (size_t)c * (size_t)w * (size_t)h;
  unsigned *samples = malloc(sizeof(unsigned) * n);
  if (!samples) {
    fclose(fp);
    return lt_fail("%s: out of memory for a %ld x %ld image", fn, w, h);
  }
  int ok = 1;
  if (kind == '5' || kind == '6') {
    int wide = maxval > 255;  /* 16-bit samples are big-endian */
    for (size_t i = 0; i < n && ok; i++) {
      int hi = fgetc(fp), lo = wide ? fgetc(fp) : 0;
      if (hi == EOF || lo == EOF) ok = 0;
      else samples[i] = wide ? ((unsigned)hi << 8) | (unsigned)lo : (unsigned)hi;
    }
  } else {
    for (size_t i = 0; i < n && ok; i++) {
      long v = im_pnm_number(fp);
      if (v < 0) ok = 0;
      else samples[i] = (unsigned)v;
    }
  }
  fclose(fp);
  if (!ok) {
    free(samples);
    return lt_fail("%s: %s is truncated or corrupted (fewer samples than its %ld x %ld header says)", fn, path, w, h);
  }
  int64_t size[3] = {c, h, w};
  if (lt_tensor_resize(dst, 3, size)) {
    free(samples);
    return -1;
  }
  /* samples are rescaled to 0..255 (Torch7's range for every maxval); bytes round down as Torch7 did */
  void *out = lt_tensor_data(dst);
  int host = lt_host_type(dst->type);
  int64_t plane = (int64_t)w * h;
  for (int64_t k = 0; k < c; k++)
    for (int64_t p = 0; p < plane; p++) {
      unsigned v = samples[p * c + k];
      if (v > (unsigned)maxval) v = (unsigned)maxval;
      int64_t at = k * plane + p;
      if (host == LT_BYTE) ((uint8_t *)out)[at] = (uint8_t)(255u * v / (unsigned)maxval);
      else if (host == LT_FLOAT) ((float *)out)[at] = maxval == 255 ? (float)v : (float)(255.0 * v / maxval);
      else ((double *)out)[at] = maxval == 255 ? (double)v : 255.0 * v / maxval;
    }
  free(samples);
  return 0;
}

int lt_image_ppm_encode(const lt_tensor *src, const char *path) {
  const char *fn = "image.savePPM";
  int64_t c, h, w;
  unsigned char *pixels = im_interleave(src, &c, &h, &w, fn);
  if (!pixels) return -1;
  if (c != 1 && c != 3) {
    free(pixels);
    return lt_fail("%s: PPM/PGM images have 1 or 3 channels, got %lld", fn, (long long)c);
  }
  FILE *fp = fopen(path, "wb");
  if (!fp) {
    free(pixels);
    return lt_fail("%s: cannot open %s for writing: %s", fn, path, strerror(errno));
  }
  fprintf(fp, "P%c\n%lld %lld\n255\n", c == 3 ? '6' : '5', (long long)w, (long long)h);
  size_t n = (size_t)(c * h * w);
  int ok = fwrite(pixels, 1, n, fp) == n;
  ok = (fclose(fp) == 0) && ok;
  free(pixels);
  if (!ok) return lt_fail("%s: writing %s failed: %s", fn, path, strerror(errno));
  return 0;
}

int lt_image_codecs(void) {
  int have = 0;
#ifdef LT_HAVE_JPEG
  have |= 1;
#endif
#ifdef LT_HAVE_PNG
  have |= 2;
#endif
  return have;
}
