/* Helpers shared by the index kernels (index*.c). Not part of the FFI surface. */
#ifndef LT_INDEX_INTERNAL_H
#define LT_INDEX_INTERNAL_H
#include "lt_internal.h"

int lt_ix_same_storage(const lt_tensor *a, const lt_tensor *b);
/* Torch7's resize: a tensor that already has the size keeps its strides. */
int lt_ix_resize(lt_tensor *t, int ndim, const int64_t *size);
/* Resize dst like tmp, copy tmp into it, clear tmp. */
int lt_ix_take_result(lt_tensor *dst, lt_tensor *tmp);
/* x, or a copy of x in *tmp (initialised here; clear it after) when x shares
 * storage with t. NULL on allocation failure. */
const lt_tensor *lt_ix_detach(const lt_tensor *x, const lt_tensor *t, lt_tensor *tmp);
int lt_ix_check_long(const char *op, const lt_tensor *index);
/* All elements of the LongTensor index in [1, n] (n is the size of dimension dim). */
int lt_ix_check_range(const char *op, const lt_tensor *index, int64_t n, int dim);
/* mask is a ByteTensor of n elements, all 0 or 1; *ones (if not NULL) gets the count of ones. */
int lt_ix_check_mask(const char *op, const lt_tensor *mask, int64_t n, int64_t *ones);
/* A borrowed view (no reference taken) of t narrowed to [i, i + n) along dim. */
lt_tensor lt_ix_narrow(const lt_tensor *t, int dim, int64_t i, int64_t n);

#endif
