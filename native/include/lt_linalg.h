/* lt_linalg: BLAS-level products (Torch7's dot, addmm, addmv, addr, baddbmm, addbmm) and LAPACK.
 *
 * The products compute r = beta * t + alpha * (product), Torch7's argument
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

/* ---- LAPACK (lapack.c), Float and Double ----
 * Torch7's argument order: results first, then inputs, then the character
 * options (one-letter strings). Result matrices come back column-major
 * (transposed contiguous) as in Torch7; a result tensor that is also the
 * input (torch.gesv(b, a, b, a)) is overwritten with the result. Vectors b
 * are solved as one-column matrices. */
/* A x = B: rb = x, ra = the LU factors of A. */
int lt_gesv(lt_tensor *rb, lt_tensor *ra, const lt_tensor *b, const lt_tensor *a);
/* Triangular A x = B; uplo 'U'/'L', trans 'N'/'T', diag 'N'/'U' (unit diagonal). */
int lt_trtrs(lt_tensor *rb, lt_tensor *ra, const lt_tensor *b, const lt_tensor *a, const char *uplo,
             const char *trans, const char *diag);
/* Least squares (m >= n) or minimum norm (m < n) solution of A x = B: rb = x (n rows), ra = A's QR/LQ factors. */
int lt_gels(lt_tensor *rb, lt_tensor *ra, const lt_tensor *b, const lt_tensor *a);
/* Symmetric eigenproblem: re = eigenvalues (ascending), rv = eigenvectors (jobz 'V') as columns. */
int lt_syev(lt_tensor *re, lt_tensor *rv, const lt_tensor *a, const char *jobz, const char *uplo);
/* General eigenproblem: re = n x 2 (real, imaginary parts), rv = right eigenvectors (jobvr 'V'). */
int lt_geev(lt_tensor *re, lt_tensor *rv, const lt_tensor *a, const char *jobvr);
/* A = U diag(S) V^T (LAPACK gesdd); jobu 'S' (U: m x k, V: n x k, k = min(m, n)) or 'A' (U: m x m, V: n x n). */
int lt_gesvd(lt_tensor *ru, lt_tensor *rs, lt_tensor *rv, const lt_tensor *a, const char *jobu);
/* ra = A^-1 (LU factorization). */
int lt_getri(lt_tensor *ra, const lt_tensor *a);
/* Cholesky factor of a symmetric positive definite A: A = U^T U (uplo 'U') or L L^T ('L'); the other triangle is zero. */
int lt_potrf(lt_tensor *ra, const lt_tensor *a, const char *uplo);
/* A x = B from A's Cholesky factor a (uplo as it was computed). */
int lt_potrs(lt_tensor *rb, const lt_tensor *b, const lt_tensor *a, const char *uplo);
/* A^-1 (full, symmetric) from A's Cholesky factor a. */
int lt_potri(lt_tensor *ra, const lt_tensor *a, const char *uplo);
/* Pivoted Cholesky of a positive semidefinite A: P^T A P = U^T U (or L L^T),
 * rpiv (IntTensor) the 1-based permutation, P[rpiv[k], k] = 1; tol < 0: LAPACK's default tolerance. */
int lt_pstrf(lt_tensor *ra, lt_tensor *rpiv, const lt_tensor *a, const char *uplo, double tol);
/* Householder QR: ra = R on and above the diagonal, the reflectors below; rtau = their scales. */
int lt_geqrf(lt_tensor *ra, lt_tensor *rtau, const lt_tensor *a);
/* Q (its first size(tau) columns) from geqrf's reflectors a and tau. */
int lt_orgqr(lt_tensor *ra, const lt_tensor *a, const lt_tensor *tau);
/* ra = op(Q) C (side 'L') or C op(Q) ('R'), op = identity ('N') or transpose ('T'), Q from geqrf's a, tau. */
int lt_ormqr(lt_tensor *ra, const lt_tensor *a, const lt_tensor *tau, const lt_tensor *c, const char *side,
             const char *trans);
/* A = Q R: rq = m x k with orthonormal columns, rr = k x n upper triangular, k = min(m, n). */
int lt_qr(lt_tensor *rq, lt_tensor *rr, const lt_tensor *a);
