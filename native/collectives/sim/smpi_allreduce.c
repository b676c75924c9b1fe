/* Times our allreduce algorithms and the MPI library's MPI_Allreduce under
 * SimGrid's SMPI, the way `luatorch bench allreduce` does on real ranks
 * (OSU: per iteration a barrier, one timed call, the maximum over ranks).
 * Built by run/simulate.py with smpicc -DLTC_SIMULATOR together with the
 * sources of native/collectives (the same algorithms, the simulator switch).
 *
 *   smpirun ... ./smpi_allreduce --sizes B1,B2 --algorithms ring,mpi [--iters N --warmup W]
 *                                [--dtype float32|float64] [--colors C] [--chunk B] [--verify] [--no-check]
 *
 * Rank 0 prints one JSON object per (size, algorithm): the per-iteration
 * times (simulated microseconds) and, with --verify, whether the result
 * equals the MPI library's own MPI_Allreduce of the same random data (that
 * needs real data: run with --cfg=smpi/shared-malloc:off). Without
 * --verify the buffers come from SMPI's shared malloc and hold no data. */
#include <mpi.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lt_coll.h"

#define MAXLIST 64

static int split_list(char *text, char **items)
{
  int n = 0;
  for (char *tok = strtok(text, ","); tok && n < MAXLIST; tok = strtok(NULL, ","))
    items[n++] = tok;
  return n;
}

static void usage(int rank, const char *why)
{
  if (rank == 0)
    fprintf(stderr, "smpi_allreduce: %s\n", why);
  MPI_Finalize();
  exit(2);
}

