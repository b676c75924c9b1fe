/* Core: element types, storages, tensors, errors, threads, BLAS loading. */

/* Element types, in Torch7's order of names. */
typedef enum lt_type {
  LT_BYTE = 0,   /* uint8_t  torch.ByteTensor  */
  LT_CHAR = 1,   /* int8_t   torch.CharTensor  */
  LT_SHORT = 2,  /* int16_t  torch.ShortTensor */
  LT_INT = 3,    /* int32_t  torch.IntTensor   */
  LT_LONG = 4,   /* int64_t  torch.LongTensor  */
  LT_FLOAT = 5,  /* float    torch.FloatTensor */
  LT_DOUBLE = 6, /* double   torch.DoubleTensor */
  LT_HALF = 7,   /* uint16_t torch.HalfTensor: IEEE binary16 bits; storage, copy and fill only (as Torch7 on CPU) */
  /* cutorch's types (torch.CudaByteTensor ... torch.CudaTensor, torch.CudaDoubleTensor, torch.CudaHalfTensor),
   * id = host id + 8. On a build without a GPU their elements are host memory, and the kernels run the
   * host type's code (lt_host_type in lt_internal.h); a real CUDA backend gives them device memory. */
  LT_CUDA_BYTE = 8, LT_CUDA_CHAR = 9, LT_CUDA_SHORT = 10, LT_CUDA_INT = 11, LT_CUDA_LONG = 12,
  LT_CUDA_FLOAT = 13, LT_CUDA_DOUBLE = 14, LT_CUDA_HALF = 15,
  LT_NTYPES = 16
} lt_type;

/* Storage flags. */
enum {
  LT_STORAGE_OWNED = 1,   /* data was allocated by us and is freed with the storage */
  LT_STORAGE_FOREIGN = 2, /* data belongs to someone else (numpy); release() is called at free */
  LT_STORAGE_MAPPED = 4   /* data is a view of another storage region (never resized or freed) */
};

/* A reference-counted, typed, flat buffer. Shared between LuaJIT states and
 * Python; refcount and pins are updated atomically. */
typedef struct lt_storage {
  void *data;
  int64_t size;          /* in elements */
  int32_t type;          /* lt_type */
  int32_t flags;
  int64_t refcount;
  int64_t pins;          /* live numpy views of this memory: resize refused while > 0 */
  void (*release)(void *ctx);  /* for FOREIGN storages: drops the owner */
  void *release_ctx;
  int32_t device;        /* with LT_STORAGE_DEVICE (lt_cuda_storage.h): the GPU (0-based) data is on */
  int32_t pad_;
} lt_storage;

/* A strided view of a storage. Dimensions beyond ndim are unused. Torch7 has
 * no dimension limit; 16 is far beyond any network here and keeps the struct
 * flat for FFI. offset is 0-based (Lua adds 1 for storageOffset()). */
typedef struct lt_tensor {
  lt_storage *storage;   /* may be NULL for an empty tensor */
  int64_t offset;
  int32_t ndim;
  int32_t type;          /* lt_type; equals storage->type when storage != NULL */
  int64_t size[16];
  int64_t stride[16];
} lt_tensor;

/* ---- errors --------------------------------------------------------------
 * Functions that can fail return 0 on success and -1 on error; the message
 * is kept per thread and read with lt_errmsg(). Lua and Python raise it. */
const char *lt_errmsg(void);
void lt_set_error(const char *msg);

/* ---- element types ---- */
int lt_elemsize(int type);
const char *lt_type_name(int type);   /* "Float", "Double", ... */

/* ---- storages ---- */
lt_storage *lt_storage_new(int type, int64_t size);        /* zero-filled; NULL + error if out of memory */
lt_storage *lt_storage_new_foreign(int type, void *data, int64_t size,
                                   void (*release)(void *ctx), void *ctx);
/* A release function for foreign storages whose owner lives in Python (a numpy array): it only records ctx,
 * and Python drops the owners it names when it next takes them (lt_foreign_take_released). The last release
 * of a storage can run in Lua's collector, in any thread: calling into Python there would need the GIL and
 * could not raise, so a Ctrl-C whose handler ran in that callback was lost. */
