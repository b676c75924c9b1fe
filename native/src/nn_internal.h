/* Helpers shared by the nn_*.c kernels (not part of the FFI surface).
 *
 * The kernel files are written once for a generic `real` and compiled for
 * float and double by including themselves twice (THNN's generic/ scheme):
 *
 *   #ifndef NN_GENERIC_PASS
 *   #include "nn_internal.h"
 *   #define NN_GENERIC_FILE "nn_x.c"
 *   #include "nn_generic.h"          // includes nn_x.c once per type
 *   ... type-independent entry points calling NN_FN(name, float|double) ...
 *   #else
 *   ... code using real, accreal, NN_(name), NN_GEMM ...
 *   #endif
 */
#ifndef NN_INTERNAL_H
#define NN_INTERNAL_H

#include "lt_internal.h"

#define NN_CAT_(a, b) a##_##b
#define NN_CAT(a, b) NN_CAT_(a, b)
#define NN_FN(name, type) NN_CAT(name, type)
/* Call the float or double instance of a generic function (TYPE is LT_FLOAT or LT_DOUBLE). */
#define NN_CALL(TYPE, name, ...) \
  (lt_host_type(TYPE) == LT_FLOAT ? NN_FN(name, float)(__VA_ARGS__) : NN_FN(name, double)(__VA_ARGS__))

/* Contiguous copies of non-contiguous inputs, owned by the call that made
 * them and released together:
 *   nn_copies cp = {0};
 *   const real *x = nn_contig(&cp, input);   // input's own data when contiguous
 *   ...
 *   return nn_copies_free(&cp, rc);                                        */
typedef struct nn_copies {
  int n;
  lt_tensor t[3];
} nn_copies;

static inline void *nn_contig(nn_copies *c, const lt_tensor *src) {
  if (lt_tensor_is_contiguous(src)) return lt_tensor_data(src);
  if (c->n == 3) {
    lt_fail("nn_contig: more than 3 copies in one call");
    return NULL;
  }
  lt_tensor *tmp = &c->t[c->n++];
  lt_tensor_init(tmp, src->type);
  if (lt_tensor_resize(tmp, src->ndim, src->size) || lt_tensor_copy(tmp, src)) return NULL;
  return lt_tensor_data(tmp);
}

static inline int nn_copies_free(nn_copies *c, int rc) {
  for (int i = 0; i < c->n; i++) lt_tensor_clear(&c->t[i]);
  c->n = 0;
  return rc;
}

/* Resize t to the shape of ref (contiguous). */
static inline int nn_resize_as(lt_tensor *t, const lt_tensor *ref) { return lt_tensor_resize(t, ref->ndim, ref->size); }

static inline int nn_resize1(lt_tensor *t, int64_t n) { return lt_tensor_resize(t, 1, &n); }

/* A float or double tensor; false for NULL too, which is what a Lua table passed where a tensor
 * belongs arrives as (its ._c is nil). */
static inline int nn_is_floating(const lt_tensor *t) {
  return t && (lt_host_type(t->type) == LT_FLOAT || lt_host_type(t->type) == LT_DOUBLE);
}

/* nn_is_floating, or a CudaHalfTensor in GPU memory: the kernels that send device tensors to native/cuda take it
 * where those have a Half instantiation (computing in float); the host kernels still refuse half. */
static inline int nn_is_floating_or_gpu_half(const lt_tensor *t) {
  return nn_is_floating(t) || (t && t->type == LT_CUDA_HALF && lt_tensor_is_device(t));
}

/* The tensors an exported kernel cannot start without (input, and gradOutput or target): a Lua table passed
 * where one belongs arrives as NULL (its ._c is nil), an error naming the first missing one, not a crash;
 * a tensor in device memory, an error naming it.
 * NN_NEED(input); NN_NEED(input, gradOutput); at the top of the kernel. */
static inline int nn_need(const char *fn, const char *an, const void *a, const char *bn, const void *b) {
  const char *missing = !a ? an : !b ? bn : NULL;
  if (missing) return lt_fail("%s: %s must be a tensor, got none (a table?)", fn, missing);
  /* these are host kernels: a tensor in GPU memory (cutorch's GPU backend) has no host address to read */
  const char *on_gpu = lt_tensor_is_device(a) ? an : lt_tensor_is_device(b) ? bn : NULL;
  return on_gpu ? lt_fail("%s: %s is in GPU memory, and this module has no GPU version (require 'cunn' for the "
                          "modules that have one); convert the module and its input with :float() to run it on the "
                          "CPU", fn, on_gpu) : 0;
}
#define NN_NEED_1(a) nn_need(__func__, #a, (a), #a, (a))
#define NN_NEED_2(a, b) nn_need(__func__, #a, (a), #b, (b))
#define NN_NEED_PICK(_1, _2, which, ...) which
#define NN_NEED(...) do { if (NN_NEED_PICK(__VA_ARGS__, NN_NEED_2, NN_NEED_1, _)(__VA_ARGS__)) return -1; } while (0)
/* The same presence check for the kernels that also take device tensors (and send them to cuda_nn.c). */
static inline int nn_given(const char *fn, const char *an, const void *a, const char *bn, const void *b) {
  const char *missing = !a ? an : !b ? bn : NULL;
  return missing ? lt_fail("%s: %s must be a tensor, got none (a table?)", fn, missing) : 0;
}
#define NN_GIVEN_1(a) nn_given(__func__, #a, (a), #a, (a))
#define NN_GIVEN_2(a, b) nn_given(__func__, #a, (a), #b, (b))
#define NN_GIVEN(...) do { if (NN_NEED_PICK(__VA_ARGS__, NN_GIVEN_2, NN_GIVEN_1, _)(__VA_ARGS__)) return -1; } while (0)

/* A tensor the call cannot do without (input, gradOutput, target, output, gradInput): NULL is an error. */
static inline int nn_check_given(const lt_tensor *t, int type, const char *fn, const char *what) {
  if (!t) return lt_fail("%s: %s must be a %sTensor, got none (a table?)", fn, what, lt_type_name(type));
  if (t->type != type)
    return lt_fail("%s: %s is a %sTensor, expected a %sTensor like input", fn, what, lt_type_name(t->type),
                   lt_type_name(type));
  return 0;
}

/* An optional tensor (NULL: absent) of the input's type. */
static inline int nn_check_float(const lt_tensor *t, int type, const char *fn, const char *what) {
  if (!t) return 0;
  if (t->type != type)
    return lt_fail("%s: %s is a %sTensor, expected a %sTensor like input", fn, what, lt_type_name(t->type),
                   lt_type_name(type));
  return 0;
}

/* A 1-D parameter vector (weight, bias, running stats) of n elements, any stride. */
static inline int nn_check_vec(const lt_tensor *t, int64_t n, int type, const char *fn, const char *what) {
  if (!t) return 0;
  if (nn_check_float(t, type, fn, what)) return -1;
  if (lt_tensor_nelement(t) != n)
    return lt_fail("%s: %s should have %lld elements, got %lld", fn, what, (long long)n,
                   (long long)lt_tensor_nelement(t));
  return 0;
}

/* Element stride of a vector that nn_check_vec accepted (its one non-1 dim). */
static inline int64_t nn_vec_stride(const lt_tensor *t) {
  for (int d = 0; d < t->ndim; d++)
    if (t->size[d] != 1) return t->stride[d];
  return 1;
}

#endif
