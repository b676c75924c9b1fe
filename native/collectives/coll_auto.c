/* auto: which algorithm, how many colors, what chunk size.
 *
 * With a measured table (ltc_set_table, filled by the calibration that
 * run/bench_allreduce.py --calibrate caches per MPI library and rank count)
 * the measured sizes around this one decide (see ltc_auto_choose). Without one, an alpha-beta-gamma
 * model (alpha per message, beta per byte moved, gamma per byte reduced)
 * compares the library's best classic algorithm with ours; ours overlap the
 * reduction with the transfer (chunks), so their bandwidth term is
 * max(beta, gamma) rather than beta + gamma, at the price of more messages.
 * The library is kept unless ours is predicted 20% faster. */
#include "coll_internal.h"

#include <math.h>

static double lg2(int p) { return p > 1 ? ceil(log2((double)p)) : 0; }

static double model_mpi(ltc_ctx *x, double n, int p)
{
  double a = x->alpha, b = x->beta, g = x->gamma, f = (p - 1.0) / p;
  double rd = lg2(p) * (a + n * b + n * g);
  double rab = 2 * lg2(p) * a + 2 * f * n * b + f * n * g;
  return rd < rab ? rd : rab;
}

static double model_ring(ltc_ctx *x, double n, int p, double chunk)
{
  double f = (p - 1.0) / p, m = ceil(n / p / chunk);
  double bg = x->beta > x->gamma ? x->beta : x->gamma;
  return (2 * (p - 1) + 2 * m) * x->alpha + f * n * (x->beta + bg);
}

static double model_multicolor(ltc_ctx *x, double n, int p, int C, double chunk)
{
  /* per color: a pipeline of depth 2h over n/C bytes in chunks; an interior
   * node moves 3 chunks per chunk step, but colors share each rank's load,
   * so the total bytes per rank are ~2n as for the ring */
  double h = lg2(p), m = ceil(n / C / chunk);
  double bg = x->beta > x->gamma ? x->beta : x->gamma;
  return (2 * h + m) * x->alpha + n * (x->beta + bg);
}

int64_t ltc_default_chunk(int64_t nbytes, int colors)
{
  /* chunk count k* = sqrt(depth * bytes * beta / alpha) balances pipeline
   * fill against per-message cost; with alpha ~3 us and beta ~0.2 ns/B this
   * lands between 16 KiB and 1 MiB for the sizes that use pipelines */
  int64_t per = nbytes / (colors > 0 ? colors : 1);
  double k = sqrt(4.0 * (double)per * 0.2e-9 / 3e-6);
  int64_t c = k > 1 ? (int64_t)((double)per / k) : per;
  if (c < 16384)
    c = 16384;
  if (c > (1 << 20))
    c = 1 << 20;
  return (c + 63) / 64 * 64;
}

int ltc_default_colors(ltc_ctx *ctx, int64_t nbytes)
{
  /* Two colors: the two-tree construction, which balances every rank's send
   * and receive load; more colors only help with more independent links
   * per node than a shared-memory host has. Tiny messages: one color. */
  (void)ctx;
  return nbytes >= 4096 ? 2 : 1;
}

void ltc_auto_choose(ltc_ctx *ctx, int64_t nbytes, int *algorithm, int *colors)
{
  *colors = 0;
  if (ctx->size == 1) {
    *algorithm = LTC_MPI;
    return;
  }
  if (ctx->table_n > 0) {
    /* entries are sorted by size; between two measured sizes that disagree,
     * keep the library if either kept it (the table only names another
     * algorithm where it won clearly and repeatably, so an untested size
     * next to an mpi entry is not a proven win), otherwise the nearer one
     * in log(size) */
    int n = ctx->table_n, i = 0;
    while (i + 1 < n && ctx->table_bytes[i + 1] <= nbytes)
      i++;
    int pick = i;
    if (nbytes > ctx->table_bytes[i] && i + 1 < n && ctx->table_alg[i] != ctx->table_alg[i + 1]) {
      if (ctx->table_alg[i] == LTC_MPI || ctx->table_alg[i + 1] == LTC_MPI) {
        *algorithm = LTC_MPI;
        return;
      }
      double l = log((double)(nbytes > 0 ? nbytes : 1));
      double dl = l - log((double)(ctx->table_bytes[i] > 0 ? ctx->table_bytes[i] : 1));
      double dh = log((double)ctx->table_bytes[i + 1]) - l;
      pick = dh < dl ? i + 1 : i;
    }
    *algorithm = ctx->table_alg[pick];
    *colors = ctx->table_colors[pick];
    return;
  }
  int p = ctx->size;
  double n = (double)nbytes;
  double tm = model_mpi(ctx, n, p);
  double tr = model_ring(ctx, n, p, (double)ltc_default_chunk(nbytes, 1));
  int C = ltc_default_colors(ctx, nbytes);
  double tc = model_multicolor(ctx, n, p, C, (double)ltc_default_chunk(nbytes, C));
  *algorithm = LTC_MPI;
  if (tr < 0.8 * tm && tr <= tc)
    *algorithm = LTC_RING;
  else if (tc < 0.8 * tm)
    *algorithm = LTC_MULTICOLOR, *colors = C;
}

void ltc_set_model(ltc_ctx *ctx, double alpha, double beta, double gamma)
{
  ctx->alpha = alpha;
  ctx->beta = beta;
  ctx->gamma = gamma;
}

int ltc_set_table(ltc_ctx *ctx, int n, const int64_t *nbytes, const int *algorithms, const int *colors)
{
  if (n < 0 || n > LTC_MAXTABLE)
    return ltc_fail("set_table: %d entries (at most %d)", n, LTC_MAXTABLE);
  for (int i = 0; i < n; i++)
    if (algorithms[i] <= LTC_AUTO || algorithms[i] >= LTC_NALGORITHMS)
      return ltc_fail("set_table: entry %d: bad algorithm %d", i, algorithms[i]);
  for (int i = 0; i < n; i++) {
    ctx->table_bytes[i] = nbytes[i];
    ctx->table_alg[i] = algorithms[i];
    ctx->table_colors[i] = colors[i];
  }
  ctx->table_n = n;
  return 0;
}

int ltc_choose(ltc_ctx *ctx, int64_t nbytes, int *algorithm, int *colors, int64_t *chunk_bytes)
{
  ltc_auto_choose(ctx, nbytes, algorithm, colors);
  if (*colors <= 0)
    *colors = ltc_default_colors(ctx, nbytes);
  *chunk_bytes = ltc_default_chunk(nbytes, *colors);
  return 0;
}
