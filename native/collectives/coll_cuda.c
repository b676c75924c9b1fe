/* Whether the MPI library in this process takes CUDA device memory in its
 * calls ("CUDA-aware"), as the library itself answers at run time. Not every
 * MPI has a query, and a library built without one must still load, so the
 * functions are looked up by name in the library that defines MPI_Init
 * instead of being linked:
 *   MPICH >= 4: MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &is_supported)
 *               (mpi.h; the answer follows its run-time GPU setting);
 *   Open MPI:   MPIX_Query_cuda_support() (mpi-ext.h; MPICH >= 4.1 has it too).
 * Libraries without either (MVAPICH2, older MPICH) are left to the caller
 * (pytorch_bridge.mpi: MV2_USE_CUDA, the LUATORCH_MPI_CUDA_AWARE override). */
#define _GNU_SOURCE
#include "coll_internal.h"

#include <stdio.h>

#ifndef LTC_SIMULATOR
#include <dlfcn.h>
#endif

int ltc_mpi_cuda_support(char *how, int cap)
{
#ifdef LTC_SIMULATOR   /* a simulated MPI has no device memory */
  snprintf(how, (size_t)cap, "a simulated MPI");
  return 0;
#else
  Dl_info info;
  void *libmpi = NULL;
  if (dladdr((void *)MPI_Init, &info) && info.dli_fname)
    libmpi = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  void *scope = libmpi ? libmpi : RTLD_DEFAULT;
  int answer = -1;
#ifdef MPIX_GPU_SUPPORT_CUDA   /* MPICH's header: the constant the query takes */
  int (*gpu_query)(int, int *) = (int (*)(int, int *))dlsym(scope, "MPIX_GPU_query_support");
  int supported = 0;
  if (gpu_query && gpu_query(MPIX_GPU_SUPPORT_CUDA, &supported) == MPI_SUCCESS) {
    answer = supported != 0;
    snprintf(how, (size_t)cap, "MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA) says %s", answer ? "yes" : "no");
  }
#endif
  if (answer < 0) {
    int (*cuda_query)(void) = (int (*)(void))dlsym(scope, "MPIX_Query_cuda_support");
    if (cuda_query) {
      answer = cuda_query() != 0;
      snprintf(how, (size_t)cap, "MPIX_Query_cuda_support() says %s", answer ? "yes" : "no");
    }
  }
  if (answer < 0)
    snprintf(how, (size_t)cap, "the MPI library has no query (MPIX_GPU_query_support, MPIX_Query_cuda_support)");
  if (libmpi)
    dlclose(libmpi);
  return answer;
#endif
}
