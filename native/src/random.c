/* Torch7's random numbers: the MT19937 generator of THRandom and the tensor
 * fills of THTensorRandom.
 *
 * TH-exact (same numbers for the same seed as Torch7 on 64-bit Linux):
 * seeding (init_genrand of the low 32 bits), the 32-bit tempered stream,
 * uniform (one 32-bit draw / 2^32, in double, then cast to the tensor type),
 * Box-Muller normal with its cached second value (cos first, then sin),
 * exponential, cauchy, logNormal, geometric, bernoulli, the per-type ranges
 * of tensor random(), random(a, b), randperm's swaps and multinomial's
 * inverse-CDF search. Not TH-exact: seed() draws 53 bits from /dev/urandom
 * (TH used the time or a full 64-bit urandom value); later TH versions that
 * filled Float tensors with 24-bit uniforms are not followed. */
#include <time.h>
#include "lt_internal.h"

#define MT_N 624
#define MT_M 397
#define MATRIX_A 0x9908b0dfULL
#define UMASK 0x80000000ULL
#define LMASK 0x7fffffffULL

void lt_gen_init(lt_generator *g) {
  memset(g, 0, sizeof *g);
  g->left = 1;
}

void lt_gen_manual_seed(lt_generator *g, uint64_t seed) {
  lt_gen_init(g); /* reseeding also forgets the cached normal */
  g->the_initial_seed = seed;
  g->state[0] = seed & 0xffffffffULL;
  for (int j = 1; j < MT_N; j++) {
    g->state[j] = (1812433253ULL * (g->state[j - 1] ^ (g->state[j - 1] >> 30)) + j) & 0xffffffffULL;
  }
  g->left = 1;
  g->seeded = 1;
}

uint64_t lt_gen_seed(lt_generator *g) {
  uint64_t s = 0;
  FILE *f = fopen("/dev/urandom", "rb");
  if (!f || fread(&s, sizeof s, 1, f) != 1) s = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
  if (f) fclose(f);
  s &= (1ULL << 53) - 1;
  lt_gen_manual_seed(g, s);
  return s;
}

uint64_t lt_gen_initial_seed(const lt_generator *g) { return g->the_initial_seed; }

int lt_gen_is_valid(const lt_generator *g) {
  return g->seeded == 1 && g->left > 0 && g->left <= MT_N && g->next <= MT_N;
}

/* The MT19937 twist of all 624 words. */
static void next_state(lt_generator *g) {
  uint64_t *p = g->state;
#define TWIST(u, v) (((((u) & UMASK) | ((v) & LMASK)) >> 1) ^ (((v) & 1ULL) ? MATRIX_A : 0ULL))
  int j;
  for (j = 0; j < MT_N - MT_M; j++) p[j] = p[j + MT_M] ^ TWIST(p[j], p[j + 1]);
  for (; j < MT_N - 1; j++) p[j] = p[j + MT_M - MT_N] ^ TWIST(p[j], p[j + 1]);
  p[MT_N - 1] = p[MT_M - 1] ^ TWIST(p[MT_N - 1], p[0]);
#undef TWIST
  g->left = MT_N;
  g->next = 0;
}

