/* data: JPEGs with restart markers, and decoding only the part of one that a sample reads.
 *
 * Entropy (Huffman) decoding is ~70-80 % of a libjpeg-turbo decode of these photos, and it cannot skip:
 * jpeg_crop_scanline and jpeg_skip_scanlines still Huffman-decode every MCU before the last row wanted.
 * A restart marker every R MCUs, with R dividing an MCU row, cuts the scan into segments that each start
 * from zero DC predictions; the MCU rows and segments covering a box are then a JPEG of their own (the
 * same tables, the SOF's size changed, the markers renumbered) whose pixels inside equal the whole
 * image's, given a margin for the chroma upsampling at its cut edges (the caller's). pack adds the
 * markers losslessly (the same DCT coefficients, Huffman tables optimized), so the pixels are the
 * original file's. */
#include "data_internal.h"

#define RST_MAX_MCUS 4   /* restart interval: the largest divisor of an MCU row's width up to this */

typedef struct rst_layout {
  int64_t width, height, mcu_w, mcu_h, per_row, rows, interval;
  int64_t sof, scan;   /* offsets: the SOF segment's marker, the first byte of entropy-coded data */
} rst_layout;

static int64_t rst_be16(const uint8_t *p) { return (int64_t)p[0] << 8 | p[1]; }

/* The header of a baseline (or extended) sequential Huffman JPEG with one scan of all its components.
 * 0: found (interval 0 when there are no restart markers); 1: another kind of JPEG, or not one. */
static int rst_parse(const uint8_t *d, int64_t len, rst_layout *L) {
  memset(L, 0, sizeof *L);
  L->sof = -1;
  if (len < 4 || d[0] != 0xFF || d[1] != 0xD8) return 1;
  int64_t p = 2, ncomp = 0, hmax = 0, vmax = 0;
  while (p + 4 <= len) {
    if (d[p] != 0xFF) return 1;
    int m = d[p + 1];
    if (m == 0xFF) {   /* fill byte */
      p++;
      continue;
    }
    int64_t n = rst_be16(d + p + 2);
    if (n < 2 || p + 2 + n > len) return 1;
    if (m == 0xC0 || m == 0xC1) {
      if (n < 8 || d[p + 4] != 8) return 1;
      L->sof = p;
      L->height = rst_be16(d + p + 5);
      L->width = rst_be16(d + p + 7);
      ncomp = d[p + 9];
      if (n < 8 + 3 * ncomp || ncomp < 1) return 1;
      for (int64_t c = 0; c < ncomp; c++) {
        int64_t h = d[p + 11 + 3 * c] >> 4, v = d[p + 11 + 3 * c] & 15;
        if (h < 1 || v < 1) return 1;
        hmax = h > hmax ? h : hmax;
        vmax = v > vmax ? v : vmax;
      }
    } else if (m >= 0xC2 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
      return 1;   /* progressive, lossless or arithmetic-coded */
    } else if (m == 0xDD) {
      if (n < 4) return 1;
      L->interval = rst_be16(d + p + 4);
    } else if (m == 0xDA) {
      if (L->sof < 0 || d[p + 4] != ncomp || L->width < 1 || L->height < 1) return 1;
      L->scan = p + 2 + n;
      L->mcu_w = 8 * hmax;
      L->mcu_h = 8 * vmax;
      L->per_row = (L->width + L->mcu_w - 1) / L->mcu_w;
      L->rows = (L->height + L->mcu_h - 1) / L->mcu_h;
      return 0;
    } else if (m == 0xD9 || (m >= 0xD0 && m <= 0xD8)) {
      return 1;
    }
    p += 2 + n;
  }
  return 1;
}

