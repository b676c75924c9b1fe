-- `cunn` for luatorch: nn plus nn.DataParallelTable, whose "GPUs" are CPU
-- workers (each a pthread with its own LuaJIT state, see lua/threads).
require 'cutorch'   -- as in Torch7: cunn's modules run on cutorch's types
require 'nn'
cunn = cunn or {}
if not nn.DataParallelTable then
   dofile(package.searchpath('cunn.DataParallelTable', package.path))
end
return cunn