uint32_t lt_gen_random(lt_generator *g) {
  if (--g->left == 0) next_state(g);
  uint64_t y = g->state[g->next++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680ULL;
  y ^= (y << 15) & 0xefc60000ULL;
  y ^= y >> 18;
  return (uint32_t)y;
}

/* [0, 1) from one 32-bit draw, as TH's __uniform__. */
static inline double unit(lt_generator *g) { return (double)lt_gen_random(g) * (1.0 / 4294967296.0); }

/* The scalar draws go to Lua: their results pass through lt_number (a NaN parameter gives a NaN draw). */
double lt_gen_uniform(lt_generator *g, double a, double b) { return lt_number(unit(g) * (b - a) + a); }

static double normal_draw(lt_generator *g, double mean, double stdv) {
  /* Box-Muller: one pair of uniforms gives rho*cos now and rho*sin next call. */
  if (!g->normal_is_valid) {
    g->normal_x = unit(g);
    g->normal_y = unit(g);
    g->normal_rho = sqrt(-2. * log(1.0 - g->normal_y));
    g->normal_is_valid = 1;
    return g->normal_rho * cos(2. * M_PI * g->normal_x) * stdv + mean;
  }
  g->normal_is_valid = 0;
  return g->normal_rho * sin(2. * M_PI * g->normal_x) * stdv + mean;
}

static int check_stdv(double stdv) {
  return stdv > 0 ? 0 : lt_fail("standard deviation must be strictly positive (got %g)", stdv);
}
static int check_geometric(double p) {
  return p > 0 && p < 1 ? 0 : lt_fail("geometric: p must be > 0 and < 1 (got %g)", p);
}
static int check_bernoulli(double p) {
  return p >= 0 && p <= 1 ? 0 : lt_fail("bernoulli: p must be >= 0 and <= 1 (got %g)", p);
}
static int check_range(int64_t a, int64_t b) {
  return b >= a ? 0 : lt_fail("random: upper bound must be larger than lower bound (got [%lld, %lld])",
                              (long long)a, (long long)b);
}

static inline double exponential_draw(lt_generator *g, double lambda) { return -1. / lambda * log(1 - unit(g)); }
static inline double cauchy_draw(lt_generator *g, double median, double sigma) {
  return median + sigma * tan(M_PI * (unit(g) - 0.5));
}
static inline double geometric_draw(lt_generator *g, double p) { return (int)(log(1 - unit(g)) / log(p)) + 1; }
static inline double bernoulli_draw(lt_generator *g, double p) { return unit(g) <= p; }
static inline int64_t range_draw(lt_generator *g, int64_t a, int64_t b) {
  return (int64_t)((uint64_t)lt_gen_random(g) % (uint64_t)(b + 1 - a) + (uint64_t)a);
}

int lt_gen_normal(lt_generator *g, double mean, double stdv, double *out) {
  if (check_stdv(stdv)) return -1;
  *out = lt_number(normal_draw(g, mean, stdv));
  return 0;
}
int lt_gen_exponential(lt_generator *g, double lambda, double *out) {
  *out = lt_number(exponential_draw(g, lambda));
  return 0;
}
double lt_gen_cauchy(lt_generator *g, double median, double sigma) {
  return lt_number(cauchy_draw(g, median, sigma));
}
int lt_gen_log_normal(lt_generator *g, double mean, double stdv, double *out) {
  if (check_stdv(stdv)) return -1;
  *out = lt_number(exp(normal_draw(g, mean, stdv)));
  return 0;
}
int lt_gen_geometric(lt_generator *g, double p, double *out) {
  if (check_geometric(p)) return -1;
  *out = geometric_draw(g, p);
  return 0;
}
int lt_gen_bernoulli(lt_generator *g, double p, double *out) {
  if (check_bernoulli(p)) return -1;
  *out = bernoulli_draw(g, p);
  return 0;
}
int lt_gen_random_range(lt_generator *g, int64_t a, int64_t b, double *out) {
  if (check_range(a, b)) return -1;
  *out = (double)range_draw(g, a, b);
  return 0;
}

/* ---- tensor fills: t[i] = (scalar_t)(EXPR) in row-major order ---- */

#define FILL(T, EXPR)                                                      \
  do {                                                                     \
    if (lt_tensor_nelement(T) == 0) return 0;                              \
    LT_DISPATCH((T)->type, {                                               \
      lt_iter it_;                                                         \
      lt_iter_init(&it_, (T));                                             \
      while (!lt_iter_done(&it_)) {                                        \
        int64_t m_ = it_.inner_left, s_ = it_.inner_stride;                \
        scalar_t *d_ = (scalar_t *)it_.ptr;                                \
        for (int64_t i_ = 0; i_ < m_; i_++) d_[i_ * s_] = (scalar_t)(EXPR); \
        lt_iter_advance(&it_, m_);                                         \
      }                                                                    \
    });                                                                    \
    return 0;                                                              \
  } while (0)

int lt_tensor_random(lt_tensor *t, lt_generator *g) {
  /* TH's ranges: [0, max] of the integer types, [0, 2^mantissa] of the float ones. */
  static const uint64_t mod[LT_NTYPES] = {1ULL << 8, 1ULL << 7, 1ULL << 15, 1ULL << 31, 1ULL << 63,
                                          (1ULL << 24) + 1, (1ULL << 53) + 1};
  if (t->type < 0 || t->type >= LT_NTYPES) return lt_fail("unknown tensor type %d", t->type);
  uint64_t m = mod[lt_host_type(t->type)];
  FILL(t, (int64_t)(lt_gen_random(g) % m));
}

int lt_tensor_random_range(lt_tensor *t, lt_generator *g, int64_t a, int64_t b) {
  if (check_range(a, b)) return -1;
  FILL(t, range_draw(g, a, b));
}

int lt_tensor_uniform(lt_tensor *t, lt_generator *g, double a, double b) { FILL(t, unit(g) * (b - a) + a); }

int lt_tensor_normal(lt_tensor *t, lt_generator *g, double mean, double stdv) {
  if (check_stdv(stdv)) return -1;
  FILL(t, normal_draw(g, mean, stdv));
}

int lt_tensor_exponential(lt_tensor *t, lt_generator *g, double lambda) { FILL(t, exponential_draw(g, lambda)); }

int lt_tensor_cauchy(lt_tensor *t, lt_generator *g, double median, double sigma) {
  FILL(t, cauchy_draw(g, median, sigma));
}

int lt_tensor_log_normal(lt_tensor *t, lt_generator *g, double mean, double stdv) {
  if (check_stdv(stdv)) return -1;
  FILL(t, exp(normal_draw(g, mean, stdv)));
}

int lt_tensor_geometric(lt_tensor *t, lt_generator *g, double p) {
  if (check_geometric(p)) return -1;
  FILL(t, geometric_draw(g, p));
}

int lt_tensor_bernoulli(lt_tensor *t, lt_generator *g, double p) {
  if (check_bernoulli(p)) return -1;
  FILL(t, bernoulli_draw(g, p));
}

int lt_tensor_bernoulli_tensor(lt_tensor *t, lt_generator *g, const lt_tensor *p) {
  if (lt_host_type(p->type) != LT_FLOAT && lt_host_type(p->type) != LT_DOUBLE)
    return lt_fail("bernoulli: probabilities must be a FloatTensor or DoubleTensor, got a %sTensor",
                   lt_type_name(p->type));
  int64_t n = lt_tensor_nelement(t);
  if (n != lt_tensor_nelement(p))
    return lt_fail("inconsistent tensor size: bernoulli of %lld elements with %lld probabilities", (long long)n,
                   (long long)lt_tensor_nelement(p));
  if (n == 0) return 0;
  LT_DISPATCH(t->type, {
    LT_DISPATCH_AS(p->type, prob_t, {
      lt_iter a, b;
      lt_iter_init(&a, t);
      lt_iter_init(&b, p);
      while (!lt_iter_done(&a)) {
        int64_t m = lt_iter_run(&a, &b, NULL);
        scalar_t *d = (scalar_t *)a.ptr;
        const prob_t *q = (const prob_t *)b.ptr;
        for (int64_t i = 0; i < m; i++) {
          double pi = q[i * b.inner_stride];
          if (check_bernoulli(pi)) return -1;
          d[i * a.inner_stride] = (scalar_t)bernoulli_draw(g, pi);
        }
        lt_iter_advance(&a, m);
        lt_iter_advance(&b, m);
      }
    });
  });
  return 0;
}

int lt_tensor_randperm(lt_tensor *r, lt_generator *g, int64_t n) {
  if (n <= 0) return lt_fail("randperm: n must be strictly positive (got %lld)", (long long)n);
  int64_t size[1] = {n};
  if (lt_tensor_resize(r, 1, size) != 0) return -1;
  /* Fisher-Yates with TH's draws: swap i with i + random() % (n - i). */
  int64_t *perm = malloc(n * sizeof *perm);
  if (!perm) return lt_fail("out of memory");
  for (int64_t i = 0; i < n; i++) perm[i] = i + 1;
  for (int64_t i = 0; i < n - 1; i++) {
    int64_t z = (int64_t)((uint64_t)lt_gen_random(g) % (uint64_t)(n - i));
    int64_t s = perm[i];
    perm[i] = perm[z + i];
    perm[z + i] = s;
  }
  LT_DISPATCH(r->type, {
    scalar_t *d = (scalar_t *)lt_tensor_data(r);
    for (int64_t i = 0; i < n; i++) d[i * r->stride[0]] = (scalar_t)perm[i];
  });
  free(perm);
  return 0;
}

int lt_tensor_multinomial(lt_tensor *r, lt_generator *g, const lt_tensor *prob, int64_t n, int replacement) {
  if (lt_host_type(prob->type) != LT_FLOAT && lt_host_type(prob->type) != LT_DOUBLE)
    return lt_fail("multinomial: probabilities must be a FloatTensor or DoubleTensor");
  if (lt_host_type(r->type) != LT_LONG) return lt_fail("multinomial: the result must be a LongTensor");
  if (prob->ndim != 1 && prob->ndim != 2)
    return lt_fail("multinomial: prob_dist must be 1D or 2D, got %dD", prob->ndim);
  int64_t ndist = prob->ndim == 1 ? 1 : prob->size[0];
  int64_t ncat = prob->size[prob->ndim - 1];
  int64_t ps0 = prob->ndim == 1 ? 0 : prob->stride[0], ps1 = prob->stride[prob->ndim - 1];
  if (n <= 0) return lt_fail("multinomial: the number of samples must be positive (got %lld)", (long long)n);
  if (!replacement && n > ncat)
    return lt_fail("multinomial: cannot sample n_sample > prob_dist:size(%d) samples without replacement",
                   prob->ndim);
  int64_t size[2] = {ndist, n};
  if (prob->ndim == 1 ? lt_tensor_resize(r, 1, size + 1) : lt_tensor_resize(r, 2, size)) return -1;
  int64_t rs0 = prob->ndim == 1 ? 0 : r->stride[0], rs1 = r->stride[r->ndim - 1];
  int64_t *out = (int64_t *)lt_tensor_data(r);
  double *cum = malloc(ncat * sizeof *cum);
  if (!cum) return lt_fail("out of memory");
  int rc = 0;
  for (int64_t i = 0; i < ndist && rc == 0; i++) {
    /* normalized cumulative distribution of row i */
    double sum = 0;
    for (int64_t j = 0; j < ncat; j++) {
      int64_t o = prob->offset + i * ps0 + j * ps1;
      double v = lt_host_type(prob->type) == LT_FLOAT ? ((float *)prob->storage->data)[o] : ((double *)prob->storage->data)[o];
      if (!(v >= 0)) {
        rc = lt_fail("multinomial: invalid distribution (probability entry < 0)");
        break;
      }
      sum += v;
      cum[j] = sum;
    }
    if (rc) break;
    if (!(sum > 0)) {
      rc = lt_fail("multinomial: invalid distribution (sum of probabilities <= 0)");
      break;
    }
    for (int64_t j = 0; j < ncat; j++) cum[j] /= sum;
    for (int64_t j = 0; j < n; j++) {
      double u = unit(g);
      cum[ncat - 1] = 1; /* the last bucket always closes the distribution */
      int64_t lo = 0, hi = ncat; /* first bucket with cum >= u */
      while (hi > lo) {
        int64_t mid = lo + (hi - lo) / 2;
        if (cum[mid] < u) lo = mid + 1;
        else hi = mid;
      }
      out[i * rs0 + j * rs1] = lo + 1;
      if (!replacement) {
        /* remove the drawn category's mass and renormalize */
        double before = lo > 0 ? cum[lo - 1] : 0, diff = cum[lo] - before, rest = 1.0 - diff;
        if (j + 1 < n && !(rest > 0)) { /* TH divided by zero here */
          rc = lt_fail("multinomial: invalid distribution (fewer nonzero probabilities than samples without "
                       "replacement)");
          break;
        }
        for (int64_t c = 0; c < ncat; c++) {
          double v = c >= lo ? cum[c] - diff : cum[c];
          cum[c] = v / rest;
        }
      }
    }
  }
  free(cum);
  return rc;
}

static double get_fd(const lt_tensor *t, int64_t i) {
  int64_t o = t->offset + i * t->stride[0];
  return lt_host_type(t->type) == LT_FLOAT ? ((float *)t->storage->data)[o] : ((double *)t->storage->data)[o];
}

static void set_fd(lt_tensor *t, int64_t i, double v) {
  int64_t o = t->offset + i * t->stride[0];
  if (lt_host_type(t->type) == LT_FLOAT) ((float *)t->storage->data)[o] = (float)v;
  else ((double *)t->storage->data)[o] = v;
}

int lt_multinomial_alias_setup(const lt_tensor *probs, lt_tensor *J, lt_tensor *q) {
  if (lt_host_type(probs->type) != LT_FLOAT && lt_host_type(probs->type) != LT_DOUBLE)
    return lt_fail("multinomialAliasSetup: probabilities must be a FloatTensor or DoubleTensor");
  if (probs->ndim != 1) return lt_fail("multinomialAliasSetup: probabilities must be 1D, got %dD", probs->ndim);
  if (lt_host_type(J->type) != LT_LONG) return lt_fail("multinomialAliasSetup: the alias table must be a LongTensor");
  if (q->type != probs->type)
    return lt_fail("multinomialAliasSetup: the probability table must be a %sTensor", lt_type_name(probs->type));
  int64_t K = probs->size[0];
  double sum = 0;
  for (int64_t i = 0; i < K; i++) {
    double v = get_fd(probs, i);
    if (!(v >= 0)) return lt_fail("multinomialAliasSetup: invalid distribution (probability entry < 0 or NaN)");
    sum += v;
  }
  if (!(sum > 0) || sum == INFINITY) return lt_fail("multinomialAliasSetup: invalid distribution (sum of probabilities is not positive and finite)");
  if (lt_tensor_resize(J, 1, &K) != 0 || lt_tensor_resize(q, 1, &K) != 0) return -1;
  /* scaled probabilities K * p_i in double, and the bins below / above 1 */
  double *scaled = malloc(K * sizeof *scaled);
  int64_t *alias = malloc(K * sizeof *alias), *small = malloc(K * sizeof *small), *large = malloc(K * sizeof *large);
  if (!scaled || !alias || !small || !large) {
    free(scaled); free(alias); free(small); free(large);
    return lt_fail("out of memory");
  }
  int64_t ns = 0, nl = 0;
  for (int64_t i = 0; i < K; i++) {
    scaled[i] = (double)K * get_fd(probs, i) / sum;
    alias[i] = i;
    if (scaled[i] < 1) small[ns++] = i;
    else large[nl++] = i;
  }
  /* each small bin is topped up to 1 by one large bin, which shrinks */
  while (ns > 0 && nl > 0) {
    int64_t s = small[--ns], l = large[nl - 1];
    alias[s] = l;
    scaled[l] -= 1 - scaled[s];
    if (scaled[l] < 1) {
      nl--;
      small[ns++] = l;
    }
  }
  /* what is left is 1 up to rounding: always accepted */
  while (ns > 0) scaled[small[--ns]] = 1;
  while (nl > 0) scaled[large[--nl]] = 1;
  int64_t *jd = (int64_t *)lt_tensor_data(J);
  for (int64_t i = 0; i < K; i++) {
    set_fd(q, i, scaled[i]);
    jd[i * J->stride[0]] = alias[i] + 1;
  }
  free(scaled); free(alias); free(small); free(large);
  return 0;
}

int lt_multinomial_alias_draw(lt_tensor *r, lt_generator *g, const lt_tensor *J, const lt_tensor *q) {
  if (lt_host_type(r->type) != LT_LONG) return lt_fail("multinomialAlias: the result must be a LongTensor");
  if (lt_host_type(J->type) != LT_LONG || J->ndim != 1)
    return lt_fail("multinomialAlias: state[1] (the alias table) must be a 1D LongTensor");
  if ((lt_host_type(q->type) != LT_FLOAT && lt_host_type(q->type) != LT_DOUBLE) || q->ndim != 1 || q->size[0] != J->size[0])
    return lt_fail("multinomialAlias: state[2] (the probability table) must be a 1D Float or Double tensor "
                   "as long as state[1]");
  int64_t K = J->size[0];
  const int64_t *jd = (const int64_t *)lt_tensor_data(J);
  for (int64_t i = 0; i < K; i++) {
    int64_t a = jd[i * J->stride[0]];
    if (a < 1 || a > K) return lt_fail("multinomialAlias: alias table entry %lld out of range [1, %lld]",
                                       (long long)a, (long long)K);
  }
  lt_iter it;
  lt_iter_init(&it, r);
  while (!lt_iter_done(&it)) {
    int64_t m = lt_iter_run(&it, NULL, NULL);
    int64_t *out = (int64_t *)it.ptr;
    for (int64_t i = 0; i < m; i++) {
      int64_t k = (int64_t)(unit(g) * (double)K);
      if (k >= K) k = K - 1;
      out[i * it.inner_stride] = bernoulli_draw(g, get_fd(q, k)) ? k + 1 : jd[k * J->stride[0]];
    }
    lt_iter_advance(&it, m);
  }
  return 0;
}
