/* Per-type sorting kernels, included by sort.c once per element type with
 * SORT_T (the C type), SORT_S (a name suffix) and SORT_FLOAT (1 for float
 * types: NaN handling). The order is total: (value, original index), NaN
 * above every number, so merge sort, selection and sorted top-k all agree. */
#define SORT_CAT_(a, b) a##b
#define SORT_CAT(a, b) SORT_CAT_(a, b)
#define F(name) SORT_CAT(name, SORT_S)
#if SORT_FLOAT
#define SORT_ISNAN(x) ((x) != (x))
#else
#define SORT_ISNAN(x) 0
#endif

/* Does (av, ai) come before (bv, bi)? */
static inline int F(before_)(SORT_T av, int64_t ai, SORT_T bv, int64_t bi, int desc) {
  int an = SORT_ISNAN(av), bn = SORT_ISNAN(bv);
  if (an | bn) {
    if (an & bn) return ai < bi;
    return desc ? an : bn;
  }
  if (av != bv) return desc ? av > bv : av < bv;
  return ai < bi;
}

static void F(insertion_)(SORT_T *v, int64_t *ix, int64_t n, int desc) {
  for (int64_t i = 1; i < n; i++) {
    SORT_T x = v[i];
    int64_t xi = ix[i], j = i;
    while (j > 0 && F(before_)(x, xi, v[j - 1], ix[j - 1], desc)) {
      v[j] = v[j - 1];
      ix[j] = ix[j - 1];
      j--;
    }
    v[j] = x;
    ix[j] = xi;
  }
}

/* Merge sort of n pairs; tv/ti hold at least n/2 scratch pairs. */
static void F(msort_)(SORT_T *v, int64_t *ix, int64_t n, SORT_T *tv, int64_t *ti, int desc) {
  if (n <= 24) {
    F(insertion_)(v, ix, n, desc);
    return;
  }
  int64_t h = n / 2;
  F(msort_)(v, ix, h, tv, ti, desc);
  F(msort_)(v + h, ix + h, n - h, tv, ti, desc);
  if (!F(before_)(v[h], ix[h], v[h - 1], ix[h - 1], desc)) return; /* already in order */
  memcpy(tv, v, h * sizeof *v);
  memcpy(ti, ix, h * sizeof *ix);
  int64_t i = 0, j = h, o = 0;
  while (i < h && j < n) {
    if (F(before_)(v[j], ix[j], tv[i], ti[i], desc)) {
      v[o] = v[j]; ix[o] = ix[j]; j++;
    } else {
      v[o] = tv[i]; ix[o] = ti[i]; i++;
    }
    o++;
  }
  for (; i < h; i++, o++) { v[o] = tv[i]; ix[o] = ti[i]; }
}

#define SORT_SWAP(a, b)                                         \
  do {                                                          \
    SORT_T tv_ = v[a]; v[a] = v[b]; v[b] = tv_;                 \
    int64_t ti_ = ix[a]; ix[a] = ix[b]; ix[b] = ti_;            \
  } while (0)
#define SORT_B(a, b) F(before_)(v[a], ix[a], v[b], ix[b], desc)

/* Quickselect: afterwards v[0..k) are the first k pairs of the order (in no
 * particular order) and v[k-1] is the k-th. Median-of-three pivots; past a
 * depth budget the range is merge-sorted, so the worst case is O(n log n). */
