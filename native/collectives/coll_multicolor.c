/* multicolor: the buffer is cut into C colors (64-byte aligned slices, the
 * last one takes the rest) and every color is allreduced along its own
 * pipelined schedule, all colors progressing together in one schedule.
 *
 * Trees: color c is an in-order binary tree over positions 1..p whose ranks
 * are permuted per color. In an in-order tree every leaf has an odd
 * position, so interior nodes are the even positions (0-based: odd ranks).
 * Color 1 mirrors the ranks (p even) or shifts them by one (p odd), which
 * turns the interior ranks of color 0 into leaves: the two-tree
 * construction, where every rank is interior in at most one of the two
 * trees and both trees together use every rank's links both ways. Further
 * color pairs are rotated by ceil(p / pairs) so their roots and interiors
 * land elsewhere.
 *
 * Rings: color c runs a ring rotated by c*ceil(p/C), odd colors in the
 * opposite direction, so every rank sends to both neighbours at once. */
#include "coll_internal.h"

#include <stdlib.h>

/* Parent of position x (1-based) in the infinite in-order binary tree: the
 * node one level up, whose lowest set bit is twice x's. */
static int inorder_up(int x)
{
  int b = x & -x;
  return (x | (2 * b)) & ~b;
}

/* Parent position of x in the in-order tree over 1..p (0 for the root): walk
 * up past nodes beyond p, which have no right subtree there. */
static int inorder_parent(int x, int p)
{
  int root = 1;
  while (root * 2 <= p)
    root *= 2;
  if (x == root)
    return 0;
  int y = inorder_up(x);
  while (y > p)
    y = inorder_up(y);
  return y;
}

/* Rank at tree position pos (0-based) for color c of C. */
static int color_rank(int pos, int c, int C, int p)
{
  int pairs = (C + 1) / 2;
  int shift = (c / 2) * ((p + pairs - 1) / pairs);
  int q = pos;
  if (c % 2 == 1)
    q = p % 2 == 0 ? p - 1 - pos : (pos + 1) % p;
  return (q + shift) % p;
}

int ltc_multicolor_parent(int p, int colors, int color, int rank)
{
  for (int pos = 0; pos < p; pos++)
    if (color_rank(pos, color, colors, p) == rank) {
      int up = inorder_parent(pos + 1, p);
      return up ? color_rank(up - 1, color, colors, p) : -1;
    }
  return -1;
}

int ltc_allreduce_multicolor(ltc_ctx *ctx, void *vbuf, int64_t count, int dtype, int colors, int64_t chunk,
                             int rings)
{
  int p = ctx->size, C = colors;
  ltc_sched S;
  ltc_sched_init(&S, ctx, dtype);
  size_t es = S.esize;
  int64_t ce = chunk / (int64_t)es;
  if (ce < 1)
    ce = 1;
  int64_t align = 64 / (int64_t)es;
  int64_t per = count / C / align * align;
  int *pos_rank = malloc((size_t)p * sizeof(int));
  int *rank_pos = malloc((size_t)p * sizeof(int));
  if (!pos_rank || !rank_pos) {
    free(pos_rank);
    free(rank_pos);
    return ltc_fail("multicolor: out of memory");
  }
  size_t one = rings ? ltc_ring_scratch(ce, es) : ltc_tree_scratch(2, ce, es);
  char *scratch = ltc_scratch(ctx, one * (size_t)C);
  int rc = scratch ? 0 : -1;
  char *buf = vbuf;
  for (int c = 0; c < C && rc == 0; c++) {
    int64_t lo = per * c, n = c == C - 1 ? count - lo : per;
    if (n == 0)
      continue;
    char *cs = scratch + one * (size_t)c;
    if (rings) {
      int shift = c * ((p + C - 1) / C);
      for (int i = 0; i < p; i++)
        pos_rank[i] = c % 2 ? ((shift - i) % p + p) % p : (shift + i) % p;
      rc = ltc_sched_ring(&S, buf + lo * es, n, ce, pos_rank, cs, c);
      continue;
    }
    for (int i = 0; i < p; i++) {
      pos_rank[i] = color_rank(i, c, C, p);
      rank_pos[pos_rank[i]] = i;
    }
    int me = rank_pos[ctx->rank] + 1;   /* 1-based tree position */
    int up = inorder_parent(me, p);
    int parent = up ? pos_rank[up - 1] : -1;
    int children[2], nc = 0;
    for (int x = 1; x <= p; x++)   /* in position order: left child first */
      if (x != me && nc < 2 && inorder_parent(x, p) == me)
        children[nc++] = pos_rank[x - 1];
    rc = ltc_sched_tree(&S, buf + lo * es, n, ce, parent, children, nc, cs, c);
  }
  if (rc == 0)
    rc = ltc_sched_run(&S, rings ? "allreduce multicolor_ring" : "allreduce multicolor");
  ltc_sched_free(&S);
  free(pos_rank);
  free(rank_pos);
  return rc;
}
