"""pycuda views of luatorch's device tensors, in the context cutorch's GPU backend runs in.

    from pytorch_bridge import pycuda_views
    a = pycuda_views.gpuarray(rt, t)     # a pycuda.gpuarray.GPUArray over t's GPU memory: no copy
    a.get(); a.set(host)                 # pycuda's own copies read and write the tensor

pycuda is an optional extra (`pip install 'luatorch[pycuda]'`; it compiles against the CUDA toolkit's headers),
imported here only when first used. Our allocator and kernels run in each device's *primary* context
(native/src/cuda_device.c), so pycuda must too: `pycuda.autoinit` would make a context of its own, in which our
pointers are not valid. `primary_context(device)` retains the device's primary context through pycuda and makes
it current on the calling thread (once per thread and device; a later call for another device switches)."""
import atexit
import threading

_local = threading.local()


def _pycuda():
    try:
        import pycuda.driver as driver
        import pycuda.gpuarray as gpuarray
    except ImportError as e:
        raise ImportError("pycuda is not installed: pip install 'luatorch[pycuda]' (it builds from source against "
                          "the CUDA toolkit's headers and libcuda)") from e
    driver.init()
    return driver, gpuarray


def primary_context(device=0):
    """pycuda's handle on `device`'s primary context (0-based, as CUDA numbers devices), current on this thread
    from now on, as pycuda.autoinit makes its own context current; popped at exit on the main thread (pycuda
    aborts at exit over a context left on its stack), by `release()` on the others."""
    driver, _ = _pycuda()
    held = getattr(_local, "contexts", None)
    if held is None:
        held = _local.contexts = {}
        if threading.current_thread() is threading.main_thread():
            atexit.register(release)
    ctx = held.get(device)
    if ctx is None:
        ctx = held[device] = driver.Device(device).retain_primary_context()
    if getattr(_local, "current", None) != device:
        if getattr(_local, "current", None) is not None:
            driver.Context.pop()
        ctx.push()
        _local.current = device
    return ctx


def release():
    """Pop the primary context `primary_context` made current on this thread (a thread that used pycuda views
    calls it before it ends)."""
    if getattr(_local, "current", None) is not None:
        import pycuda.driver as driver

        driver.Context.pop()
        _local.current = None


def gpuarray(rt, tensor):
    """A pycuda GPUArray over `tensor`'s GPU memory (cutorch's GPU backend), sharing it: writes through either
    are seen by the other. Its shape, dtype and byte strides are the tensor's; the tensor's storage stays alive
    and cannot be resized while the array lives. Our kernels run on each device's legacy default stream, so
    pycuda's default-stream work is ordered after them."""
    _, gpuarray_module = _pycuda()
    view = rt.cuda_array(tensor)
    iface = view.__cuda_array_interface__
    primary_context(view.device)
    import numpy as np

    dtype = np.dtype(iface["typestr"])
    return gpuarray_module.GPUArray(iface["shape"], dtype, gpudata=iface["data"][0], strides=iface["strides"],
                                    base=view)
