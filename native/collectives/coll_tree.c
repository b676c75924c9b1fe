/* tree: pipelined binomial-tree reduce to rank 0 + broadcast back, chunked
 * so that a node adds chunk k while chunk k+1 arrives and chunk k-1 travels
 * on. The per-tree builder ltc_sched_tree is shared with multicolor. */
#include "coll_internal.h"

#include <stdlib.h>

size_t ltc_tree_scratch(int nchildren, int64_t chunk_elems, size_t esize)
{
  return (size_t)nchildren * LTC_SLOTS * (size_t)chunk_elems * esize;
}

int ltc_sched_tree(ltc_sched *S, char *buf, int64_t count, int64_t chunk_elems, int parent,
                   const int *children, int nchildren, char *scratch, int stream)
{
  int m = ltc_nchunks(count, chunk_elems);
  size_t es = S->esize;
  int up = 2 * stream, down = 2 * stream + 1;
  int red[32][LTC_SLOTS];      /* last reduce that used each receive slot, per child */
  int upw[LTC_WINDOW], downrw[LTC_WINDOW], downw[32][LTC_WINDOW];
  if (nchildren > 32)
    return ltc_fail("tree: too many children (%d)", nchildren);
  for (int j = 0; j < m; j++) {
    int64_t start = (int64_t)j * chunk_elems;
    int64_t len = count - start < chunk_elems ? count - start : chunk_elems;
    char *p = buf + start * es;
    int slot = j % LTC_SLOTS, win = j % LTC_WINDOW;
    int last = -1;
    for (int c = 0; c < nchildren; c++) {
      char *tmp = scratch + ((size_t)c * LTC_SLOTS + slot) * (size_t)chunk_elems * es;
      int r = ltc_task_add(S, T_RECV, children[c], ltc_tag(up, j), tmp, NULL, len,
                           j >= LTC_SLOTS ? red[c][slot] : -1, -1, -1);
      last = ltc_task_add(S, T_REDUCE, -1, 0, p, tmp, len, r, last, -1);
      red[c][slot] = last;
    }
    if (parent >= 0) {
      int s = ltc_task_add(S, T_SEND, parent, ltc_tag(up, j), p, NULL, len, last,
                           j >= LTC_WINDOW ? upw[win] : -1, -1);
      upw[win] = s;
      /* the result comes back into the same place once our part has left */
      last = ltc_task_add(S, T_RECV, parent, ltc_tag(down, j), p, NULL, len, s,
                          j >= LTC_WINDOW ? downrw[win] : -1, -1);
      downrw[win] = last;
    }
    for (int c = 0; c < nchildren; c++) {
      int d = ltc_task_add(S, T_SEND, children[c], ltc_tag(down, j), p, NULL, len, last,
                           j >= LTC_WINDOW ? downw[c][win] : -1, -1);
      downw[c][win] = d;
    }
  }
  return S->err ? -1 : 0;
}


/* Binomial tree rooted at 0: v's parent is v minus its lowest set bit; its
 * children are v + 2^k for the 2^k below that bit. */
int ltc_allreduce_tree(ltc_ctx *ctx, void *buf, int64_t count, int dtype, int64_t chunk)
{
  int p = ctx->size, v = ctx->rank, parent = -1, children[32], nc = 0;
  for (int mask = 1; mask < p; mask <<= 1) {
    if (v & mask) {
      parent = v - mask;
      break;
    }
    if (v + mask < p)
      children[nc++] = v + mask;
  }
  ltc_sched S;
  ltc_sched_init(&S, ctx, dtype);
  int64_t ce = chunk / (int64_t)S.esize;
  if (ce < 1)
    ce = 1;
  char *scratch = ltc_scratch(ctx, ltc_tree_scratch(nc, ce, S.esize));
  if (!scratch && nc)
    return -1;
  int rc = ltc_sched_tree(&S, buf, count, ce, parent, children, nc, scratch, 0);
  if (rc == 0)
    rc = ltc_sched_run(&S, "allreduce tree");
  ltc_sched_free(&S);
  return rc;
}