static void F(select_)(SORT_T *v, int64_t *ix, int64_t n, int64_t k, int desc, SORT_T *tv, int64_t *ti) {
  int64_t lo = 0, hi = n - 1;
  int budget = 8;
  for (int64_t m = n; m > 1; m >>= 1) budget += 2;
  while (hi > lo) {
    if (budget-- == 0) {
      F(msort_)(v + lo, ix + lo, hi - lo + 1, tv, ti, desc);
      return;
    }
    int64_t mid = lo + (hi - lo) / 2;
    if (SORT_B(mid, lo)) SORT_SWAP(mid, lo);
    if (SORT_B(hi, lo)) SORT_SWAP(hi, lo);
    if (SORT_B(hi, mid)) SORT_SWAP(hi, mid);
    SORT_SWAP(mid, hi); /* the median is the pivot, at hi */
    int64_t store = lo;
    for (int64_t i = lo; i < hi; i++)
      if (SORT_B(i, hi)) {
        SORT_SWAP(i, store);
        store++;
      }
    SORT_SWAP(store, hi);
    if (store == k - 1) return;
    if (store > k - 1) hi = store - 1;
    else lo = store + 1;
  }
}
#undef SORT_SWAP
#undef SORT_B

/* Runs one of the sort-family operations on every slice along dim:
 * gather the slice, sort/select, scatter `count` results. */
static int F(slices_)(const slice_plan *p) {
  const SORT_T *src = (const SORT_T *)lt_tensor_data(p->t);
  SORT_T *dv = (SORT_T *)lt_tensor_data(p->values);
  int64_t *di = (int64_t *)lt_tensor_data(p->indices);
  int64_t n = p->n, k = p->k, nslices = p->nslices;
  int failed = 0;
  int64_t lt_par_n = nslices * n;
#pragma omp parallel if (lt_par_n >= 32768 && nslices > 1)
  {
    SORT_T *v = malloc((n + n / 2 + 1) * sizeof *v);
    int64_t *ix = malloc((n + n / 2 + 1) * sizeof *ix);
    if (!v || !ix) {
#pragma omp atomic write
      failed = 1;
    }
#pragma omp for schedule(static)
    for (int64_t s = 0; s < nslices; s++) {
      if (!v || !ix) continue;
      int64_t offs[3];
      slice_offsets(p, s, offs);
      const SORT_T *x = src + offs[0];
      for (int64_t i = 0; i < n; i++) {
        v[i] = x[i * p->tstride];
        ix[i] = i;
      }
      SORT_T *tv = v + n;
      int64_t *ti = ix + n;
      int64_t count = k, first = 0;
      switch (p->mode) {
        case MODE_SORT: F(msort_)(v, ix, n, tv, ti, p->desc); count = n; break;
        case MODE_TOPK_SORTED:
          if (k < n) F(select_)(v, ix, n, k, p->desc, tv, ti);
          F(msort_)(v, ix, k, tv, ti, p->desc);
          break;
        case MODE_TOPK:
          if (k < n) F(select_)(v, ix, n, k, p->desc, tv, ti);
          break;
        case MODE_KTH:
          F(select_)(v, ix, n, k, p->desc, tv, ti);
          first = k - 1;
          count = 1;
          break;
        case MODE_MODE: {
          /* The longest run of equal values in ascending order; the first
           * (smallest) value wins ties. Runs are ordered by index, so the
           * run's last pair is the value's last position (TH's choice). */
          F(msort_)(v, ix, n, tv, ti, 0);
          int64_t best = 0, bestlen = 0, start = 0;
          for (int64_t i = 0; i < n; i++) {
            if (i + 1 < n && v[i + 1] == v[i]) continue; /* (a NaN is a run of its own, as in TH) */
            if (i + 1 - start > bestlen) {
              bestlen = i + 1 - start;
              best = i;
            }
            start = i + 1;
          }
          first = best;
          count = 1;
          break;
        }
      }
      SORT_T *ov = dv + offs[1];
      int64_t *oi = di + offs[2];
      for (int64_t j = 0; j < count; j++) {
        ov[j * p->vstride] = v[first + j];
        oi[j * p->istride] = ix[first + j] + 1;
      }
    }
    free(v);
    free(ix);
  }
  return failed ? lt_fail("out of memory") : 0;
}

#undef F
#undef SORT_ISNAN
#undef SORT_CAT
#undef SORT_CAT_
