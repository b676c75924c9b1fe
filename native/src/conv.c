/* Torch7's conv2 / xcorr2 / conv3 / xcorr3: direct 2-D and 3-D convolution
 * and cross-correlation of tensors, 'V' (valid) or 'F' (full).
 *
 * Everything is one valid cross-correlation kernel on contiguous data:
 * a convolution correlates with the kernel flipped in every dimension (a
 * flipped copy, so conv(x, k) and xcorr(x, flip(k)) run the same arithmetic
 * and agree bit for bit, as Torch7's tests demand), and 'F' correlates a
 * zero-padded copy of the input. Each output row accumulates, for every
 * kernel row, one scaled copy of an input row per kernel column: long
 * contiguous multiply-adds that the compiler vectorizes. Output rows are
 * independent, so they are spread over the OpenMP threads; the summation
 * order of each element is fixed (input planes, then kernel depth, rows,
 * columns), so results do not depend on the thread count. */
#include "lt_internal.h"

/* Multiply-adds below which the convolution stays on one thread. */
#define CONV_PARALLEL_WORK 200000

enum { FORM_ONE, FORM_PLANES, FORM_SUM };

typedef struct conv_shape {
  int form;
  int64_t planes_in, planes_out; /* P input planes, O output planes */
  int64_t in[3], k[3], out[3];   /* depth, rows, cols (depth 1 for 2-D) */
} conv_shape;

static int shape_of(conv_shape *s, const char *fn, const lt_tensor *input, const lt_tensor *kernel, int nd,
                    int full) {
  char bi[128], bk[128];
  int di = input->ndim, dk = kernel->ndim;
  if (di == nd && dk == nd) s->form = FORM_ONE;
  else if (di == nd + 1 && dk == nd + 1) s->form = FORM_PLANES;
  else if (di == nd + 1 && dk == nd + 2) s->form = FORM_SUM;
  else
    return lt_fail("%s: expected a %dD input with a %dD kernel, %dD with %dD (plane by plane) or %dD with %dD "
                   "(output planes x input planes kernels), got input %s and kernel %s",
                   fn, nd, nd, nd + 1, nd + 1, nd + 1, nd + 2, lt_shape_str(input, bi, sizeof bi),
                   lt_shape_str(kernel, bk, sizeof bk));
  int ioff = di - nd, koff = dk - nd;
  s->planes_in = s->form == FORM_ONE ? 1 : input->size[0];
  s->planes_out = s->form == FORM_ONE ? 1 : kernel->size[0];
  if (s->form == FORM_PLANES && kernel->size[0] != input->size[0])
    return lt_fail("%s: the input has %lld planes but the kernel %lld (plane by plane needs as many)", fn,
                   (long long)input->size[0], (long long)kernel->size[0]);
  if (s->form == FORM_SUM && kernel->size[1] != input->size[0])
    return lt_fail("%s: the kernel %s expects %lld input planes, the input %s has %lld", fn,
                   lt_shape_str(kernel, bk, sizeof bk), (long long)kernel->size[1], lt_shape_str(input, bi, sizeof bi),
                   (long long)input->size[0]);
  for (int d = 0; d < 3; d++) {
    int sd = d - (3 - nd); /* spatial dimension index, < 0 for the depth of a 2-D convolution */
    s->in[d] = sd < 0 ? 1 : input->size[ioff + sd];
    s->k[d] = sd < 0 ? 1 : kernel->size[koff + sd];
    if (!full && s->in[d] < s->k[d])
      return lt_fail("%s: in valid mode ('V') the input %s must be at least as large as the kernel %s; use 'F' "
                     "for a full convolution", fn, lt_shape_str(input, bi, sizeof bi),
                     lt_shape_str(kernel, bk, sizeof bk));
    s->out[d] = full ? s->in[d] + s->k[d] - 1 : s->in[d] - s->k[d] + 1;
  }
  return 0;
}

/* Contiguous copy of the input planes (P x D x H x W, D = 1 for 2-D), each
 * placed at offset pad inside a zero block grown by 2 pad (pad = 0: a plain
 * contiguous copy). */
static int padded_input(lt_tensor *dst, const lt_tensor *input, const conv_shape *s, int nd, const int64_t *pad) {
  int64_t size[4] = {s->planes_in, s->in[0] + 2 * pad[0], s->in[1] + 2 * pad[1], s->in[2] + 2 * pad[2]};
  lt_tensor_init(dst, input->type);
  if (lt_tensor_resize(dst, 4, size) != 0) return -1;
  if ((pad[0] || pad[1] || pad[2]) && lt_tensor_fill(dst, 0) != 0) return -1;
  /* a view of dst's interior with the input's shape */
  lt_tensor inner = *dst;
  inner.offset += pad[0] * dst->stride[1] + pad[1] * dst->stride[2] + pad[2];
  inner.ndim = input->ndim;
  int ioff = input->ndim - nd; /* 1 when the input has a plane dimension */
  if (ioff) inner.stride[0] = dst->stride[0];
  for (int j = 0; j < nd; j++) inner.stride[ioff + j] = dst->stride[4 - nd + j];
  for (int j = 0; j < input->ndim; j++) inner.size[j] = input->size[j];
  return lt_tensor_copy(&inner, input);
}

