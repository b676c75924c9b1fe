-- The training and validation loops of fb.resnet.torch (train.lua), data-parallel over
-- MPI ranks: each rank runs its share of the global batch (through a DataParallelTable
-- when it has several devices), the flat gradient is summed across ranks by `mpi` and
-- divided by the rank count, and every rank applies the same optim.sgd step, so the
-- parameters stay bitwise equal everywhere.
--
-- Loss and gradient semantics: each rank's criterion averages over its own samples;
-- the average of the per-rank averages is the average over the global batch (equal
-- per-rank batches), hence allreduce(sum) / world.
require 'nn'
require 'optim'

local M = {}
local Trainer = torch.class('luatorch.train.Trainer', M)

function Trainer:__init(model, criterion, opt, optimState, comm)
   self.model = model
   self.criterion = criterion
   self.opt = opt
   self.comm = comm
   self.world = comm and comm.size() or 1
   self.optimState = optimState or {
      learningRate = opt.LR,
      learningRateDecay = 0.0,
      momentum = opt.momentum,
      nesterov = opt.nesterov,
      dampening = 0.0,
      weightDecay = opt.weightDecay,
   }
   self.params, self.gradParams = model:getParameters()
   self.onGpu = torch._onDevice(self.params)
   -- the paper's DataParallelTable: one job per device per step (forwardBackward), and the
   -- inter-rank allreduce started per gradient bucket while the backward pass still runs
   self.dpt = torch.type(model) == 'nn.DataParallelTable' and model or nil
   self.fused = self.dpt and opt.dpt == 'optimized' and self.dpt.forwardBackward ~= nil
   if self.fused and comm and self.world > 1 then
      self.dpt:allreduceGradients(comm, {mpi = {algorithm = opt.allreduce, colors = opt.colors}})
      self.overlapped = true
   end
   self.bn = model:findModules('nn.SpatialBatchNormalization')
   for _, m in ipairs(model:findModules('nn.BatchNormalization')) do self.bn[#self.bn + 1] = m end
end

-- The learning rate for iteration `iter` (1-based) of `nIters` in `epoch`.
function Trainer:learningRate(epoch, iter, nIters)
   local opt = self.opt
   local base = opt.LR
   if opt.lrScaling == 'linear' then base = base * opt.batchSize / 256 end
   local decay
   if opt.schedule == 'default' then
      if opt.dataset == 'imagenet' then
         decay = math.floor((epoch - 1) / 30)
      elseif opt.dataset == 'cifar10' or opt.dataset == 'cifar100' then
         decay = epoch >= 122 and 2 or epoch >= 81 and 1 or 0
      else
         decay = 0
      end
   else
      local steps = opt.schedule == 'goyal' and '30,60,80' or opt.schedule:match('^step:(.+)$')
      if not steps then error('unknown -schedule ' .. opt.schedule, 0) end
      decay = 0
      for e in steps:gmatch('[^,]+') do
         if epoch > tonumber(e) then decay = decay + 1 end
      end
   end
   local lr = base * math.pow(0.1, decay)
   if opt.warmupEpochs > 0 and epoch <= opt.warmupEpochs then
      -- Goyal et al.: from the unscaled rate to the scaled one, linearly per iteration
      local progress = ((epoch - 1) + (iter - 1) / math.max(1, nIters)) / opt.warmupEpochs
      lr = opt.LR + (lr - opt.LR) * progress
   end
   return lr
end

function Trainer:computeScore(output, target)
   local batchSize = output:size(1)
   local nClasses = self.opt.nClasses > 0 and self.opt.nClasses or output:size(2)
   if output:size(2) > nClasses then output = output:narrow(2, 1, nClasses) end -- GoogLeNet's aux head
   local k = math.min(5, nClasses)
   local _, predictions = output:float():topk(k, 2, true, true)
   local correct = predictions:eq(target:long():view(batchSize, 1):expandAs(predictions))
   local top1 = correct:narrow(2, 1, 1):sum()
   local top5 = correct:narrow(2, 1, k):sum()
   return top1, top5, batchSize
end

-- The batch in the model's tensor type (fb.resnet.torch's copyInputs; a no-op view when
-- the pipeline already delivers that type).
function Trainer:copyInputs(input)
   if input:type() == self.params:type() then return input end
   self.input = self.input or self.params.new()
   return self.input:resize(input:size()):copy(input)
end

function Trainer:setTraining(on)
   if not on then return self.model:evaluate() end
   self.model:training()
   if self.opt.freezeBN then
      for _, m in ipairs(self.bn) do m:evaluate() end
      if self.dpt then -- every replica, in its own worker
         self.dpt.impl:exec(function(m)
            for _, name in ipairs {'nn.SpatialBatchNormalization', 'nn.BatchNormalization'} do
               for _, b in ipairs(m:findModules(name)) do b:evaluate() end
            end
         end)
      end
   end
end

local function finite(x) return x == x and x ~= math.huge and x ~= -math.huge end

-- Which layer made the loss or the gradient non-finite: the first module (in forward
-- order) whose output is non-finite, else the last one whose gradient is.
function Trainer:locateNonFinite(input)
   local mods = self.model:listModules()
   self.model:forward(input)
   for i, m in ipairs(mods) do
      if not m.modules and torch.isTensor(m.output) and m.output:nElement() > 0 then
         local s = m.output:sum()
         if not finite(s) then return string.format('output of module %d (%s)', i, torch.typename(m)) end
      end
   end
   for i = #mods, 1, -1 do
      local m = mods[i]
      if not m.modules and m.gradWeight and not finite(m.gradWeight:sum()) then
         return string.format('gradWeight of module %d (%s)', i, torch.typename(m))
      end
   end
   return 'the criterion (every module output is finite)'
