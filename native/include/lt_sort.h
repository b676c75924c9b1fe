/* lt_sort: sorting, selection and scans along one dimension (dim is 0-based).
 *
 * Order: NaN compares above every number (TH's GT_OR_NAN), and equal values
 * keep their original order (ties are broken by index, in both directions),
 * so results are deterministic. Index outputs are LongTensors holding 1-based
 * positions along dim. values/indices are resized like Torch7's results. */

/* values, indices = t sorted along dim (ascending unless descending). */
int lt_sort(lt_tensor *values, lt_tensor *indices, const lt_tensor *t, int dim, int descending);
/* The k smallest (largest != 0: largest) elements along dim; sorted != 0
 * orders them (smallest first, or largest first), else their order is the
 * selection's. values/indices get size k along dim. */
int lt_topk(lt_tensor *values, lt_tensor *indices, const lt_tensor *t, int64_t k, int dim, int largest, int sorted);
/* The k-th smallest element along dim (k is 1-based); results keep dim with size 1. */
int lt_kthvalue(lt_tensor *values, lt_tensor *indices, const lt_tensor *t, int64_t k, int dim);
/* The most frequent value along dim and its last position (the smallest of
 * equally frequent values); results keep dim with size 1. */
int lt_mode(lt_tensor *values, lt_tensor *indices, const lt_tensor *t, int dim);
/* Cumulative sum / product along dim, accumulated in double (floating types)
 * or 64-bit integers (integer types) as TH's accreal. r may be t. */
int lt_cumsum(lt_tensor *r, const lt_tensor *t, int dim);
int lt_cumprod(lt_tensor *r, const lt_tensor *t, int dim);