/* Contiguous kernels, flipped in every spatial dimension for a convolution. */
static int kernel_copy(lt_tensor *dst, const lt_tensor *kernel, const conv_shape *s, int flip) {
  int64_t kvol = s->k[0] * s->k[1] * s->k[2], count = lt_tensor_nelement(kernel) / kvol;
  int64_t size[1] = {count * kvol};
  lt_tensor_init(dst, kernel->type);
  if (lt_tensor_resize(dst, 1, size) != 0) return -1;
  if (lt_tensor_copy(dst, kernel) != 0) return -1;
  if (!flip) return 0;
  LT_DISPATCH(dst->type, {
    scalar_t *p = (scalar_t *)lt_tensor_data(dst);
    for (int64_t c = 0; c < count; c++) /* reversing a kernel's elements flips every dimension */
      for (int64_t i = 0, j = kvol - 1; i < j; i++, j--) {
        scalar_t t = p[c * kvol + i];
        p[c * kvol + i] = p[c * kvol + j];
        p[c * kvol + j] = t;
      }
  });
  return 0;
}

/* out (O x oD x oH x oW, contiguous) = valid cross-correlation of the padded
 * input planes (P x iD x iH x iW) with the kernels. */
static int correlate(lt_tensor *out, const lt_tensor *in, const lt_tensor *ker, const conv_shape *s) {
  const int64_t oD = s->out[0], oH = s->out[1], oW = s->out[2];
  const int64_t iD = in->size[1], iH = in->size[2], iW = in->size[3];
  const int64_t kD = s->k[0], kH = s->k[1], kW = s->k[2], kvol = kD * kH * kW;
  const int64_t P = s->planes_in, O = s->planes_out, rows = O * oD * oH;
  const int64_t terms = s->form == FORM_SUM ? P : 1;
  const int par = (double)rows * terms * kvol * oW >= CONV_PARALLEL_WORK;
  if (lt_tensor_fill(out, 0) != 0) return -1;
  LT_DISPATCH(out->type, {
    scalar_t *const O_ = (scalar_t *)lt_tensor_data(out);
    const scalar_t *const I_ = (const scalar_t *)lt_tensor_data(in), *const K_ = (const scalar_t *)lt_tensor_data(ker);
    _Pragma("omp parallel for schedule(static) if(par)")
    for (int64_t row = 0; row < rows; row++) {
      int64_t o = row / (oD * oH), od = row / oH % oD, oh = row % oH;
      scalar_t *restrict orow = O_ + row * oW;
      for (int64_t t = 0; t < terms; t++) {
        int64_t p = s->form == FORM_ONE ? 0 : s->form == FORM_PLANES ? o : t;
        const scalar_t *kp = K_ + (s->form == FORM_SUM ? o * P + t : o) * kvol;
        const scalar_t *ip = I_ + p * iD * iH * iW;
        for (int64_t kd = 0; kd < kD; kd++)
          for (int64_t kh = 0; kh < kH; kh++) {
            const scalar_t *irow = ip + ((od + kd) * iH + oh + kh) * iW;
            const scalar_t *krow = kp + (kd * kH + kh) * kW;
            for (int64_t kw = 0; kw < kW; kw++) {
              const scalar_t w = krow[kw];
              const scalar_t *restrict src = irow + kw;
              for (int64_t x = 0; x < oW; x++) orow[x] += w * src[x];
            }
          }
      }
    }
  });
  return 0;
}

int lt_conv(lt_tensor *r, const lt_tensor *input, const lt_tensor *kernel, int ndim, const char *mode,
            int correlation) {
  const char *names[2][2] = {{"conv2", "xcorr2"}, {"conv3", "xcorr3"}};
  if (ndim != 2 && ndim != 3) return lt_fail("lt_conv: 2 or 3 spatial dimensions, got %d", ndim);
  const char *fn = names[ndim == 3][correlation != 0];
  if (!mode || (strcmp(mode, "V") != 0 && strcmp(mode, "F") != 0))
    return lt_fail("%s: the mode should be 'V' (valid) or 'F' (full), got '%s'", fn, mode ? mode : "(null)");
  if (input->type != kernel->type || r->type != input->type)
    return lt_fail("%s: expected all tensors to be %sTensor, got a %sTensor", fn, lt_type_name(input->type),
                   lt_type_name(kernel->type != input->type ? kernel->type : r->type));
  int full = mode[0] == 'F';
  conv_shape s;
  if (shape_of(&s, fn, input, kernel, ndim, full) != 0) return -1;

  int64_t pad[3] = {0, 0, 0};
  if (full)
    for (int d = 0; d < 3; d++) pad[d] = s.k[d] - 1;
  lt_tensor in, ker, tmp;
  lt_tensor_init(&tmp, r->type);
  int rc = padded_input(&in, input, &s, ndim, pad);
  if (rc == 0) rc = kernel_copy(&ker, kernel, &s, !correlation);
  else lt_tensor_init(&ker, kernel->type);

  /* the result: input-shaped planes (no plane dimension for one map) */
  int64_t size[4], nsize = 0;
  if (s.form != FORM_ONE) size[nsize++] = s.planes_out;
  for (int d = 3 - ndim; d < 3; d++) size[nsize++] = s.out[d];
  int64_t full_size[4] = {s.planes_out, s.out[0], s.out[1], s.out[2]};
  /* r may view the input or kernel (both copied by now) and need not be contiguous */
  if (rc == 0) rc = lt_tensor_resize(r, (int)nsize, size);
  if (rc == 0) {
    int direct = lt_tensor_is_contiguous(r);
    lt_tensor out = *r;
    if (direct) {
      out.ndim = 4;
      for (int d = 3; d >= 0; d--) {
        out.size[d] = full_size[d];
        out.stride[d] = d == 3 ? 1 : out.stride[d + 1] * out.size[d + 1];
      }
    } else {
      rc = lt_tensor_resize(&tmp, 4, full_size);
      out = tmp;
    }
    if (rc == 0) rc = correlate(&out, &in, &ker, &s);
    if (rc == 0 && !direct) rc = lt_tensor_copy(r, &tmp);
  }
  lt_tensor_clear(&in);
  lt_tensor_clear(&ker);
  lt_tensor_clear(&tmp);
  return rc;
}
