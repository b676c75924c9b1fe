"""A LuaJIT state running luatorch's Torch7-compatible packages.

    rt = Runtime()
    t = rt.eval("torch.FloatTensor(2, 3):fill(1)")
    a = rt.to_numpy(t)            # zero-copy view of the tensor's storage
    u = rt.from_numpy(np.ones(4)) # zero-copy DoubleTensor over the array

One Runtime is one lua_State: use one per thread (lupa serialises calls into a
shared runtime). Lua errors raise LuaError with the Lua message and traceback.
"""
import os
import threading

import numpy as np
from lupa import luajit21

from pytorch_bridge import native

LUA_DIR = None


def lua_dir():
    """The folder holding the torch/nn/optim/... Lua packages."""
    global LUA_DIR
    if LUA_DIR is None:
        here = os.path.dirname(os.path.abspath(__file__))
        candidates = [os.path.join(os.path.dirname(here), "lua")]
        try:
            import importlib.util

            spec = importlib.util.find_spec("luatorch_lua")
            if spec and spec.submodule_search_locations:
                candidates += list(spec.submodule_search_locations)
        except ImportError:
            pass
        for c in candidates:
            if os.path.isfile(os.path.join(c, "torch", "init.lua")):
                LUA_DIR = c
                break
        else:
            raise RuntimeError("luatorch: cannot find the lua/ packages (looked in %s)" % ", ".join(candidates))
    return LUA_DIR


# Where Debian installs pure-Lua modules (lua-penlight's pl.*): searched after luatorch's own packages.
SYSTEM_LUA_DIRS = ("/usr/local/share/lua/5.1", "/usr/share/lua/5.1")


def package_path(default, extra_path=()):
    """require's search order, as under Torch7's th: the program's own files first (./?.lua,
    ./?/init.lua, relative to the current folder), then `extra_path`, luatorch's packages, the system's
    Lua module folders, and the rest of LuaJIT's default path."""
    dirs = [*extra_path, lua_dir()]
    entries = ["./?.lua", "./?/init.lua"]
    entries += [os.path.join(d, "?.lua") for d in dirs] + [os.path.join(d, "?", "init.lua") for d in dirs]
    entries += [os.path.join(d, pattern) for d in SYSTEM_LUA_DIRS for pattern in ("?.lua", "?/init.lua")]
    for entry in default.split(";"):
        if entry and entry not in entries:
            entries.append(entry)
    return ";".join(entries)


class LuaError(RuntimeError):
    """A Lua error: .lua_message is Lua's message, .lua_traceback its traceback, .lua_source the
    chunk name ('@' + full file name) of the function that raised it ('' when unknown)."""

    def __init__(self, message, traceback="", source=""):
        self.lua_message = message
        self.lua_traceback = traceback
        self.lua_source = source
        super().__init__(message + ("\n" + traceback if traceback else ""))


_NUMPY_TO_TYPE = {
    np.dtype(np.uint8): "Byte",
    np.dtype(np.int8): "Char",
    np.dtype(np.int16): "Short",
    np.dtype(np.int32): "Int",
    np.dtype(np.int64): "Long",
    np.dtype(np.float32): "Float",
    np.dtype(np.float64): "Double",
    np.dtype(np.float16): "Half",
}
_TYPE_TO_NUMPY = {v: k for k, v in _NUMPY_TO_TYPE.items()}

# Lua helpers of the bridge: protected calls with tracebacks, and the
# tensor <-> raw pointer conversions that zero-copy needs.
_BRIDGE_LUA = r"""
local ffi = require 'ffi'
local torch = require 'torch'
local C = torch.C
local B = {}

-- The message, the traceback, and the full chunk name of the function that
-- raised (messages and tracebacks shorten long file names).
local function handler(e)
   local msg = type(e) == 'string' and e or tostring(e)
   local info = debug.getinfo(2, 'S')
   return {msg, debug.traceback('', 2), info and info.source or ''}
end

local function pack(...) return {n = select('#', ...), ...} end

-- Run f(...) protected; returns true, results... (trailing nils kept) or
-- false, message, traceback, source of the raising function.
function B.pcall(f, ...)
   local res = pack(xpcall(f, handler, ...))
   if res[1] then return unpack(res, 1, res.n) end
   return false, res[2][1], res[2][2], res[2][3]
end

function B.exec(code, name)
   local f, err = loadstring(code, name)
   if not f then return false, err, '' end
   return B.pcall(f)
end

-- Adopt a C storage we hold one reference to, viewed as a tensor.
function B.wrapForeign(addr, tname, sizes, strides, offset)
   local ty = torch._types[tname] or torch._typesById[C['LT_' .. tname:upper()]]
   local s = ffi.cast('lt_storage*', addr)
   local storage = torch.getmetatable(ty.storagename)._wrap(s)
   local t = torch[tname .. 'Tensor']()
   if #sizes == 0 then return t end
   return t:set(storage, offset + 1, torch.LongStorage(sizes), torch.LongStorage(strides))
end

-- What numpy needs to view a tensor: storage address (retained + pinned
-- for the caller), type name, sizes, strides, offset.
function B.exportTensor(t)
   if not torch.isTensor(t) then error('a torch Tensor expected, got ' .. torch.type(t), 2) end
   local c = t._c
   local ty = torch._typesById[c.type]
   local sizes, strides = {}, {}
   for i = 0, c.ndim - 1 do
      sizes[i + 1] = tonumber(c.size[i])
      strides[i + 1] = tonumber(c.stride[i])
   end
   local s = c.storage
   if s ~= nil then
      C.lt_storage_retain(s)
      C.lt_storage_pin(s)
   end
   -- a Cuda tensor (host memory on this build) views as its host type's elements
   return tonumber(ffi.cast('uintptr_t', s)), ty.hostName or ty.name, sizes, strides, tonumber(c.offset)
end

return B
"""


