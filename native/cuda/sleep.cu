/* sleep.cu — keep a stream busy for a number of the device's clock cycles (cutorch._sleep, which cutorch's tests
 * use to hold a copy back while they check that nothing overtakes it).
 *
 *   lt_sleep(long long cycles)
 *
 * Launched as one thread: it reads clock64() until cycles have passed. The SIMT emulator's clock64() counts
 * nanoseconds of the host's steady clock, a 1 GHz device.
 */
#include "lt_cuda_common.cuh"

extern "C" __global__ void lt_sleep(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
LT_EXPORT(lt_sleep)