/* Deterministic per-rank random data, different on every rank. */
static void fill_random(void *buf, int64_t n, int dtype, unsigned seed)
{
  uint64_t s = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (int64_t i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    double v = (double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    if (dtype == LTC_FLOAT)
      ((float *)buf)[i] = (float)v;
    else
      ((double *)buf)[i] = v;
  }
}

/* The tolerance `luatorch bench allreduce` uses: summation order differs between algorithms. */
static int close_enough(const void *got, const void *ref, int64_t n, int dtype, int p)
{
  double tol = (dtype == LTC_FLOAT ? 1e-5 : 1e-12) * p;
  for (int64_t i = 0; i < n; i++) {
    double a = dtype == LTC_FLOAT ? ((const float *)got)[i] : ((const double *)got)[i];
    double b = dtype == LTC_FLOAT ? ((const float *)ref)[i] : ((const double *)ref)[i];
    if (!(fabs(a - b) <= tol + tol * fabs(b)))
      return 0;
  }
  return 1;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);

  char *sizes_arg = NULL, *algs_arg = NULL;
  int iters = 3, warmup = 1, dtype = LTC_FLOAT, colors = 0, verify = 0, check = 1;
  int64_t chunk = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int more = i + 1 < argc;
    if (!strcmp(a, "--sizes") && more) sizes_arg = argv[++i];
    else if (!strcmp(a, "--algorithms") && more) algs_arg = argv[++i];
    else if (!strcmp(a, "--iters") && more) iters = atoi(argv[++i]);
    else if (!strcmp(a, "--warmup") && more) warmup = atoi(argv[++i]);
    else if (!strcmp(a, "--colors") && more) colors = atoi(argv[++i]);
    else if (!strcmp(a, "--chunk") && more) chunk = atoll(argv[++i]);
    else if (!strcmp(a, "--dtype") && more) {
      const char *d = argv[++i];
      if (strcmp(d, "float32") && strcmp(d, "float64"))
        usage(rank, "--dtype is float32 or float64");
      dtype = strcmp(d, "float32") ? LTC_DOUBLE : LTC_FLOAT;
    } else if (!strcmp(a, "--verify")) verify = 1;
    else if (!strcmp(a, "--no-check")) check = 0;
    else usage(rank, "unknown or incomplete option (see the comment at the top of smpi_allreduce.c)");
  }
  if (!sizes_arg || !algs_arg || iters < 1 || warmup < 0)
    usage(rank, "need --sizes and --algorithms, --iters >= 1, --warmup >= 0");
  char *sizes_s[MAXLIST], *algs_s[MAXLIST];
  int nsizes = split_list(sizes_arg, sizes_s), nalgs = split_list(algs_arg, algs_s);
  int alg_ids[MAXLIST];
  for (int k = 0; k < nalgs; k++)
    if ((alg_ids[k] = ltc_algorithm_id(algs_s[k])) < 0)
      usage(rank, "unknown algorithm (auto, mpi, ring, rhd, tree, multicolor, multicolor_ring)");

  MPI_Comm world = MPI_COMM_WORLD;
  ltc_ctx *ctx;
  if (ltc_create(&world, 0, &ctx)) {
    fprintf(stderr, "smpi_allreduce: rank %d: %s\n", rank, ltc_errmsg());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  ltc_set_check(ctx, check);
  size_t es = dtype == LTC_FLOAT ? sizeof(float) : sizeof(double);
  double *times = malloc((size_t)(warmup + iters) * sizeof(double));
  double *worst = malloc((size_t)(warmup + iters) * sizeof(double));

  for (int s = 0; s < nsizes; s++) {
    int64_t nbytes = atoll(sizes_s[s]);
    int64_t n = nbytes / (int64_t)es > 0 ? nbytes / (int64_t)es : 1;
    size_t bytes = (size_t)n * es;
    /* with verify: private buffers holding real data; otherwise shared ones (no data, little memory) */
    char *buf = verify ? malloc(bytes) : SMPI_SHARED_MALLOC(bytes);
    char *input = verify ? malloc(bytes) : NULL;
    char *ref = verify ? malloc(bytes) : NULL;
    if (!buf || (verify && (!input || !ref))) {
      fprintf(stderr, "smpi_allreduce: rank %d: cannot allocate %zu bytes\n", rank, bytes);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (verify) {
      fill_random(input, n, dtype, (unsigned)(1000 + rank + 7919 * s));
      MPI_Allreduce(input, ref, (int)n, dtype == LTC_FLOAT ? MPI_FLOAT : MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    } else {
      memset(buf, 0, bytes);
    }
    for (int k = 0; k < nalgs; k++) {
      int ok = -1;   /* -1: not verified */
      if (verify) {
        memcpy(buf, input, bytes);
        if (ltc_allreduce(ctx, NULL, buf, n, dtype, alg_ids[k], colors, chunk)) {
          fprintf(stderr, "smpi_allreduce: rank %d: %s\n", rank, ltc_errmsg());
          MPI_Abort(MPI_COMM_WORLD, 1);
        }
        int mine = close_enough(buf, ref, n, dtype, p);
        MPI_Allreduce(&mine, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
      }
      for (int it = 0; it < warmup + iters; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (ltc_allreduce(ctx, NULL, buf, n, dtype, alg_ids[k], colors, chunk)) {
          fprintf(stderr, "smpi_allreduce: rank %d: %s\n", rank, ltc_errmsg());
          MPI_Abort(MPI_COMM_WORLD, 1);
        }
        times[it] = MPI_Wtime() - t0;
      }
      MPI_Reduce(times, worst, warmup + iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      if (rank == 0) {
        printf("{\"algorithm\": \"%s\", \"bytes\": %lld, \"ranks\": %d, \"dtype\": \"%s\", \"correct\": %s, "
               "\"library\": \"%s\", \"times_us\": [",
               algs_s[k], (long long)bytes, p, dtype == LTC_FLOAT ? "float32" : "float64",
               ok < 0 ? "null" : ok ? "true" : "false", ltc_library(ctx));
        for (int it = warmup; it < warmup + iters; it++)
          printf("%s%.3f", it > warmup ? ", " : "", worst[it] * 1e6);
        printf("]}\n");
        fflush(stdout);
      }
    }
    if (verify) {
      free(buf);
      free(input);
      free(ref);
    } else {
      SMPI_SHARED_FREE(buf);
    }
  }
  free(times);
  free(worst);
  ltc_destroy(ctx);
  MPI_Finalize();
  return 0;
}
