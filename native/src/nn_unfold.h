/* Convolutions as unfold + GEMM in column chunks: the shared engine of
 * nn_spatialconv.c (SpatialDilatedConvolution, SpatialFullConvolution) and
 * nn_tvconv.c (Volumetric[Dilated|Full]Convolution); a 2-D layer is a 3-D
 * one with a depth of 1.
 *
 * An "image" (C x iT x iH x iW) is unfolded against a grid of oT x oH x oW
 * kernel positions into a column matrix of K = C*kT*kH*kW rows and
 * L = oT*oH*oW columns: tap (kt, kh, kw) of channel c at position
 * (ot, oh, ow) reads pixel (ot*dT - pT + kt*lT, oh*dH - pH + kh*lH,
 * ow*dW - pW + kw*lW), 0 outside. Three operations cover all these layers,
 * per sample n, with A an M x K weight matrix and B_n an M x L matrix:
 *   unfold_gemm: out_n = A * cols(img_n) (+ bias per row of out_n)
 *   gemm_fold:   img_n = fold(A^T * B_n) (+ bias per channel), fold = unfold's adjoint
 *   unfold_acc:  gw   += scale * sum_n B_n * cols(img_n)^T
 *
 * Why chunks: the whole column matrix of a sample (K x L, 11 MB for a
 * 3x3x3 16-plane volume of 8x28x28) does not fit in cache, so unfolding it
 * and then streaming it through the GEMM costs two trips to memory. The
 * columns are instead built a few output rows at a time into a buffer of
 * about NN_UNFOLD_CHUNK elements that stays in L2 while its GEMM runs.
 * Where the whole run of rows of a frame is one span of the input (unit
 * strides, same width), a run is copied (or added back) in one go.
 * Threads: with at least as many samples as threads, the (sample, chunk)
 * items run in parallel with single-threaded GEMMs (no fork/join per GEMM,
 * unfolding in parallel too, no idle BLAS threads spinning between GEMMs),
 * handed out one by one so that a thread slowed by other work on the
 * machine takes fewer; the weight gradient is summed in a few fixed runs
 * with partial buffers, reduced in a fixed order. With fewer samples, each
 * GEMM uses the BLAS threads and the unfolding runs over the channels in
 * parallel. The weight gradient is accumulated transposed (K x M): OpenBLAS
 * runs cols * B^T faster than B * cols^T for these shapes.
 *
 * Included twice by its users: once before nn_generic.h (geometry and
 * planning) and once inside their generic part (the kernels, per real). */
#ifndef NN_GENERIC_PASS
#ifndef NN_UNFOLD_H
#define NN_UNFOLD_H

extern void lt_blas_set_threads(int n); /* blas.c */

/* Elements of one thread's column chunk (1 MB of float: in L2 next to the
 * GEMM's packed panels), but at least NN_UNFOLD_MIN_COLS columns, below
 * which the GEMMs lose more to packing their weight operand than the cache
 * saves. */
#define NN_UNFOLD_CHUNK ((int64_t)1 << 18)
#define NN_UNFOLD_MIN_COLS 256

/* A chunk size set by lt_nn_unfold_set_chunk (nn_tvconv.c), 0 for the default. */
extern int64_t nn_unfold_chunk_override;

typedef struct nn_unfold {
  int64_t C, iT, iH, iW; /* the image */
  int64_t oT, oH, oW;    /* the grid of kernel positions */
  int k[3], d[3], p[3], l[3]; /* T, H, W: kernel, stride, padding, dilation */
  int64_t K, L;
} nn_unfold;

/* How one call runs: bt sample threads (0: samples in turn, BLAS threads),
 * `rows` output rows (oW columns each) per chunk, and where the scratch
 * lies in elements: chunk buffers at 0 (chunk elements each), then the
 * `slots` partial weight gradients (K x M each) at `part`. */
typedef struct nn_unfold_plan {
  int bt, slots;
  int64_t rows, nch, chunk, part; /* nch: chunks per sample */
} nn_unfold_plan;

static inline void nn_unfold_set(nn_unfold *u, int64_t C, const int64_t in[3], const int64_t out[3], const int k[3],
                                 const int d[3], const int p[3], const int l[3]) {
  u->C = C;
  u->iT = in[0]; u->iH = in[1]; u->iW = in[2];
  u->oT = out[0]; u->oH = out[1]; u->oW = out[2];
  for (int i = 0; i < 3; i++) {
    u->k[i] = k[i]; u->d[i] = d[i]; u->p[i] = p[i]; u->l[i] = l[i];
  }
  u->K = C * k[0] * k[1] * k[2];
  u->L = out[0] * out[1] * out[2];
}

