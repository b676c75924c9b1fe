/* rhd: Rabenseifner's allreduce, reduce-scatter by recursive halving then
 * allgather by recursive doubling. For p not a power of two, the first
 * 2*rem ranks pair up (rem = p - pof2): each even one hands its vector to
 * the odd one above it, sits out, and gets the result back at the end.
 * Every element is summed at exactly one rank and copied to the rest, so all
 * ranks hold bitwise the same result. */
#include "coll_internal.h"

int ltc_allreduce_rhd(ltc_ctx *ctx, void *vbuf, int64_t count, int dtype)
{
  int p = ctx->size, r = ctx->rank;
  int pof2 = 1;
  while (pof2 * 2 <= p)
    pof2 *= 2;
  int rem = p - pof2;
  ltc_sched S;
  ltc_sched_init(&S, ctx, dtype);
  size_t es = S.esize;
  char *buf = vbuf;
  char *tmp = ltc_scratch(ctx, (size_t)count * es);
  if (!tmp && count)
    return -1;
  int step = 0, last = -1, newrank;
  if (r < 2 * rem) {
    if (r % 2 == 0) {  /* hand over, then wait for the result */
      int s = ltc_task_add(&S, T_SEND, r + 1, ltc_tag(0, step), buf, NULL, count, -1, -1, -1);
      ltc_task_add(&S, T_RECV, r + 1, ltc_tag(1, 0), buf, NULL, count, s, -1, -1);
      newrank = -1;
    } else {
      int rv = ltc_task_add(&S, T_RECV, r - 1, ltc_tag(0, step), tmp, NULL, count, -1, -1, -1);
      last = ltc_task_add(&S, T_REDUCE, -1, 0, buf, tmp, count, rv, -1, -1);
      newrank = r / 2;
    }
  } else {
    newrank = r - rem;
  }
  step++;
  if (newrank >= 0) {
    int64_t lo[32], hi[32];   /* region held before each halving level */
    int sent[32];
    int64_t a = 0, b = count;
    int l = 0;
    for (int mask = pof2 >> 1; mask >= 1; mask >>= 1, l++, step++) {
      int pn = newrank ^ mask, peer = pn < rem ? pn * 2 + 1 : pn + rem;
      int64_t mid = a + (b - a) / 2;
      lo[l] = a;
      hi[l] = b;
      int64_t ka, kb, sa, sb;   /* keep [ka,kb), send [sa,sb) */
      if ((newrank & mask) == 0) {
        ka = a, kb = mid, sa = mid, sb = b;
      } else {
        ka = mid, kb = b, sa = a, sb = mid;
      }
      sent[l] = ltc_task_add(&S, T_SEND, peer, ltc_tag(0, step), buf + sa * es, NULL, sb - sa, last, -1, -1);
      int rv = ltc_task_add(&S, T_RECV, peer, ltc_tag(0, step), tmp, NULL, kb - ka, last, -1, -1);
      last = ltc_task_add(&S, T_REDUCE, -1, 0, buf + ka * es, tmp, kb - ka, rv, -1, -1);
      a = ka;
      b = kb;
    }
    /* doubling: walk the levels back, swapping the halves we own */
    for (int mask = 1; mask < pof2; mask <<= 1, step++) {
      l--;
      int pn = newrank ^ mask, peer = pn < rem ? pn * 2 + 1 : pn + rem;
      int64_t mid = lo[l] + (hi[l] - lo[l]) / 2;
      int64_t oa, ob;   /* the half the peer owns */
      if ((newrank & mask) == 0)
        oa = mid, ob = hi[l];
      else
        oa = lo[l], ob = mid;
      int s = ltc_task_add(&S, T_SEND, peer, ltc_tag(0, step), buf + a * es, NULL, b - a, last, -1, -1);
      int rv = ltc_task_add(&S, T_RECV, peer, ltc_tag(0, step), buf + oa * es, NULL, ob - oa, sent[l], last, -1);
      last = ltc_task_add(&S, T_REDUCE, -1, 0, buf, buf, 0, s, rv, -1);   /* join point */
      a = lo[l];
      b = hi[l];
    }
    if (r < 2 * rem)
      ltc_task_add(&S, T_SEND, r - 1, ltc_tag(1, 0), buf, NULL, count, last, -1, -1);
  }
  int rc = ltc_sched_run(&S, "allreduce rhd");
  ltc_sched_free(&S);
  return rc;
}
