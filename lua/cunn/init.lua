-- `cunn` for luatorch: nn plus nn.DataParallelTable, whose "GPUs" are CPU
-- workers (each a pthread with its own LuaJIT state, see lua/threads).
require 'nn'
cunn = cunn or {}
if not nn.DataParallelTable then
   dofile(package.searchpath('cunn.DataParallelTable', package.path))
end
return cunn