/* The positions [lo, hi) of a row of `on` whose input index o*d + off lies in [0, n). */
static inline void nn_unfold_range(int64_t n, int64_t on, int64_t off, int d, int64_t *lo, int64_t *hi) {
  *lo = off >= 0 ? 0 : (-off + d - 1) / d;
  *hi = n - 1 - off < 0 ? 0 : (n - 1 - off) / d + 1;
  if (*hi > on) *hi = on;
  if (*lo > on) *lo = on;
  if (*hi < *lo) *hi = *lo;
}

/* Whether consecutive output rows of one frame read consecutive input rows end to end (unit strides
 * in H and W, as wide as the input, and some column in range): then a run of rows is one copy. */
static inline int nn_unfold_contig(const nn_unfold *u, int64_t lo, int64_t hi) {
  return u->d[2] == 1 && u->d[1] == 1 && u->oW == u->iW && hi > lo;
}

/* The rows from r (reading input row ih) up to r1 that stay in r's frame and inside the input. */
static inline int64_t nn_unfold_run(const nn_unfold *u, int64_t r, int64_t r1, int64_t ih) {
  int64_t run = r1 - r, oh = r % u->oH;
  if (run > u->oH - oh) run = u->oH - oh;
  if (run > u->iH - ih) run = u->iH - ih;
  return run;
}

/* Plans a call over N samples and sizes buf: M x K partial gradients only when partials is set. */
static inline int nn_unfold_plan_for(nn_unfold_plan *pl, lt_tensor *buf, const nn_unfold *u, int64_t N, int64_t M,
                                     int partials, const char *fn) {
  int T = lt_get_num_threads();
  pl->bt = T > 1 && N >= T ? T : 0;
  int64_t chunk = nn_unfold_chunk_override ? nn_unfold_chunk_override : NN_UNFOLD_CHUNK;
  int64_t min_cols = nn_unfold_chunk_override ? 1 : NN_UNFOLD_MIN_COLS;
  int64_t R = u->oT * u->oH, budget = pl->bt ? chunk : chunk * T;
  pl->rows = budget / (u->K * u->oW);
  if (pl->rows * u->oW < min_cols) pl->rows = (min_cols + u->oW - 1) / u->oW;
  if (pl->rows > R) pl->rows = R;
  pl->nch = (R + pl->rows - 1) / pl->rows;
  /* A few runs per thread, for balance when the machine's other work slows one thread down. */
  pl->slots = pl->bt ? (int)(N * pl->nch < 4 * pl->bt ? N * pl->nch : 4 * pl->bt) : 1;
  pl->chunk = u->K * pl->rows * u->oW;
  pl->part = (pl->bt ? pl->bt : 1) * pl->chunk;
  int64_t total = pl->part + (partials ? pl->slots * M * u->K : 0);
  if (u->K > INT32_MAX || u->L > INT32_MAX || M > INT32_MAX)
    return lt_fail("%s: matrix dimensions exceed the 32-bit BLAS interface", fn);
  return nn_resize1(buf, total);
}

#endif
#else /* ---------------------------------------------- generic part (real) */

/* cols[row][(r - r0)*oW + ow] for the output rows r = ot*oH + oh in [r0, r1). */
static void NN_(unfold_rows)(const nn_unfold *u, const real *img, real *cols, int64_t r0, int64_t r1, int par) {
  const int64_t iT = u->iT, iH = u->iH, iW = u->iW, oH = u->oH, oW = u->oW, ld = (r1 - r0) * oW;
  const int kT = u->k[0], kH = u->k[1], kW = u->k[2], dW = u->d[2];
#pragma omp parallel for schedule(static) if (par && u->K * ld >= LT_OMP_THRESHOLD)
  for (int64_t c = 0; c < u->C; c++) {
    const real *plane = img + c * iT * iH * iW;
    for (int kt = 0; kt < kT; kt++)
      for (int kh = 0; kh < kH; kh++)
        for (int kw = 0; kw < kW; kw++) {
          real *row = cols + (((c * kT + kt) * kH + kh) * kW + kw) * ld;
          int64_t off = (int64_t)kw * u->l[2] - u->p[2], lo, hi;
          nn_unfold_range(iW, oW, off, dW, &lo, &hi);
          int contig = nn_unfold_contig(u, lo, hi);
          for (int64_t r = r0, run; r < r1; r += run, row += run * oW) {
            int64_t it = r / oH * u->d[0] - u->p[0] + (int64_t)kt * u->l[0];
            int64_t ih = r % oH * u->d[1] - u->p[1] + (int64_t)kh * u->l[1];
            run = 1;
            if (it < 0 || it >= iT || ih < 0 || ih >= iH) {
              memset(row, 0, sizeof(real) * oW);
              continue;
            }
            const real *src = plane + (it * iH + ih) * iW + off;
            if (contig) {
              /* One copy for the run, then the entries it took from the neighbouring rows are zeroed. */
              run = nn_unfold_run(u, r, r1, ih);
              memcpy(row + lo, src + lo, sizeof(real) * ((run - 1) * oW + hi - lo));
              for (int64_t j = 0; j < run; j++) {
                real *rj = row + j * oW;
                for (int64_t ow = 0; ow < lo; ow++) rj[ow] = 0;
                for (int64_t ow = hi; ow < oW; ow++) rj[ow] = 0;
              }
              continue;
            }
            for (int64_t ow = 0; ow < lo; ow++) row[ow] = 0;
            if (dW == 1) {
              memcpy(row + lo, src + lo, sizeof(real) * (hi - lo));
            } else {
              for (int64_t ow = lo; ow < hi; ow++) row[ow] = src[ow * dW];
            }
            for (int64_t ow = hi; ow < oW; ow++) row[ow] = 0;
          }
        }
  }
}