int lt_data_jpeg_window(const uint8_t *d, int64_t len, int64_t x0, int64_t y0, int64_t x1, int64_t y1,
                        uint8_t *(*room)(size_t), const uint8_t **sub, int64_t *sublen, int64_t *ox, int64_t *oy) {
  rst_layout L;
  if (rst_parse(d, len, &L) || L.interval < 1 || L.per_row % L.interval) return 1;
  x1 = x1 < L.width ? x1 : L.width;   /* the margins stop at the image's edges */
  y1 = y1 < L.height ? y1 : L.height;
  if (x0 < 0 || y0 < 0 || x0 >= x1 || y0 >= y1) return 1;
  int64_t seg_w = L.interval * L.mcu_w, spr = L.per_row / L.interval;
  int64_t r0 = y0 / L.mcu_h, r1 = (y1 - 1) / L.mcu_h + 1, s0 = x0 / seg_w, s1 = (x1 - 1) / seg_w + 1;
  /* libjpeg upsamples chroma planes of 2 samples or fewer without interpolation: a window that ends in the
   * image's last, partial segment takes one more segment on its left, so its chroma is as wide as that */
  if (s0 > 0 && s1 == spr && L.width - s0 * seg_w < 2 * L.mcu_w) s0--;
  if (r0 == 0 && r1 == L.rows && s0 == 0 && s1 == spr) return 1;   /* all of it: decode the data itself */
  int64_t last = (r1 - 1) * spr + s1 - 1, total = L.rows * spr;
  uint8_t *out = room((size_t)(L.scan + (len - L.scan) + 2 * (last + 1) + 2));
  if (!out) return 1;
  memcpy(out, d, (size_t)L.scan);
  int64_t w = (s1 == spr ? L.width : s1 * seg_w) - s0 * seg_w;
  int64_t h = (r1 == L.rows ? L.height : r1 * L.mcu_h) - r0 * L.mcu_h;
  out[L.sof + 5] = (uint8_t)(h >> 8), out[L.sof + 6] = (uint8_t)h;
  out[L.sof + 7] = (uint8_t)(w >> 8), out[L.sof + 8] = (uint8_t)w;
  int64_t o = L.scan, pos = L.scan, q = L.scan, kept = 0;
  for (int64_t k = 0; k <= last;) {
    const uint8_t *ff = memchr(d + q, 0xFF, (size_t)(len - q));
    if (!ff || ff + 1 >= d + len) return 1;   /* truncated */
    q = ff - d;
    int b = d[q + 1];
    if (b == 0x00) {   /* a stuffed 0xFF data byte */
      q += 2;
      continue;
    }
    if (b == 0xFF) {   /* fill before a marker */
      q += 1;
      continue;
    }
    int is_rst = b >= 0xD0 && b <= 0xD7;
    if (!(is_rst && b == 0xD0 + k % 8 && k < total - 1) && !(b == 0xD9 && k == total - 1)) return 1;
    int64_t r = k / spr, s = k % spr;
    if (r >= r0 && s >= s0 && s < s1) {
      if (kept) {
        out[o++] = 0xFF;
        out[o++] = (uint8_t)(0xD0 + (kept - 1) % 8);
      }
      memcpy(out + o, d + pos, (size_t)(q - pos));
      o += q - pos;
      kept++;
    }
    q += 2;
    pos = q;
    k++;
  }
  out[o++] = 0xFF;
  out[o++] = 0xD9;
  *sub = out;
  *sublen = o;
  *ox = s0 * seg_w;
  *oy = r0 * L.mcu_h;
  return 0;
}

#ifdef LT_HAVE_JPEG
int lt_data_jpeg_add_restarts(const uint8_t *data, int64_t len, uint8_t **out, int64_t *out_len) {
  rst_layout L;
  if (!out || !out_len) return lt_fail("data: no place for the transcoded JPEG");
  *out = NULL;
  *out_len = 0;
  if (!data || rst_parse(data, len, &L) || L.interval > 0) return 1;
  int64_t interval = 1;
  for (int64_t r = 2; r <= RST_MAX_MCUS; r++)
    if (L.per_row % r == 0) interval = r;
  struct jpeg_decompress_struct src;
  struct jpeg_compress_struct dst;
  dp_err e1, e2;   /* corrupt or unusual data: stored as it was */
  unsigned char *buf = NULL;
  unsigned long size = 0;
  src.err = jpeg_std_error(&e1.mgr);
  e1.mgr.error_exit = dp_error_exit;
  e1.mgr.emit_message = dp_emit;
  e1.mgr.output_message = dp_quiet;
  dst.err = jpeg_std_error(&e2.mgr);
  e2.mgr.error_exit = dp_error_exit;
  e2.mgr.output_message = dp_quiet;
  jpeg_create_decompress(&src);
  jpeg_create_compress(&dst);
  if (setjmp(e1.jump) || setjmp(e2.jump)) {
    jpeg_destroy_compress(&dst);
    jpeg_destroy_decompress(&src);
    free(buf);
    return 1;
  }
  jpeg_mem_src(&src, (unsigned char *)data, (unsigned long)len);
  jpeg_read_header(&src, TRUE);
  jvirt_barray_ptr *coefs = jpeg_read_coefficients(&src);
  jpeg_mem_dest(&dst, &buf, &size);
  jpeg_copy_critical_parameters(&src, &dst);
  dst.optimize_coding = TRUE;
  dst.restart_interval = (unsigned int)interval;
  jpeg_write_coefficients(&dst, coefs);
  jpeg_finish_compress(&dst);
  jpeg_finish_decompress(&src);
  jpeg_destroy_compress(&dst);
  jpeg_destroy_decompress(&src);
  *out = buf;
  *out_len = (int64_t)size;
  return 0;
}
#else
int lt_data_jpeg_add_restarts(const uint8_t *data, int64_t len, uint8_t **out, int64_t *out_len) {
  (void)data, (void)len, (void)out, (void)out_len;
  return 1;
}
#endif

void lt_data_free(void *p) { free(p); }
