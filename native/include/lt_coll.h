/* Collectives over MPI (native/collectives/): the MPI-free public interface.
 *
 * The library behind this header is built separately from the main luatorch
 * extension, with the mpicc of the MPI library that mpi4py loaded, so that
 * the rest of luatorch needs no MPI. The communicator comes from mpi4py as
 * the address of its MPI_Comm handle (MPI._addressof(comm)); the library
 * duplicates it for its own traffic. Python (cffi, ABI mode) and LuaJIT
 * (ffi.cdef) read this same text: plain declarations only.
 *
 * Functions that can fail return 0, or -1 with the message in ltc_errmsg(). */

typedef struct ltc_ctx ltc_ctx;
typedef struct ltc_req ltc_req;

/* Element types of the reductions (sum). */
enum { LTC_FLOAT = 0, LTC_DOUBLE = 1 };

/* Algorithms, selectable by name through ltc_algorithm_id(). */
enum {
  LTC_AUTO = 0,            /* cost model / calibration table picks one of the others */
  LTC_MPI = 1,             /* the MPI library's MPI_Allreduce */
  LTC_RING = 2,            /* chunked ring reduce-scatter + allgather */
  LTC_RHD = 3,             /* recursive halving + doubling (Rabenseifner), any rank count */
  LTC_TREE = 4,            /* pipelined binomial reduce + broadcast */
  LTC_MULTICOLOR = 5,      /* C colors, each a pipelined binary tree (C = 2: two-tree) */
  LTC_MULTICOLOR_RING = 6, /* C colors, each a pipelined ring, rotated and alternating direction */
  LTC_NALGORITHMS = 7
};

/* Version of this interface; the Python and Lua sides check it. */
int ltc_abi_version(void);

/* Context on a duplicate of the communicator whose MPI_Comm handle is stored
 * at comm_handle_addr. Collective over that communicator. timeout_s <= 0
 * uses the default (LUATORCH_MPI_TIMEOUT or 60 s). */
int ltc_create(const void *comm_handle_addr, double timeout_s, ltc_ctx **out);
int ltc_destroy(ltc_ctx *ctx);   /* collective; waits for pending requests */

int ltc_rank(ltc_ctx *ctx);
int ltc_size(ltc_ctx *ctx);
const char *ltc_library(ltc_ctx *ctx);  /* MPI_Get_library_version's first line */
int ltc_thread_level(ltc_ctx *ctx);     /* 0 single, 1 funneled, 2 serialized, 3 multiple */

/* Collective-op timeout in seconds (a stuck op prints who it waited for and
 * calls MPI_Abort). Mismatch checking: 1 (default) runs a small agreement
 * allreduce before each collective so that differing counts or types raise
 * on every rank. */
void ltc_set_timeout(ltc_ctx *ctx, double seconds);
double ltc_get_timeout(ltc_ctx *ctx);
void ltc_set_check(ltc_ctx *ctx, int on);

/* Algorithm names: "auto", "mpi", "ring", "rhd", "tree", "multicolor",
 * "multicolor_ring"; -1 if unknown. */
int ltc_algorithm_id(const char *name);
const char *ltc_algorithm_name(int id);

/* Allreduce (sum) of count elements. sendbuf NULL or == recvbuf: in place.
 * colors <= 0 and chunk_bytes <= 0 take the defaults. */
int ltc_allreduce(ltc_ctx *ctx, const void *sendbuf, void *recvbuf, int64_t count, int dtype,
                  int algorithm, int colors, int64_t chunk_bytes);

/* Non-blocking form: queued to the context's communication thread, which
 * runs requests in order. The buffers must stay untouched until the wait. */
int ltc_iallreduce(ltc_ctx *ctx, const void *sendbuf, void *recvbuf, int64_t count, int dtype,
                   int algorithm, int colors, int64_t chunk_bytes, ltc_req **out);
int ltc_test(ltc_req *req, int *done);  /* done = 1 when finished (error or not) */
int ltc_wait(ltc_req *req);             /* returns the request's status and frees it */

int ltc_broadcast(ltc_ctx *ctx, void *buf, int64_t nbytes, int root);
int ltc_barrier(ltc_ctx *ctx);

/* What auto would run for this size on this communicator. */
int ltc_choose(ltc_ctx *ctx, int64_t nbytes, int *algorithm, int *colors, int64_t *chunk_bytes);
/* Cost model (seconds, seconds/byte): alpha per message, beta per byte sent,
 * gamma per byte reduced. */
void ltc_set_model(ltc_ctx *ctx, double alpha, double beta, double gamma);
/* Measured table for auto: the best algorithm for messages of about
 * nbytes[i] bytes (sorted ascending). Replaces the model's choice. */
int ltc_set_table(ltc_ctx *ctx, int n, const int64_t *nbytes, const int *algorithms, const int *colors);

const char *ltc_errmsg(void);

/* Whether the MPI library takes CUDA device memory, by its own run-time
 * query: 1 yes, 0 no, -1 it has none; `how` (cap bytes) says which query
 * answered. Local (not collective); call after MPI_Init. */
int ltc_mpi_cuda_support(char *how, int cap);

/* "mpich" or "openmpi": the mpi.h this library was compiled against (their
 * MPI_Comm handles differ: an int for MPICH, a pointer for Open MPI). */
const char *ltc_mpi_family(void);

/* Shape of multicolor's tree for `color` of `colors` over p ranks: the parent
 * rank of `rank`, or -1 for the root (for tests and documentation). */
int ltc_multicolor_parent(int p, int colors, int color, int rank);