/* The adjoint of unfold_rows: adds every column entry to the pixel it came from (channels in parallel).
 * Clobbers cols: the entries of padding positions are zeroed where runs of rows are added in one go. */
static void NN_(fold_rows)(const nn_unfold *u, real *cols, real *img, int64_t r0, int64_t r1, int par) {
  const int64_t iT = u->iT, iH = u->iH, iW = u->iW, oH = u->oH, oW = u->oW, ld = (r1 - r0) * oW;
  const int kT = u->k[0], kH = u->k[1], kW = u->k[2], dW = u->d[2];
#pragma omp parallel for schedule(static) if (par && u->K * ld >= LT_OMP_THRESHOLD)
  for (int64_t c = 0; c < u->C; c++) {
    real *plane = img + c * iT * iH * iW;
    for (int kt = 0; kt < kT; kt++)
      for (int kh = 0; kh < kH; kh++)
        for (int kw = 0; kw < kW; kw++) {
          real *row = cols + (((c * kT + kt) * kH + kh) * kW + kw) * ld;
          int64_t off = (int64_t)kw * u->l[2] - u->p[2], lo, hi;
          nn_unfold_range(iW, oW, off, dW, &lo, &hi);
          int contig = nn_unfold_contig(u, lo, hi);
          for (int64_t r = r0, run; r < r1; r += run, row += run * oW) {
            int64_t it = r / oH * u->d[0] - u->p[0] + (int64_t)kt * u->l[0];
            int64_t ih = r % oH * u->d[1] - u->p[1] + (int64_t)kh * u->l[1];
            run = 1;
            if (it < 0 || it >= iT || ih < 0 || ih >= iH) continue;
            real *dst = plane + (it * iH + ih) * iW + off;
            if (contig) {
              /* Zero the entries that would land on the neighbouring rows, then add the run in one loop. */
              run = nn_unfold_run(u, r, r1, ih);
              for (int64_t j = 0; j < run; j++) {
                real *rj = row + j * oW;
                for (int64_t ow = 0; ow < lo; ow++) rj[ow] = 0;
                for (int64_t ow = hi; ow < oW; ow++) rj[ow] = 0;
              }
              const int64_t end = (run - 1) * oW + hi;
              for (int64_t e = lo; e < end; e++) dst[e] += row[e];
              continue;
            }
            if (dW == 1) {
              for (int64_t ow = lo; ow < hi; ow++) dst[ow] += row[ow];
            } else {
              for (int64_t ow = lo; ow < hi; ow++) dst[ow * dW] += row[ow];
            }
          }
        }
  }
}

/* Output rows [r0, r1) of one sample: out[:, r0*oW ..) = A * cols + b. */
static void NN_(unfold_gemm_rows)(const nn_unfold *u, const real *img, const real *A, int64_t M, const real *b,
                                  int64_t bs, real *out, real *cols, int64_t r0, int64_t r1, int par) {
  const int64_t n = (r1 - r0) * u->oW, L = u->L;
  real *o = out + r0 * u->oW;
  NN_(unfold_rows)(u, img, cols, r0, r1, par);
  if (b)
    for (int64_t m = 0; m < M; m++) {
      real v = b[m * bs], *orow = o + m * L;
      for (int64_t j = 0; j < n; j++) orow[j] = v;
    }
  NN_GEMM(0, 0, M, n, u->K, 1, A, u->K, cols, n, b ? 1 : 0, o, L);
}

