"""Where the CUDA libraries, CUDA's headers, our kernel sources and the kernel cache are.

Nothing here loads a library: it registers file names with the C layer (native/src/cuda_lib.c), which
dlopens each one the first time something needs it. The libraries come from NVIDIA's wheels
(`pip install 'luatorch[cuda]'` for CUDA 13, `'luatorch[cuda12]'` for CUDA 12), else from the system's
library path; `LUATORCH_CUDA_<NAME>` (DRIVER, RUNTIME, NVRTC, CUBLAS, CUDNN, NCCL) names a file instead.
The driver (libcuda.so.1) always comes with the GPU driver, never from a wheel.
"""
import glob
import importlib.util
import os

# C's library numbers (lt_cuda.h), and each library's file in NVIDIA's wheels: CUDA 13 wheels first
# (one nvidia/cu13/lib folder; cuDNN and NCCL in their own), then CUDA 12's (a folder per library).
LIBRARIES = {
    "driver": (0, ()),
    "runtime": (1, ("cu13/lib/libcudart.so.13", "cuda_runtime/lib/libcudart.so.12")),
    "nvrtc": (2, ("cu13/lib/libnvrtc.so.13", "cuda_nvrtc/lib/libnvrtc.so.12")),
    "cublas": (3, ("cu13/lib/libcublas.so.13", "cublas/lib/libcublas.so.12")),
    "cudnn": (4, ("cudnn/lib/libcudnn.so.9",)),
    "nccl": (5, ("nccl/lib/libnccl.so.2",)),
}
# CUDA's own headers that kernels include (cuda_fp16.h), in the runtime wheels
HEADER_DIRS = ("cu13/include", "cuda_runtime/include")
KERNEL_DIR, INCLUDE_DIRS, CACHE_DIR = 0, 1, 2


def _nvidia_roots():
    """The folders of the `nvidia` namespace package (one per site-packages that has NVIDIA wheels)."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    return list(spec.submodule_search_locations or []) if spec else []


def library_paths():
    """{name: file} for the libraries found: LUATORCH_CUDA_<NAME>, else a wheel's copy. Those not found
    are left to the C layer's default soname (the system's library path)."""
    roots = _nvidia_roots()
    found = {}
    for name, (_, wheel_files) in LIBRARIES.items():
        env = os.environ.get("LUATORCH_CUDA_" + name.upper())
        if env:
            found[name] = env
            continue
        for rel in wheel_files:
            hits = [os.path.join(r, rel) for r in roots if os.path.isfile(os.path.join(r, rel))]
            if hits:
                found[name] = hits[0]
                break
    return found


def include_dirs():
    """The folders holding CUDA's headers for NVRTC, of the same CUDA major as the NVRTC found."""
    roots = _nvidia_roots()
    nvrtc = library_paths().get("nvrtc", "")
    order = HEADER_DIRS if "cu13" in nvrtc or not nvrtc else HEADER_DIRS[::-1]
    return [os.path.join(r, d) for d in order for r in roots
            if os.path.isfile(os.path.join(r, d, "cuda_fp16.h"))]


def kernel_dir():
    """native/cuda of the source checkout, or of the installed package luatorch_native."""
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "native", "cuda")
    if os.path.isdir(here):
        return here
    spec = importlib.util.find_spec("luatorch_native")
    for root in (spec.submodule_search_locations or []) if spec else []:
        if os.path.isdir(os.path.join(root, "cuda")):
            return os.path.join(root, "cuda")
    return ""


def cache_dir():
    """LUATORCH_CUDA_CACHE (empty: no cache), else $XDG_CACHE_HOME/luatorch/cuda or ~/.cache/luatorch/cuda."""
    env = os.environ.get("LUATORCH_CUDA_CACHE")
    if env is not None:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "luatorch", "cuda")


def register(lib, ffi):
    """Tell the C layer where everything is (once per process, before any CUDA use; cheap: no loading)."""
    for name, path in library_paths().items():
        if not lib.lt_cuda_loaded(LIBRARIES[name][0]):
            lib.lt_cuda_set_library(LIBRARIES[name][0], path.encode())
    lib.lt_cuda_set_path(KERNEL_DIR, kernel_dir().encode())
    lib.lt_cuda_set_path(INCLUDE_DIRS, ":".join(include_dirs()).encode())
    lib.lt_cuda_set_path(CACHE_DIR, cache_dir().encode())


def describe(lib, ffi, load=True):
    """{name: (loaded, info)} for each library; load=True tries to load each (no driver is fine)."""
    out = {}
    for name, (which, _) in LIBRARIES.items():
        if load:
            lib.lt_cuda_require(which)
        out[name] = (bool(lib.lt_cuda_loaded(which)), ffi.string(lib.lt_cuda_library_info(which)).decode())
    return out



# cutorch's element types as the C core numbers them (LT_CUDA_BYTE .. LT_CUDA_HALF of lt_core.h), by the
# names the kernels use
CUDA_TYPES = {t: 8 + i for i, t in enumerate(["Byte", "Char", "Short", "Int", "Long", "Float", "Double", "Half"])}


def device_tensor(ffi, data, type_name, sizes, strides, offset=0, storage_elements=None):
    """(lt_tensor *, lt_storage *) of a Cuda type over memory at address data (a device pointer, or host
    memory standing in for one): the host layer's operand (native/src/cuda_ops.c). Keep both alive while the
    tensor is used; nothing is freed with them."""
    ty = CUDA_TYPES[type_name]
    if storage_elements is None:
        storage_elements = offset + 1 + sum((n - 1) * s for n, s in zip(sizes, strides)) if all(sizes) else offset
    st = ffi.new("lt_storage *", {"data": ffi.cast("void *", data), "size": storage_elements, "type": ty,
                                  "refcount": 1})
    t = ffi.new("lt_tensor *", {"storage": st, "type": ty, "ndim": len(sizes), "offset": offset})
    for d, (n, s) in enumerate(zip(sizes, strides)):
        t.size[d], t.stride[d] = n, s
    return t, st
