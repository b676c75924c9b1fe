/* image: Torch7's image package — codecs (JPEG through libjpeg-turbo, PNG through libpng, PPM/PGM of
 * our own) and the geometric and colour kernels behind lua/image.
 *
 * Images are C x H x W (or H x W) tensors of bytes (0..255), floats or doubles. Kernels writing a byte
 * image round to nearest and clamp to 0..255, as Torch7's image did. Every function returns 0, or -1
 * with lt_errmsg() set; a corrupt file is an error naming the file, never an exit or a crash. */

/* ---- codecs ----
 * Decoders: exactly one of `path` (a file) or `blob` (a 1-D contiguous ByteTensor holding the encoded
 * bytes) is given; `what` names the source in messages. dst (byte, float or double) is resized to
 * C x H x W and gets the raw sample values (0..255, or 0..65535 for a 16-bit PNG into float/double;
 * a byte tensor keeps a 16-bit sample's high byte). *bit_depth (PNG) is 8 or 16.
 * Encoders: src (byte, float or double) holds 0..255 values (the Lua side scales and clamps); a
 * value is truncated to its byte. path NULL: the encoded bytes go to `out`, a ByteTensor resized to
 * fit. */
int lt_image_jpeg_decode(lt_tensor *dst, const char *path, const lt_tensor *blob, const char *what);
int lt_image_jpeg_encode(const lt_tensor *src, const char *path, lt_tensor *out, int quality);
int lt_image_png_decode(lt_tensor *dst, const char *path, const lt_tensor *blob, const char *what,
                        int *bit_depth);
int lt_image_png_encode(const lt_tensor *src, const char *path, lt_tensor *out);
int lt_image_ppm_decode(lt_tensor *dst, const char *path);
int lt_image_ppm_encode(const lt_tensor *src, const char *path);
/* Which codecs this build has: 1 JPEG, 2 PNG (PPM/PGM always). */
int lt_image_codecs(void);
/* Channels, height, width from the header, into chw[0..2]. */
int lt_image_jpeg_size(const char *path, int64_t *chw);
int lt_image_png_size(const char *path, int64_t *chw);
int lt_image_ppm_size(const char *path, int64_t *chw);

/* ---- geometry ----
 * src and dst are both H x W or both C x H x W with the same C; dst is sized by the caller. */
enum { LT_IMAGE_SIMPLE = 0, LT_IMAGE_BILINEAR = 1, LT_IMAGE_BICUBIC = 2, LT_IMAGE_LANCZOS = 3 };
int lt_image_scale(lt_tensor *dst, const lt_tensor *src, int mode);          /* simple/bilinear/bicubic */
int lt_image_rotate(lt_tensor *dst, const lt_tensor *src, double theta, int mode); /* simple/bilinear; not in place */
/* Polar (logpolar = 1: log-polar) resampling: dst rows are angles, columns radii; full = 1 reaches the
 * corners, 0 the inscribed circle. */
int lt_image_polar(lt_tensor *dst, const lt_tensor *src, int mode, int full, int logpolar);
int lt_image_crop(lt_tensor *dst, const lt_tensor *src, int64_t x, int64_t y);  /* 0-based top-left corner */
int lt_image_translate(lt_tensor *dst, const lt_tensor *src, int64_t dx, int64_t dy);
/* dst(c, y, x) = src sampled at flow (2 x H' x W': y then x; added to (y, x) when offset is 1).
 * clamp_mode 0: samples off the image clamp to its border; 1: they give pad. flow may be any type. */
int lt_image_warp(lt_tensor *dst, const lt_tensor *src, const lt_tensor *flow, int mode, int offset,
                  int clamp_mode, double pad);
/* Mirror along dimension dim (0-based) of equal-sized dst and src; dst == src (the same memory) flips
 * in place. */
int lt_image_flip(lt_tensor *dst, const lt_tensor *src, int dim);

/* ---- pixels and colour ---- */
int lt_image_saturate(lt_tensor *t);   /* clamp to [0, 1] in place (no-op on bytes) */
enum {
  LT_IMAGE_RGB2HSL = 0, LT_IMAGE_HSL2RGB = 1, LT_IMAGE_RGB2HSV = 2, LT_IMAGE_HSV2RGB = 3,
  LT_IMAGE_RGB2LAB = 4, LT_IMAGE_LAB2RGB = 5
};
/* 3 x H x W -> 3 x H x W (same type; bytes are read and written as 0..255 = [0, 1]; Lab refuses bytes). */
int lt_image_color(lt_tensor *dst, const lt_tensor *src, int conversion);
int lt_image_rgb2y(lt_tensor *dst, const lt_tensor *src);   /* 3 x H x W -> H x W luma */
/* A 2-D Gaussian into dst (H x W): amplitude * exp(-((u - mu)^2 / su^2 + (v - mv)^2 / sv^2) / 2) on the
 * 1-based grid, mu = mean_u * W + 0.5, su = sigma_u * W (likewise v with H); normalize: sum to 1. */
int lt_image_gaussian(lt_tensor *dst, double amplitude, int normalize, double sigma_u, double sigma_v,
                      double mean_u, double mean_v);
/* dst (K x H x W, resized) gets colormap row index(y, x) (0-based) per pixel; colormap is N x K. */
int lt_image_colorize(lt_tensor *dst, const lt_tensor *index, const lt_tensor *colormap);
/* Rectangle outline (1-based corners as Lua gives them, lineWidth pixels) in colour r, g, b (0..255) on a 3 x H x W image. */
int lt_image_draw_rect(lt_tensor *img, int64_t x1, int64_t y1, int64_t x2, int64_t y2, int line_width,
                       int r, int g, int b);