static void NN_(gemm_fold_one)(const nn_unfold *u, const nn_unfold_plan *pl, const real *A, int64_t M, const real *B,
                               const real *b, int64_t bs, real *img, real *cols, int par) {
  const int64_t R = u->oT * u->oH, oW = u->oW, L = u->L, P = u->iT * u->iH * u->iW;
  memset(img, 0, sizeof(real) * u->C * P);
  for (int64_t r0 = 0; r0 < R; r0 += pl->rows) {
    int64_t r1 = r0 + pl->rows < R ? r0 + pl->rows : R, n = (r1 - r0) * oW;
    NN_GEMM(1, 0, u->K, n, M, 1, A, u->K, B + r0 * oW, L, 0, cols, n);
    NN_(fold_rows)(u, cols, img, r0, r1, par);
  }
  if (b)
    for (int64_t c = 0; c < u->C; c++) {
      real v = b[c * bs], *plane = img + c * P;
      for (int64_t j = 0; j < P; j++) plane[j] += v;
    }
}

/* Item i of a call over samples split into chunks: sample i / nch, output rows [r0, r1). */
static inline int64_t NN_(unfold_item)(const nn_unfold *u, const nn_unfold_plan *pl, int64_t i, int64_t *r0,
                                       int64_t *r1) {
  const int64_t R = u->oT * u->oH;
  *r0 = i % pl->nch * pl->rows;
  *r1 = *r0 + pl->rows < R ? *r0 + pl->rows : R;
  return i / pl->nch;
}

/* gwT (K x M) += scale * cols * B[:, r0*oW ..)^T for output rows [r0, r1) of one sample (transposed:
 * single-threaded OpenBLAS ran it 1.1-1.5x faster than B * cols^T on the benchmark's shapes). */
static void NN_(unfold_acc_rows)(const nn_unfold *u, const real *B, const real *img, int64_t M, real *gwT,
                                 real *cols, int64_t r0, int64_t r1, int par, double scale) {
  const int64_t n = (r1 - r0) * u->oW;
  NN_(unfold_rows)(u, img, cols, r0, r1, par);
  NN_GEMM(0, 1, u->K, M, n, (real)scale, cols, n, B + r0 * u->oW, u->L, 1, gwT, M);
}

/* gw (M x K) += the sum of the S transposed partials (K x M each), in slot order; a work-sharing
 * loop of the enclosing parallel region, over 32 x 32 tiles so that both sides stay in cache (and TLB). */
static void NN_(unfold_add_partials)(real *gw, const real *part, int S, int64_t M, int64_t K) {
  const int64_t TB = 32, wN = M * K, nk = (K + TB - 1) / TB, tiles = (M + TB - 1) / TB * nk;
#pragma omp for schedule(static)
  for (int64_t t = 0; t < tiles; t++) {
    int64_t m0 = t / nk * TB, k0 = t % nk * TB;
    int64_t m1 = m0 + TB < M ? m0 + TB : M, k1 = k0 + TB < K ? k0 + TB : K;
    for (int64_t m = m0; m < m1; m++)
      for (int64_t k = k0; k < k1; k++) {
        const real *q = part + k * M + m;
        real v = 0;
        for (int s = 0; s < S; s++) v += q[s * wN];
        gw[m * K + k] += v;
      }
  }
}

/* out_n (M x L per sample) = A * cols(img_n) + b, for the N samples. */
static void NN_(unfold_gemm)(const nn_unfold *u, const nn_unfold_plan *pl, int64_t N, const real *img, const real *A,
                             int64_t M, const real *b, int64_t bs, real *out, real *buf) {
  const int64_t imgN = u->C * u->iT * u->iH * u->iW, outN = M * u->L, I = N * pl->nch;
  if (!pl->bt) {
    for (int64_t i = 0; i < I; i++) {
      int64_t r0, r1, n = NN_(unfold_item)(u, pl, i, &r0, &r1);
      NN_(unfold_gemm_rows)(u, img + n * imgN, A, M, b, bs, out + n * outN, buf, r0, r1, 1);
    }
    return;
  }
  lt_blas_set_threads(1);
  /* Chunks are independent: handed out one by one, so a thread that the
   * machine's other work slows down takes fewer of them. */
#pragma omp parallel num_threads(pl->bt)
  {
    real *cols = buf + omp_get_thread_num() * pl->chunk;
#pragma omp for schedule(dynamic, 1)
    for (int64_t i = 0; i < I; i++) {
      int64_t r0, r1, n = NN_(unfold_item)(u, pl, i, &r0, &r1);
      NN_(unfold_gemm_rows)(u, img + n * imgN, A, M, b, bs, out + n * outN, cols, r0, r1, 0);
    }
  }
  lt_blas_set_threads(lt_get_num_threads());
}

