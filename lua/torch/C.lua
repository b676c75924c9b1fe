-- The native library, loaded once per LuaJIT state through the FFI.
--
-- The C declarations come from the library itself (lt_cdef_text, generated
-- at build time from native/include/luatorch.h), so Lua and Python always see
-- the same ones. The library path is put in package.loaded['torch.native_path']
-- by the Python host before `require 'torch'`; LUATORCH_NATIVE overrides it.
local ffi = require 'ffi'

local path = os.getenv('LUATORCH_NATIVE') or package.loaded['torch.native_path']
if type(path) ~= 'string' then
   error("luatorch: the native library path is not set; start Lua through pytorch_bridge.Runtime " ..
         "or set LUATORCH_NATIVE to the built pytorch_bridge/_native*.so", 2)
end

ffi.cdef 'const char *lt_cdef_text(void);'
local C = ffi.load(path)
ffi.cdef(ffi.string(C.lt_cdef_text()))

return C
