/* lt_linalg: BLAS-level products (Torch7's dot, addmm, addmv, addr, baddbmm, addbmm).
 *
 * All of them compute r = beta * t + alpha * (product), Torch7's argument
 * order. t may be NULL: then r is resized to the product's shape and
 * overwritten (beta ignored), which is what mm/mv/bmm need. When t is given
 * and r is not t, r is resized like t and t is copied into it first. beta == 0
 * never reads t (as BLAS: NaNs in t do not propagate). All tensors share one
 * type; Float/Double go through OpenBLAS GEMM, integer types through plain
 * loops accumulating in int64. */

/* Sum of a[i] * b[i] over equal element counts (any shapes), in *out. */
int lt_dot(const lt_tensor *a, const lt_tensor *b, double *out);
/* r = beta * t + alpha * m1 @ m2  (m1: n x k, m2: k x m, t: n x m) */
int lt_addmm(lt_tensor *r, double beta, const lt_tensor *t, double alpha, const lt_tensor *m1, const lt_tensor *m2);
/* r = beta * t + alpha * mat @ vec  (mat: n x k, vec: k, t: n) */
int lt_addmv(lt_tensor *r, double beta, const lt_tensor *t, double alpha, const lt_tensor *mat, const lt_tensor *vec);
/* r = beta * t + alpha * vec1 (x) vec2  (outer product; t: size(vec1) x size(vec2)) */
int lt_addr(lt_tensor *r, double beta, const lt_tensor *t, double alpha, const lt_tensor *vec1, const lt_tensor *vec2);
/* r[b] = beta * t[b] + alpha * b1[b] @ b2[b]  (b1: B x n x k, b2: B x k x m) */
int lt_baddbmm(lt_tensor *r, double beta, const lt_tensor *t, double alpha, const lt_tensor *b1, const lt_tensor *b2);
/* r = beta * t + alpha * sum_b b1[b] @ b2[b]  (t: n x m) */
int lt_addbmm(lt_tensor *r, double beta, const lt_tensor *t, double alpha, const lt_tensor *b1, const lt_tensor *b2);
