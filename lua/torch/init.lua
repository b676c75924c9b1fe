-- luatorch's Torch7-compatible `torch` package.
--
-- Loading order: the native library, the class system, Storage and Tensor
-- types, then the method families that extend them (math, indexing, random,
-- printing, serialization). Each family lives in its own file and receives
-- the `torch` table as its argument.
local ffi = require 'ffi'
require 'luatorch.lua52'   -- the Lua 5.2 library of Torch7's LuaJIT build
require 'paths'            -- Torch7's torch loaded paths (a global) first

torch = torch or {}
local torch = torch
torch._VERSION = 'luatorch 0.1'

torch.C = require 'torch.C'

local function load(name)
   local path = package.searchpath('torch.' .. name, package.path)
   if not path then error('luatorch: cannot find torch.' .. name .. ' on package.path') end
   local chunk = assert(loadfile(path))
   return chunk(torch)
end
torch._loadpart = load

load 'class'
load 'utils'
load 'Storage'
load 'Tensor'
for _, part in ipairs {'TensorMath', 'TensorLinalg', 'TensorSort', 'random', 'TensorIndex',
                       'TensorPrint', 'Timer', 'Half', 'File', 'DiskFile', 'MemoryFile', 'serialize', 'CmdLine',
                       'Tester', 'TestSuite'} do
   if package.searchpath('torch.' .. part, package.path) then load(part) end
end
load 'TensorConv'

torch.setdefaulttensortype('torch.DoubleTensor')

-- torch.Cuda* stay in the class registry but leave the torch table until
-- `require 'cutorch'` puts them back (torch._enableCuda), as in Torch7.
torch._cudaClasses = {}
for _, ty in ipairs(torch._allTypes) do
   if ty.cuda then
      for _, name in ipairs {ty.name .. 'Tensor', ty.name .. 'Storage'} do
         torch._cudaClasses[name] = rawget(torch, name)
         rawset(torch, name, nil)
      end
   end
end

return torch