/* img_n = fold(A^T * B_n) + b per channel, for the N samples (B_n is M x L). */
static void NN_(gemm_fold)(const nn_unfold *u, const nn_unfold_plan *pl, int64_t N, const real *A, int64_t M,
                           const real *B, const real *b, int64_t bs, real *img, real *buf) {
  const int64_t imgN = u->C * u->iT * u->iH * u->iW, BN = M * u->L;
  if (!pl->bt) {
    for (int64_t n = 0; n < N; n++) NN_(gemm_fold_one)(u, pl, A, M, B + n * BN, b, bs, img + n * imgN, buf, 1);
    return;
  }
  lt_blas_set_threads(1);
#pragma omp parallel num_threads(pl->bt)
  {
    real *cols = buf + omp_get_thread_num() * pl->chunk;
#pragma omp for schedule(dynamic, 1)
    for (int64_t n = 0; n < N; n++) NN_(gemm_fold_one)(u, pl, A, M, B + n * BN, b, bs, img + n * imgN, cols, 0);
  }
  lt_blas_set_threads(lt_get_num_threads());
}

/* gw (M x K, contiguous) += scale * sum_n B_n * cols(img_n)^T. The (sample,
 * chunk) items are split into `slots` fixed runs, handed out to the sample
 * threads one by one; each run is summed into its own (transposed) partial
 * buffer and the partials are added to gw afterwards in a fixed order, so the
 * result does not depend on which thread ran what. */
static void NN_(unfold_acc)(const nn_unfold *u, const nn_unfold_plan *pl, int64_t N, const real *B, const real *img,
                            int64_t M, real *gw, real *buf, double scale) {
  const int64_t imgN = u->C * u->iT * u->iH * u->iW, BN = M * u->L, wN = M * u->K, I = N * pl->nch;
  real *part = buf + pl->part;
  if (!pl->bt) {
    memset(part, 0, sizeof(real) * wN);
    for (int64_t i = 0; i < I; i++) {
      int64_t r0, r1, n = NN_(unfold_item)(u, pl, i, &r0, &r1);
      NN_(unfold_acc_rows)(u, B + n * BN, img + n * imgN, M, part, buf, r0, r1, 1, scale);
    }
#pragma omp parallel if (wN >= LT_OMP_THRESHOLD)
    NN_(unfold_add_partials)(gw, part, 1, M, u->K);
    return;
  }
  const int S = pl->slots;
  lt_blas_set_threads(1);
#pragma omp parallel num_threads(pl->bt)
  {
    real *cols = buf + omp_get_thread_num() * pl->chunk;
#pragma omp for schedule(dynamic, 1)
    for (int s = 0; s < S; s++) {
      real *dst = part + s * wN;
      memset(dst, 0, sizeof(real) * wN);
      for (int64_t i = I * s / S; i < I * (s + 1) / S; i++) {
        int64_t r0, r1, n = NN_(unfold_item)(u, pl, i, &r0, &r1);
        NN_(unfold_acc_rows)(u, B + n * BN, img + n * imgN, M, dst, cols, r0, r1, 0, scale);
      }
    }
    NN_(unfold_add_partials)(gw, part, S, M, u->K);
  }
  lt_blas_set_threads(lt_get_num_threads());
}

/* gb[c] += scale * sum over samples and positions of go[n][c] (go: N x C x P). */
static void NN_(unfold_bias_grad)(const real *go, int64_t N, int64_t C, int64_t P, real *gb, int64_t gbs,
                                  double scale) {
  if (!gb) return;
#pragma omp parallel for schedule(static) if (N * C * P >= LT_OMP_THRESHOLD)
  for (int64_t c = 0; c < C; c++) {
    accreal s = 0;
    for (int64_t n = 0; n < N; n++) {
      const real *r = go + (n * C + c) * P;
      NN_SUM_LANES(+ : s)
      for (int64_t j = 0; j < P; j++) s += r[j];
    }
    gb[c * gbs] += (real)(scale * s);
  }
}

/* out[n][c][:] += b[c * bs] (out: N x C x P); b may be NULL. */
static void NN_(plane_add_bias)(real *out, int64_t N, int64_t C, int64_t P, const real *b, int64_t bs) {
  if (!b) return;
#pragma omp parallel for schedule(static) if (N * C * P >= LT_OMP_THRESHOLD)
  for (int64_t nc = 0; nc < N * C; nc++) {
    real v = b[(nc % C) * bs], *o = out + nc * P;
    for (int64_t j = 0; j < P; j++) o[j] += v;
  }
}

#endif
