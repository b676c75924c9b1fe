-- `cunn` for luatorch: nn plus nn.DataParallelTable, whose "GPUs" are CPU
-- workers (each a pthread with its own LuaJIT state, see lua/threads); on cutorch's
-- GPU backend, also the GPU versions of nn's modules that have one (cunn/gpu.lua).
require 'cutorch'   -- as in Torch7: cunn's modules run on cutorch's types
require 'nn'
cunn = cunn or {}
if not nn.DataParallelTable then
   dofile(package.searchpath('cunn.DataParallelTable', package.path))
end
-- module:cudaDouble() and module:cudaHalf(), as cunn added them to nn.Module (:cuda() is nn's own)
local Module = torch.getmetatable('nn.Module')
rawset(Module, 'cudaDouble', function(self) return self:type('torch.CudaDoubleTensor') end)
if cutorch.hasHalf then rawset(Module, 'cudaHalf', function(self) return self:type('torch.CudaHalfTensor') end) end
-- on cutorch's GPU backend: GPU versions of nn's modules that have one (once per Lua state)
if cutorch.backend == 'gpu' and not cunn._gpu then
   cunn._gpu = true
   dofile(package.searchpath('cunn.gpu', package.path))
end
-- half precision for the modules with kernels of their own (both backends; once per Lua state)
if not cunn._halfThroughFloat then dofile(package.searchpath('cunn.half', package.path)) end
return cunn