class _HeldStorage:
    """Keeps a C storage alive (and pinned against resize) while this object lives: ptr was retained and
    pinned for it (exportTensor)."""

    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr

    def __del__(self):
        lib = native.lib
        if lib is not None and self.ptr is not None:
            lib.lt_storage_unpin(self.ptr)
            lib.lt_storage_release(self.ptr)
            self.ptr = None


class _StorageRef(_HeldStorage):
    """A host storage as numpy's array interface describes it, while numpy views it."""

    __slots__ = ("__array_interface__",)

    def __init__(self, ptr, interface):
        super().__init__(ptr)
        self.__array_interface__ = interface


class _DeviceArray(_HeldStorage):
    """A tensor in GPU memory as CUDA's array interface (version 3) describes it, for PyTorch, CuPy, Numba or
    pycuda to view without copying."""

    __slots__ = ("__cuda_array_interface__", "device")

    def __init__(self, ptr, interface, device):
        super().__init__(ptr)
        self.__cuda_array_interface__ = interface
        self.device = device


class Runtime:
    """One LuaJIT state with luatorch's packages on package.path and torch loaded."""

    def __init__(self, threads=None, extra_path=(), preload=None):
        """threads: torch.setnumthreads; extra_path: more folders for require; preload: {module:
        Lua source} installed in package.preload before torch loads (e.g. an instrumented torch.C)."""
        self.lua = luajit21.LuaRuntime(unpack_returned_tuples=True)
        self._thread = threading.get_ident()
        g = self.lua.globals()
        g.package.path = package_path(g.package.path, extra_path)
        g.package.loaded["torch.native_path"] = native.NATIVE_PATH
        make_loader = self.lua.eval("function(src, name) return function(...) "
                                    "return assert(loadstring(src, name))(...) end end")
        for name, source in (preload or {}).items():
            g.package.preload[name] = make_loader(source, "=" + name)
        self._bridge = self.lua.execute(_BRIDGE_LUA)
        self.torch = self.require("torch")
        if threads is not None:
            self.call(self.torch.setnumthreads, int(threads))

    # ------------------------------------------------------------ running Lua

    def _unwrap(self, res):
        native.drop_released_owners()
        if not isinstance(res, tuple):
            res = (res,)
        if res[0] is True:
            rest = res[1:]
            if len(rest) == 0:
                return None
            return rest[0] if len(rest) == 1 else rest
        raise LuaError(str(res[1]), str(res[2]) if len(res) > 2 and res[2] is not None else "",
                       str(res[3]) if len(res) > 3 and res[3] is not None else "")

    def execute(self, code, name="=(luatorch)"):
        """Run a chunk of Lua code; returns what it returns."""
        return self._unwrap(self._bridge.exec(code, name))

    def eval(self, expr):
        """Evaluate one Lua expression."""
        return self.execute("return " + expr, "=(eval)")

    def call(self, fn, *args):
        """Call a Lua function protected; errors become LuaError with a traceback."""
        return self._unwrap(self._bridge.pcall(fn, *args))

    def require(self, name):
        return self.call(self.lua.globals().require, name)

    @property
    def globals(self):
        return self.lua.globals()

    def table(self, *args, **kwargs):
        return self.lua.table(*args, **kwargs)

    def table_from(self, obj):
        """A Lua table from a Python dict or list (recursively)."""
        return self.lua.table_from(obj, recursive=True)

    # ------------------------------------------------------------ zero copy

    def from_numpy(self, array):
        """A torch.<Type>Tensor viewing `array`'s memory; the tensor keeps the array alive."""
        if not isinstance(array, np.ndarray):
            raise TypeError("from_numpy: numpy.ndarray expected, got %s" % type(array).__name__)
        dtype = array.dtype
        if dtype.byteorder not in ("=", "|") and dtype.newbyteorder("=") != dtype:
            raise ValueError("from_numpy: non-native byte order %s; use array.astype(array.dtype.newbyteorder('='))" % dtype)
        tname = _NUMPY_TO_TYPE.get(np.dtype(dtype.newbyteorder("=")))
        if tname is None:
            raise TypeError("from_numpy: dtype %s has no torch tensor type (uint8, int8, int16, int32, int64, "
                            "float16, float32, float64)" % dtype)
        if not array.flags.writeable:
            raise ValueError("from_numpy: the array is read-only; Lua tensors are writable (pass array.copy())")
        item = array.itemsize
        if any(s < 0 or s % item for s in array.strides):
            raise ValueError("from_numpy: negative or unaligned strides %s; pass np.ascontiguousarray(array)"
                             % (array.strides,))
        strides = [s // item for s in array.strides]
        extent = 1 + sum((n - 1) * s for n, s in zip(array.shape, strides)) if array.size else 0
        ctx = native.keep_alive(array)
        ptr = native.lib.lt_storage_new_foreign(
            getattr(native.lib, "LT_" + tname.upper()),
            native.ffi.cast("void *", array.ctypes.data), extent, native.RELEASE_OWNER, ctx)
        if ptr == native.ffi.NULL:
            native.forget_owner(ctx)
            native.check(-1)
        addr = int(native.ffi.cast("uintptr_t", ptr))
        sizes = self.lua.table(*array.shape) if array.size else self.lua.table()
        return self.call(self._bridge.wrapForeign, addr, tname, sizes, self.lua.table(*strides), 0)

    def cuda_array(self, tensor):
        """An object with `__cuda_array_interface__` (version 3) viewing a tensor in GPU memory (cutorch's GPU
        backend) without copying: torch.as_tensor(rt.cuda_array(t), device='cuda') or cupy.asarray(...) share
        its memory. `.device` is the CUDA device number (0-based). Our kernels run on each device's legacy
        default stream, so the interface names that stream (1): consumers on another stream wait for our work
        queued so far. The storage stays alive and cannot be resized while the object lives."""
        addr, tname, sizes, strides, offset = self.call(self._bridge.exportTensor, tensor)
        dtype = _TYPE_TO_NUMPY[tname]
        ptr = native.ffi.cast("lt_storage *", addr) if addr else None
        if ptr is None or not native.lib.lt_storage_is_device(ptr):
            if ptr is not None:
                native.lib.lt_storage_unpin(ptr)
                native.lib.lt_storage_release(ptr)
            raise ValueError("cuda_array: the tensor is not in GPU memory (%s); rt.to_numpy views host tensors"
                             % ("it has no storage" if ptr is None else "a host tensor"))
        shape = tuple(int(sizes[i + 1]) for i in range(len(sizes)))
        st = tuple(int(strides[i + 1]) * dtype.itemsize for i in range(len(strides)))
        contiguous = st == tuple(int(np.prod(shape[i + 1:])) * dtype.itemsize for i in range(len(shape)))
        data = int(native.ffi.cast("uintptr_t", ptr.data)) + offset * dtype.itemsize if ptr.size else 0
        iface = {"version": 3, "shape": shape, "typestr": dtype.str, "data": (data, False),
                 "strides": None if contiguous else st, "stream": 1}
        return _DeviceArray(ptr, iface, int(ptr.device))

    def to_numpy(self, tensor):
        """A numpy array viewing `tensor`'s storage without copying. While it lives, the
        storage stays alive and cannot be resized."""
        addr, tname, sizes, strides, offset = self.call(self._bridge.exportTensor, tensor)
        dtype = _TYPE_TO_NUMPY[tname]
        shape = tuple(int(sizes[i + 1]) for i in range(len(sizes)))
        st = tuple(int(strides[i + 1]) * dtype.itemsize for i in range(len(strides)))
        if not addr:
            return np.zeros(shape if shape else (0,), dtype)
        ptr = native.ffi.cast("lt_storage *", addr)
        if native.lib.lt_storage_is_device(ptr):   # GPU memory (cutorch's GPU backend) has no host address
            native.lib.lt_storage_unpin(ptr)
            native.lib.lt_storage_release(ptr)
            raise ValueError("to_numpy: the tensor is in GPU memory (%s elements); copy it to the host first: "
                             "rt.to_numpy(t:float())" % tname)
        if not shape:  # an empty tensor: nothing to view
            native.lib.lt_storage_unpin(ptr)
            native.lib.lt_storage_release(ptr)
            return np.zeros((0,), dtype)
        data = int(native.ffi.cast("uintptr_t", ptr.data)) + offset * dtype.itemsize
        iface = {"version": 3, "shape": shape, "strides": st, "typestr": dtype.str, "data": (data, False)}
        return np.asarray(_StorageRef(ptr, iface))
