-- cutorch's kernels: our CUDA C sources (native/cuda/*.cu, see its README)
-- compiled by NVRTC into a CUBIN for one GPU architecture, through the
-- on-disk cache (native/src/cuda_lib.c, cuda_device.c). Needs NVRTC and CUDA's headers
-- (pip install 'luatorch[cuda]'), never a GPU: a CUBIN for any architecture
-- can be made anywhere, which is how CI checks that every kernel compiles.
--
-- The headers of native/cuda (*.cuh) go to NVRTC in memory, so the cache key
-- covers them as well as each source, the options and NVRTC's version.
require 'torch'
local ffi = require 'ffi'
local C = torch.C

local kernels = {}

local KERNEL_DIR = 0   -- lt_cuda_path: the kernel folder

local function lastError() return ffi.string(C.lt_errmsg()) end

local function namesIn(dir, suffix)
   local names = {}
   for _, name in ipairs(require('paths').dir(dir) or {}) do
      if name:sub(-#suffix) == suffix then names[#names + 1] = name end
   end
   table.sort(names)
   return names
end

-- The folder of the kernel sources (registered by the Python bridge).
function kernels.dir()
   local dir = ffi.string(C.lt_cuda_path(KERNEL_DIR))
   if dir == '' then
      error('cutorch.kernels: the kernel sources (native/cuda) are not found: reinstall luatorch', 2)
   end
   return dir
end

-- The kernel files, sorted: {'copy.cu', ...}.
function kernels.files() return namesIn(kernels.dir(), '.cu') end

-- The architecture name of a compute capability: 9, 0 -> 'sm_90'.
function kernels.arch(major, minor) return string.format('sm_%d%d', major, minor) end

-- Compile one kernel file for arch, as the GPU launcher does (one
-- implementation: lt_cuda_kernel_image in native/src/cuda_device.c: the
-- .cuh headers in memory, C++17, CUDA's headers, no fast-math). opt.cache: false for no cache, or a folder
-- (default: the registered one, where '' means none).
-- Returns the image (a Lua string), whether it came from the cache, seconds.
function kernels.compile(file, arch, opt)
   opt = opt or {}
   local cache = opt.cache
   if cache == false then cache = '' end
   local image, len, fromCache = ffi.new('char *[1]'), ffi.new('int64_t[1]'), ffi.new('int[1]')
   local t0 = torch.Timer and torch.Timer() or nil
   if C.lt_cuda_kernel_image(file, arch, cache, image, len, fromCache) ~= 0 then
      error('cutorch.kernels: ' .. lastError(), 2)
   end
   local out = ffi.string(image[0], len[0])
   C.lt_cuda_free(image[0])
   return out, fromCache[0] == 1, t0 and t0:time().real or 0
end

-- The kernel names in a CUBIN image (an ELF file: each __global__ function
-- has a section named .text.NAME), sorted: what cuModuleGetFunction finds.
function kernels.entries(image)
   local function u(at, n)   -- little-endian unsigned of n bytes at 0-based offset at
      local v = 0
      for i = n, 1, -1 do v = v * 256 + image:byte(at + i) end
      return v
   end
   if #image < 64 or image:sub(1, 4) ~= '\127ELF' or image:byte(5) ~= 2 then
      error('cutorch.kernels.entries: not a 64-bit ELF CUBIN', 2)
   end
   local shoff, shentsize, shnum, shstrndx = u(0x28, 8), u(0x3A, 2), u(0x3C, 2), u(0x3E, 2)
   local function section(i)
      local base = shoff + i * shentsize
      return u(base, 4), u(base + 0x18, 8)
   end
   local _, strings = section(shstrndx)
   local names = {}
   for i = 0, shnum - 1 do
      local at = strings + section(i)
      local name = image:sub(at + 1, (image:find('\0', at + 1, true) or #image + 1) - 1)
      if name:sub(1, 6) == '.text.' then names[#names + 1] = name:sub(7) end
   end
   table.sort(names)
   return names
end

-- Compile every kernel file for each architecture in archs ({'sm_75', ...}).
-- progress(done, total, record), if given, is called after each one.
-- Returns the records {file=, arch=, bytes=, cached=, seconds=, kernels={names}} in order.
function kernels.compileAll(archs, opt, progress)
   local files = kernels.files()
   if #files == 0 then error('cutorch.kernels: no kernel sources in ' .. kernels.dir(), 2) end
   local records, total = {}, #files * #archs
   for _, arch in ipairs(archs) do
      for _, file in ipairs(files) do
         local image, cached, seconds = kernels.compile(file, arch, opt)
         local record = {file = file, arch = arch, bytes = #image, cached = cached, seconds = seconds,
                         kernels = arch:sub(1, 3) == 'sm_' and kernels.entries(image) or {}}
         records[#records + 1] = record
         if progress then progress(#records, total, record) end
      end
   end
   return records
end

return kernels