end

function Trainer:averageBatchNormStatistics()
   if self.world == 1 or #self.bn == 0 then return end
   local n = 0
   for _, m in ipairs(self.bn) do n = n + m.running_mean:nElement() + m.running_var:nElement() end
   local flat = torch.Tensor(n):typeAs(self.params)
   local off = 1
   for _, m in ipairs(self.bn) do
      for _, t in ipairs {m.running_mean, m.running_var} do
         flat:narrow(1, off, t:nElement()):copy(t)
         off = off + t:nElement()
      end
   end
   self.comm.allreduce(flat, {algorithm = 'mpi'})
   flat:div(self.world)
   off = 1
   for _, m in ipairs(self.bn) do
      for _, t in ipairs {m.running_mean, m.running_var} do
         t:copy(flat:narrow(1, off, t:nElement()))
         off = off + t:nElement()
      end
   end
end

-- Sum numbers across ranks (counts for validation, loss for the log).
function Trainer:sumAcrossRanks(values)
   if self.world == 1 then return values end
   local t = torch.DoubleTensor(values)
   self.comm.allreduce(t, {algorithm = 'mpi'})
   local out = {}
   for i = 1, #values do out[i] = t[i] end
   return out
end

function Trainer:train(epoch, dataloader, progress)
   local opt, model, criterion = self.opt, self.model, self.criterion
   local params, gradParams, optimState = self.params, self.gradParams, self.optimState
   local nIters = dataloader:size()
   if opt.maxIters > 0 then nIters = math.min(nIters, opt.maxIters) end
   local timer, step = torch.Timer(), torch.Timer()
   local t = {data = 0, compute = 0, allreduce = 0, update = 0}
   local lossSum, top1Sum, top5Sum, N = 0, 0, 0, 0
   local input, target
   local function feval() return criterion.output, gradParams end

   self:setTraining(true)
   dataloader:epoch(epoch)
   local lastWait = 0
   for n, sample in dataloader:run(nIters) do
      t.data = t.data + (dataloader.dataWait - lastWait)
      lastWait = dataloader.dataWait
      input, target = self:copyInputs(sample.input), sample.target
      optimState.learningRate = self:learningRate(epoch, n, nIters)

      step:reset()
      local output, loss
      if self.fused then
         model:zeroGradParameters()
         loss, output = model:forwardBackward(input, target, criterion)
      else
         output = model:forward(input)
         loss = criterion:forward(output, target)
         model:zeroGradParameters()
         criterion:backward(output, target)
         model:backward(input, criterion.gradInput)
      end
      if self.onGpu then cutorch.synchronizeAll() end   -- kernels run asynchronously: charge them here
      t.compute = t.compute + step:time().real

      step:reset()
      if self.comm and self.world > 1 then
         if self.overlapped then
            self.dpt:waitGradients() -- what is left of the bucket allreduces started during backward
         else
            self.comm.allreduce(gradParams, {algorithm = opt.allreduce, colors = opt.colors})
         end
         gradParams:div(self.world)
      end
      if self.onGpu then cutorch.synchronizeAll() end
      t.allreduce = t.allreduce + step:time().real

      local global = self:sumAcrossRanks({loss})
      if not finite(global[1]) then
         error(string.format('non-finite loss (%s) at epoch %d iteration %d; first seen in the %s',
                             tostring(global[1]), epoch, n, self:locateNonFinite(input)), 0)
      end

      step:reset()
      optim.sgd(feval, params, optimState)
      if self.onGpu then cutorch.synchronizeAll() end
      t.update = t.update + step:time().real

      local top1, top5, b = self:computeScore(output, target)
      lossSum = lossSum + loss * b
      top1Sum, top5Sum, N = top1Sum + top1, top5Sum + top5, N + b
      if progress then
         progress(n, nIters, global[1] / self.world, 100 * top1Sum / N, t.data / timer:time().real)
      end
   end
   local r = self:epochSummary(lossSum, top1Sum, top5Sum, N, timer:time().real)
   r.iterations, r.time, r.lr = nIters, t, optimState.learningRate
   return r
end

-- Loss and top-1/top-5 (percent) over all ranks' samples.
function Trainer:epochSummary(lossSum, top1Sum, top5Sum, N, seconds)
   local sums = self:sumAcrossRanks({lossSum, top1Sum, top5Sum, N})
   local n = math.max(1, sums[4])
   return {loss = sums[1] / n, top1 = 100 * sums[2] / n, top5 = 100 * sums[3] / n, images = sums[4],
           seconds = seconds}
end

-- Validation over all ranks, each image counted once: top-1/top-5 accuracy in percent.
function Trainer:test(epoch, dataloader)
   local model, criterion = self.model, self.criterion
   local timer = torch.Timer()
   self:averageBatchNormStatistics()
   model:evaluate()
   dataloader:epoch(epoch)
   local lossSum, top1Sum, top5Sum, N = 0, 0, 0, 0
   for _, sample in dataloader:run(self.opt.valIters) do
      -- the last validation batches may leave a rank without samples (each image is seen once)
      if sample.input:dim() == 0 or sample.input:size(1) == 0 then goto continue end
      local output = model:forward(self:copyInputs(sample.input))
      local loss = criterion:forward(output, sample.target)
      local top1, top5, b = self:computeScore(output, sample.target)
      lossSum, top1Sum, top5Sum, N = lossSum + loss * b, top1Sum + top1, top5Sum + top5, N + b
      ::continue::
   end
   self:setTraining(true)
   return self:epochSummary(lossSum, top1Sum, top5Sum, N, timer:time().real)
end

return M.Trainer