void lt_foreign_release_later(void *ctx);
int64_t lt_foreign_take_released(void **out, int64_t cap);  /* up to cap recorded handles; how many */
void lt_storage_retain(lt_storage *s);
void lt_storage_release(lt_storage *s);                     /* frees at refcount 0 */
int lt_storage_resize(lt_storage *s, int64_t size);         /* keeps contents; refuses foreign/pinned */
void lt_storage_pin(lt_storage *s);
void lt_storage_unpin(lt_storage *s);
int64_t lt_storage_refcount(lt_storage *s);
int lt_storage_fill(lt_storage *s, double value);
/* Copy n elements, converting types: dst[dst_off + i] = (dst type) src[src_off + i]. */
int lt_storage_copy(lt_storage *dst, int64_t dst_off, lt_storage *src, int64_t src_off, int64_t n);
void *lt_storage_data(lt_storage *s);

/* A storage over a memory-mapped file (Torch7's Storage(filename, shared, size, sharedMem)).
 * shared = 0: the file is read (it must hold size elements; size 0 = the whole file) into a private
 * copy-on-write mapping; shared = 1: mapped read-write and created/grown to size elements, writes reach
 * the file; sharedmem = 1 (with shared): `filename` names a POSIX shared-memory object (/dev/shm/NAME),
 * removed when the storage is freed. The storage cannot be resized. NULL + error on failure. */
lt_storage *lt_storage_new_mapped(int type, const char *filename, int shared, int sharedmem, int64_t size);

/* ---- half precision: IEEE 754 binary16 bits <-> float (round to nearest even) ---- */
float lt_half_to_float(uint16_t h);
uint16_t lt_float_to_half(float f);

/* Finalizers for the Lua handle structs, whose first member is an
 * lt_tensor (tensor handles) or an lt_storage* (storage handles). */
void lt_tensor_free_ref(void *ref);
void lt_storage_release_ref(void *ref);

/* ---- tensor geometry ----
 * Tensor structs are owned by their caller (Lua allocates them with ffi.new);
 * setting a storage retains it, lt_tensor_clear releases it. */
void lt_tensor_init(lt_tensor *t, int type);
void lt_tensor_clear(lt_tensor *t);                          /* drops storage, ndim = 0 */
int lt_tensor_set_storage(lt_tensor *t, lt_storage *s, int64_t offset,
                          int ndim, const int64_t *size, const int64_t *stride);  /* stride NULL => contiguous */
int lt_tensor_set(lt_tensor *t, const lt_tensor *src);       /* same storage and geometry */
/* Resize to ndim/size, contiguous strides; grows (never shrinks) the storage,
 * allocating one if needed. Refuses foreign storages that are too small. */
int lt_tensor_resize(lt_tensor *t, int ndim, const int64_t *size);
int64_t lt_tensor_nelement(const lt_tensor *t);
int lt_tensor_is_contiguous(const lt_tensor *t);
int lt_tensor_is_same_size(const lt_tensor *a, const lt_tensor *b);
/* Number of storage elements a view reaches (max offset + 1), 0 when empty. */
int64_t lt_tensor_extent(const lt_tensor *t);
void *lt_tensor_data(const lt_tensor *t);                    /* pointer to first element */

/* Copy any type to any type; shapes may differ but element counts must match
 * (Torch7's copy semantics, iteration in row-major order). */
int lt_tensor_copy(lt_tensor *dst, const lt_tensor *src);
int lt_tensor_fill(lt_tensor *t, double value);

/* ---- threads ---- */
void lt_set_num_threads(int n);
int lt_get_num_threads(void);

/* ---- BLAS (loaded at run time from scipy-openblas32) ---- */
int lt_blas_load(const char *path);          /* dlopen + resolve scipy_cblas_* */
int lt_blas_loaded(void);
const char *lt_blas_info(void);              /* library path and config */
/* Row-major GEMM on raw pointers: C = alpha * op(A) op(B) + beta * C. */
int lt_sgemm(int transA, int transB, int64_t m, int64_t n, int64_t k, float alpha,
             const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
int lt_dgemm(int transA, int transB, int64_t m, int64_t n, int64_t k, double alpha,
             const double *A, int64_t lda, const double *B, int64_t ldb, double beta, double *C, int64_t ldc);
/* lt_sgemm through oneDNN's sgemm (on our OpenMP threads) while oneDNN is loaded and enabled (default 1), or
 * through OpenBLAS (0); returns the previous setting. lt_dgemm is always OpenBLAS's. */
int lt_blas_use_onednn_sgemm(int on);
const char *lt_blas_sgemm_name(void);       /* "oneDNN" or "OpenBLAS": which one lt_sgemm uses now */

/* The cdef text of this header (without this declaration), embedded at build time. */
const char *lt_cdef_text(void);
