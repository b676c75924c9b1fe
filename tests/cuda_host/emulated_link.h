/* How the emulated libraries (cuBLAS, NCCL, cuDNN) reach the emulated driver the C layer has already loaded
 * (LUATORCH_CUDA_DRIVER): its current device, whether a pointer is in a device's guarded arena, and the switch
 * that opens a device's memory to the host for the duration of a library call, as a kernel launch does. Each
 * is NULL where the driver is not the emulated one. */
#ifndef EMULATED_LINK_H
#define EMULATED_LINK_H
#include <dlfcn.h>
#include <stdlib.h>

static int (*emu_current_device)(void);
static int (*emu_device_of)(unsigned long long);
static void (*emu_access_current)(int);
static void (*emu_access_device)(int, int);
static void (*emu_stream_flush)(int, void *);

static void find_driver(void) {
  static int looked;
  if (looked) return;
  const char *path = getenv("LUATORCH_CUDA_DRIVER");
  void *driver = path ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) : NULL;
  emu_current_device = driver ? (int (*)(void))dlsym(driver, "emulated_current_device") : NULL;
  emu_device_of = driver ? (int (*)(unsigned long long))dlsym(driver, "emulated_device_of") : NULL;
  emu_access_current = driver ? (void (*)(int))dlsym(driver, "emulated_device_access") : NULL;
  emu_access_device = driver ? (void (*)(int, int))dlsym(driver, "emulated_access_device") : NULL;
  emu_stream_flush = driver ? (void (*)(int, void *))dlsym(driver, "emulated_stream_flush") : NULL;
  looked = 1;
}

/* A library call's work "on the device": device dev's memory opened (1) or closed again (0). Opening first runs
 * what is queued on the call's stream (NULL: dev's legacy stream), since the emulated driver's streams run lazily and
 * the call runs at once, in its stream's order. */
static void emu_device_work(int dev, void *stream, int open) {
  find_driver();
  if (open && emu_stream_flush) emu_stream_flush(dev, stream);
  if (emu_access_device) emu_access_device(dev, open);
}

/* LT_EMULATED_CUDA_NOEXEC=1: launches and library calls make every check, then skip the arithmetic (copies still
 * move bytes). Values are garbage; what remains is the host's own cost per call (`luatorch bench cuda --host-only`). */
static int emu_noexec(void) {
  static int v = -1;
  if (v < 0) {
    const char *e = getenv("LT_EMULATED_CUDA_NOEXEC");
    v = e && *e && e[0] != '0';
  }
  return v;
}

#endif
