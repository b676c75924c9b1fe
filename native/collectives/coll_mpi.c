/* mpi: the MPI library's own MPI_Allreduce, the baseline. Counts beyond an
 * int are sent in int-sized pieces. */
#include "coll_internal.h"

#include <limits.h>

int ltc_allreduce_mpi(ltc_ctx *ctx, const void *sendbuf, void *recvbuf, int64_t count, int dtype)
{
  size_t es = ltc_esize(dtype);
  const int64_t piece = INT_MAX / 2;
  for (int64_t lo = 0; lo < count || (count == 0 && lo == 0); lo += piece) {
    int n = (int)(count - lo < piece ? count - lo : piece);
    const void *s = sendbuf ? (const char *)sendbuf + lo * es : MPI_IN_PLACE;
    int e = MPI_Allreduce(s, (char *)recvbuf + lo * es, n, ltc_mpi_type(dtype), MPI_SUM, ctx->comm);
    if (ltc_mpi_check(ctx, e, "allreduce mpi"))
      return -1;
    if (count == 0)
      break;
  }
  return 0;
}
