/* lt_index: Torch7's indexing kernels (TH indexSelect, indexCopy, indexAdd,
 * indexFill, gather, scatter, masked*, nonzero, cat).
 *
 * Conventions: dim is 0-based; index tensors are LongTensors holding 1-based
 * indices; masks are ByteTensors of 0/1. Every index and mask is validated
 * before anything is written, so a failing call leaves its destination
 * untouched. Result tensors (`dst`) are resized as Torch7 did (kept as they
 * are when they already have the right size) and may share storage with the
 * inputs. */

/* dst = src.index(dim, index): index is a 1-D LongTensor. */
int lt_index_select(lt_tensor *dst, const lt_tensor *src, int dim, const lt_tensor *index);
/* t.select(dim, index[i]) = src.select(dim, i) for each i. */
int lt_index_copy(lt_tensor *t, int dim, const lt_tensor *index, const lt_tensor *src);
/* t.select(dim, index[i]) += src.select(dim, i); duplicate indices accumulate. */
int lt_index_add(lt_tensor *t, int dim, const lt_tensor *index, const lt_tensor *src);
/* t.select(dim, index[i]) = value. */
int lt_index_fill(lt_tensor *t, int dim, const lt_tensor *index, double value);

/* dst has index's size; dst[..i..] = src[..index[..i..]..] along dim. */
int lt_gather(lt_tensor *dst, const lt_tensor *src, int dim, const lt_tensor *index);
/* t[..index[..i..]..] = src[..i..] along dim; with add != 0, += (scatterAdd). */
int lt_scatter(lt_tensor *t, int dim, const lt_tensor *index, const lt_tensor *src, int add);
int lt_scatter_fill(lt_tensor *t, int dim, const lt_tensor *index, double value);

/* dst = 1-D tensor of the elements of src where mask is 1 (row-major order). */
int lt_masked_select(lt_tensor *dst, const lt_tensor *src, const lt_tensor *mask);
int lt_masked_fill(lt_tensor *t, const lt_tensor *mask, double value);
/* Elements of t where mask is 1 take src's elements in row-major order. */
int lt_masked_copy(lt_tensor *t, const lt_tensor *mask, const lt_tensor *src);

/* dst (LongTensor) = N x ndim 1-based subscripts of the non-zero elements. */
int lt_nonzero(lt_tensor *dst, const lt_tensor *src);

/* Concatenate n tensors along dim (0-based; -1 = the last dimension).
 * Tensors with fewer dimensions count as having trailing size-1 dimensions;
 * empty tensors are skipped (TH catArray). */
int lt_cat(lt_tensor *dst, lt_tensor **inputs, int n, int dim);
