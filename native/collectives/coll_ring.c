/* ring: reduce-scatter then allgather around the ring 0 -> 1 -> ... -> p-1,
 * every segment moved in chunks so that receiving, adding and forwarding
 * overlap. The per-ring builder ltc_sched_ring is shared with multicolor. */
#include "coll_internal.h"

#include <stdlib.h>

size_t ltc_ring_scratch(int64_t chunk_elems, size_t esize) { return LTC_SLOTS * (size_t)chunk_elems * esize; }

int ltc_sched_ring(ltc_sched *S, char *buf, int64_t count, int64_t chunk_elems, const int *ring,
                   char *scratch, int stream)
{
  int p = S->ctx->size, me = -1;
  for (int i = 0; i < p; i++)
    if (ring[i] == S->ctx->rank)
      me = i;
  if (me < 0)
    return ltc_fail("ring: rank %d is not on the ring", S->ctx->rank);
  int right = ring[(me + 1) % p], left = ring[(me + p - 1) % p];
  size_t es = S->esize;
  int64_t maxseg = ltc_part(count, p, 1);
  int m = ltc_nchunks(maxseg, chunk_elems);
  if (m == 0)
    return 0;
  int rs = 2 * stream, ag = 2 * stream + 1;
  int steps = p - 1;
  int *prev_red = malloc((size_t)m * sizeof(int));      /* reduce of chunk j in the previous step */
  int *rs_send = malloc((size_t)steps * m * sizeof(int)); /* every reduce-scatter send */
  int *ag_recv = malloc((size_t)m * sizeof(int));
  if (!prev_red || !rs_send || !ag_recv) {
    free(prev_red);
    free(rs_send);
    free(ag_recv);
    return ltc_fail("ring: out of memory");
  }
  int slot_red[LTC_SLOTS], sendw[LTC_WINDOW], recvw[LTC_RECV_AHEAD];
#define SEG(i) ltc_part(count, p, (i))
#define CHUNK(seg, j, lo, len)                                        \
  do {                                                                \
    int64_t s0 = SEG(seg), sl = SEG((seg) + 1) - s0;                  \
    lo = s0 + ltc_part(sl, m, (j));                                   \
    len = s0 + ltc_part(sl, m, (j) + 1) - lo;                         \
  } while (0)
  /* reduce-scatter: step s sends segment me-s, receives and adds me-s-1 */
  for (int s = 0; s < steps; s++) {
    int sseg = (me - s + p) % p, rseg = (me - s - 1 + p) % p;
    for (int j = 0; j < m; j++) {
      int k = s * m + j;
      int64_t slo, slen, rlo, rlen;
      CHUNK(sseg, j, slo, slen);
      CHUNK(rseg, j, rlo, rlen);
      int snd = ltc_task_add(S, T_SEND, right, ltc_tag(rs, k), buf + slo * es, NULL, slen,
                             s > 0 ? prev_red[j] : -1, k >= LTC_WINDOW ? sendw[k % LTC_WINDOW] : -1, -1);
      sendw[k % LTC_WINDOW] = snd;
      rs_send[k] = snd;
      char *tmp = scratch + (size_t)(k % LTC_SLOTS) * (size_t)chunk_elems * es;
      int rcv = ltc_task_add(S, T_RECV, left, ltc_tag(rs, k), tmp, NULL, rlen,
                             k >= LTC_SLOTS ? slot_red[k % LTC_SLOTS] : -1, -1, -1);
      int red = ltc_task_add(S, T_REDUCE, -1, 0, buf + rlo * es, tmp, rlen, rcv, -1, -1);
      slot_red[k % LTC_SLOTS] = red;
      prev_red[j] = red;
    }
  }
  /* allgather: step t forwards segment me+1-t, receives me-t in place */
  for (int t = 0; t < steps; t++) {
    int sseg = (me + 1 - t + p) % p, rseg = (me - t + p) % p;
    for (int j = 0; j < m; j++) {
      int k = t * m + j;
      int64_t slo, slen, rlo, rlen;
      CHUNK(sseg, j, slo, slen);
      CHUNK(rseg, j, rlo, rlen);
      int snd = ltc_task_add(S, T_SEND, right, ltc_tag(ag, k), buf + slo * es, NULL, slen,
                             t == 0 ? prev_red[j] : ag_recv[j], k >= LTC_WINDOW ? sendw[k % LTC_WINDOW] : -1, -1);
      sendw[k % LTC_WINDOW] = snd;
      /* the segment lands where our reduce-scatter send of step t read from */
      int rcv = ltc_task_add(S, T_RECV, left, ltc_tag(ag, k), buf + rlo * es, NULL, rlen, rs_send[k],
                             k >= LTC_RECV_AHEAD ? recvw[k % LTC_RECV_AHEAD] : -1, -1);
      recvw[k % LTC_RECV_AHEAD] = rcv;
      ag_recv[j] = rcv;
    }
  }
#undef SEG
#undef CHUNK
  free(prev_red);
  free(rs_send);
  free(ag_recv);
  return S->err ? -1 : 0;
}

int ltc_allreduce_ring(ltc_ctx *ctx, void *buf, int64_t count, int dtype, int64_t chunk)
{
  int p = ctx->size;
  int *ring = malloc((size_t)p * sizeof(int));
  if (!ring)
    return ltc_fail("ring: out of memory");
  for (int i = 0; i < p; i++)
    ring[i] = i;
  ltc_sched S;
  ltc_sched_init(&S, ctx, dtype);
  int64_t ce = chunk / (int64_t)S.esize;
  if (ce < 1)
    ce = 1;
  int rc = -1;
  char *scratch = ltc_scratch(ctx, ltc_ring_scratch(ce, S.esize));
  if (scratch) {
    rc = ltc_sched_ring(&S, buf, count, ce, ring, scratch, 0);
    if (rc == 0)
      rc = ltc_sched_run(&S, "allreduce ring");
  }
  ltc_sched_free(&S);
  free(ring);
  return rc;
}
