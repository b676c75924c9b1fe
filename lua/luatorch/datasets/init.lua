-- datasets: the training script's view of the data, fb.resnet.torch's DataLoader API
-- over luatorch's Python pipeline (pytorch_bridge.data: packed in-memory store or the
-- per-file loader, decode/augment workers, a ring of batch buffers).
--
--   local DataLoader = require 'luatorch.datasets'
--   local trainLoader, valLoader = DataLoader.create(opt, host)
--   trainLoader:epoch(e)
--   for n, sample in trainLoader:run() do  -- sample.input: FloatTensor BxCxHxW, sample.target: LongTensor (1-based)
--
-- The tensors view the pipeline's buffer without a copy and stay valid until the next
-- step of the loop. `host` is the Python object the launcher installs
-- (pytorch_bridge.host.TrainHost); Python methods are called with `.`, not `:`.
require 'torch'

local M = {}
local DataLoader = torch.class('luatorch.datasets.DataLoader', M)

function DataLoader.create(opt, host)
   host = host or require('luatorch.host') -- installed by `luatorch train` / `luatorch th`
   local function make(split)
      return M.DataLoader(host.loader(split, opt.batchSize, opt.nThreads, opt.manualSeed,
                                    opt.dataSource, opt.dataPolicy, opt.dataFill), split)
   end
   return make('train'), make('val')
end

function DataLoader:__init(handle, split)
   self.handle = handle
   self.split = split
   self.dataWait = 0
end

function DataLoader:size()
   return self.handle.size()
end

function DataLoader:epoch(e)
   self.handle.set_epoch(e)
end

-- Iterator over (n, {input=, target=}); self.dataWait accumulates the seconds spent
-- waiting for batches in this pass.
function DataLoader:run(maxIters)
   local handle = self.handle
   local timer = torch.Timer()
   local n = 0
   local limit = maxIters and maxIters > 0 and maxIters or math.huge
   self.dataWait = 0
   handle.start()
   return function()
      if n >= limit then
         handle.stop()
         return nil
      end
      timer:reset()
      local input, target = handle.next()
      self.dataWait = self.dataWait + timer:time().real
      if input == nil then return nil end
      n = n + 1
      return n, {input = input, target = target}
   end
end

M.create = DataLoader.create
return M
