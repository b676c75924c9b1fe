/* What the restart markers of `luatorch pack --restart-markers` cost libjpeg-turbo's decode of a crop window
 * (docs/results/data.md, 2026-12-05): libjpeg-turbo takes its slow Huffman path whenever a restart interval is
 * set. For each JPEG given: our lossless restart transcode (lt_data_jpeg_add_restarts), a RandomSizedCrop-like
 * box (area 8-100 %, aspect 3/4-4/3, seeded), its window as the C pipeline cuts it (lt_data_jpeg_window, with the
 * pipeline's 2 x 8 margin); then the same window transcoded again without markers (the same coefficients, so the
 * same pixels). Both sets are decoded whole to RGB, interleaved, 5 rounds; prints ms per window.
 *
 *   gcc -O2 docs/results/experiments/restart_window_decode.c -o /tmp/rwd -ljpeg -ldl -lm
 *   LD_PRELOAD=$(python3 -c "import sysconfig as s; print(s.get_config_var('LIBDIR') + '/' + s.get_config_var('LDLIBRARY'))") \
 *     /tmp/rwd pytorch_bridge/_native.abi3.so $(find /tmp/k/bd/src/train -name '*.JPEG' | sort | head -400)
 * (the preload gives the extension module the Python symbols it links against)
 */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jpeglib.h>

typedef int (*window_fn)(const uint8_t *, int64_t, int64_t, int64_t, int64_t, int64_t, uint8_t *(*)(size_t),
                         const uint8_t **, int64_t *, int64_t *, int64_t *);
typedef int (*restarts_fn)(const uint8_t *, int64_t, uint8_t **, int64_t *);

static uint8_t *room_buf;
static size_t room_cap;
static uint8_t *room(size_t n) {
  if (n > room_cap) room_buf = realloc(room_buf, room_cap = n);
  return room_buf;
}

/* the same coefficients, rewritten with optimized Huffman tables and no restart markers */
static uint8_t *without_markers(const uint8_t *d, unsigned long len, unsigned long *out_len) {
  struct jpeg_decompress_struct s;
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr e1, e2;
  s.err = jpeg_std_error(&e1);
  c.err = jpeg_std_error(&e2);
  jpeg_create_decompress(&s);
  jpeg_create_compress(&c);
  jpeg_mem_src(&s, d, len);
  jpeg_read_header(&s, TRUE);
  jvirt_barray_ptr *coefs = jpeg_read_coefficients(&s);
  unsigned char *buf = NULL;
  jpeg_mem_dest(&c, &buf, out_len);
  jpeg_copy_critical_parameters(&s, &c);
  c.optimize_coding = TRUE;
  c.restart_interval = 0;
  jpeg_write_coefficients(&c, coefs);
  jpeg_finish_compress(&c);
  jpeg_finish_decompress(&s);
  jpeg_destroy_compress(&c);
  jpeg_destroy_decompress(&s);
  return buf;
}

static void decode(const uint8_t *d, unsigned long len, int *w, int *h) {
  static uint8_t rows[16 * 3 * 8192];
  struct jpeg_decompress_struct s;
  struct jpeg_error_mgr e;
  s.err = jpeg_std_error(&e);
  jpeg_create_decompress(&s);
  jpeg_mem_src(&s, d, len);
  jpeg_read_header(&s, TRUE);
  s.out_color_space = JCS_RGB;
  jpeg_start_decompress(&s);
  JSAMPROW r[16];
  for (int i = 0; i < 16; i++) r[i] = rows + (size_t)i * s.output_width * 3;
  while (s.output_scanline < s.output_height) jpeg_read_scanlines(&s, r, 16);
  if (w) *w = (int)s.output_width, *h = (int)s.output_height;
  jpeg_finish_decompress(&s);
  jpeg_destroy_decompress(&s);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s path/to/_native.abi3.so image.jpg...\n", argv[0]);
    return 2;
  }
  void *lib = dlopen(argv[1], RTLD_NOW);
  window_fn window = lib ? (window_fn)dlsym(lib, "lt_data_jpeg_window") : NULL;
  restarts_fn restarts = lib ? (restarts_fn)dlsym(lib, "lt_data_jpeg_add_restarts") : NULL;
  if (!window || !restarts) {
    fprintf(stderr, "%s: no lt_data_jpeg_window/lt_data_jpeg_add_restarts (%s)\n", argv[1], dlerror());
    return 1;
  }
  const int n = argc - 2;
  uint8_t **with = calloc(n, sizeof *with), **plain = calloc(n, sizeof *plain);
  unsigned long *with_len = calloc(n, sizeof *with_len), *plain_len = calloc(n, sizeof *plain_len);
  double covered = 0;
  srand(1);
  for (int i = 0; i < n; i++) {
    FILE *f = fopen(argv[i + 2], "rb");
    if (!f) return perror(argv[i + 2]), 1;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *d = malloc(len);
    if (fread(d, 1, len, f) != (size_t)len) return 1;
    fclose(f);
    uint8_t *rst;
    int64_t rst_len;
    if (restarts(d, len, &rst, &rst_len)) return fprintf(stderr, "%s: not transcoded\n", argv[i + 2]), 1;
    int W, H;
    decode(rst, rst_len, &W, &H);
    double area = W * H * (0.08 + 0.92 * rand() / (double)RAND_MAX);
    double aspect = 0.75 + (4.0 / 3 - 0.75) * rand() / (double)RAND_MAX;
    int w = (int)sqrt(area * aspect), h = (int)sqrt(area / aspect);
    w = w > W ? W : w, h = h > H ? H : h;
    int x = rand() % (W - w + 1), y = rand() % (H - h + 1);
    const uint8_t *sub;
    int64_t sub_len, ox, oy;
    if (window(rst, rst_len, x, y, x + w + 2, y + h + 8, room, &sub, &sub_len, &ox, &oy)) sub = rst, sub_len = rst_len;
    with[i] = malloc(sub_len);
    memcpy(with[i], sub, sub_len);
    with_len[i] = sub_len;
    int ww, wh;
    decode(with[i], with_len[i], &ww, &wh);
    covered += (double)ww * wh / ((double)W * H);
    plain[i] = without_markers(with[i], with_len[i], &plain_len[i]);
  }
  printf("%d windows, %.2f of their images' pixels on average\n", n, covered / n);
  for (int round = 0; round < 5; round++) {
    double t0 = now();
    for (int i = 0; i < n; i++) decode(with[i], with_len[i], NULL, NULL);
    double t1 = now();
    for (int i = 0; i < n; i++) decode(plain[i], plain_len[i], NULL, NULL);
    double t2 = now();
    printf("round %d: with restart markers %.3f ms, without %.3f ms, ratio %.3f\n", round, (t1 - t0) / n * 1e3,
           (t2 - t1) / n * 1e3, (t2 - t1) / (t1 - t0));
  }
  return 0;
}
