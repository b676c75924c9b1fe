-- Model and criterion for a training run (fb.resnet.torch's models/init.lua):
-- a fresh ResNet / GoogLeNet-BN, a legacy Torch7 .t7 model (nn.* or cudnn.*, bare or
-- wrapped in a DataParallelTable), or a checkpoint being resumed; optional
-- -resetClassifier for fine-tuning; a DataParallelTable over -nGPU devices (GPUs where cutorch has them).
require 'nn'
require 'cudnn'

local M = {}

local function unwrap(model)
   while torch.type(model) == 'nn.DataParallelTable' do model = model:get(1) end
   return model
end

local load = require 'luatorch.train.load'

local function loadModel(path, trusted)
   local f = io.open(path, 'rb')
   if not f then error('models: no such model file: ' .. path, 0) end
   f:close()
   print('=> Loading model from file: ' .. path)
   local ok, model = pcall(load, path, trusted)
   if not ok then
      local msg = tostring(model)
      error('models: ' .. (msg:find(path, 1, true) and msg or ('cannot load ' .. path .. ': ' .. msg)), 0)
   end
   if type(model) == 'table' and model.model and not model.forward then model = model.model end
   if not (type(model) == 'table' and model.forward) then
      error('models: ' .. path .. ' holds a ' .. torch.type(model) .. ', not an nn module', 0)
   end
   return unwrap(model)
end

local function create(opt, info)
   if opt.netType == 'resnet' then
      return require('luatorch.models.resnet')({depth = opt.depth, dataset = opt.dataset, shortcutType = opt.shortcutType,
                                       nClasses = info.nClasses, nChannels = info.channels})
   elseif opt.netType == 'googlenet_bn' or opt.netType == 'googlenet' then
      if info.height ~= 224 then error('models: GoogLeNet-BN needs 224x224 inputs, the data gives ' ..
                                        info.height .. 'x' .. info.width, 0) end
      return require('luatorch.models.googlenet_bn')({nClasses = info.nClasses})
   end
   error('models: unknown -netType ' .. opt.netType .. ' (resnet, googlenet_bn, or a .t7 file)', 0)
end

local function resetClassifier(model, nClasses)
   local last = model.modules and model.modules[#model.modules]
   if torch.type(last) ~= 'nn.Linear' then
      error('models: -resetClassifier expects the model to end in an nn.Linear, found ' .. torch.type(last), 0)
   end
   print(string.format(' => Replacing classifier with %d-way classifier', nClasses))
   local linear = nn.Linear(last.weight:size(2), nClasses)
   linear.bias:zero()
   model:remove(#model.modules)
   model:add(linear:type(last.weight:type()))
end

-- Layers whose backward skips the input's gradient when their gradInput is nil (Torch7's own test).
local SKIPS_NIL_GRADINPUT = {'nn.SpatialConvolution', 'nn.SpatialConvolutionMM', 'nn.VolumetricConvolution',
                             'nn.TemporalConvolution', 'nn.Linear', 'nn.SpatialMaxPooling',
                             'nn.SpatialAveragePooling', 'cudnn.SpatialConvolution'}

-- The model's input needs no gradient (fb.resnet.torch sets its first layer's gradInput to nil): the layer
-- that first sees the input, through nested Sequentials (GoogLeNet-BN's `features`), skips that pass when
-- it is one that can. Returns that layer, or nil.
function M.skipInputGradient(model)
   local m = model
   while torch.type(m) == 'nn.Sequential' and m.modules[1] do m = m.modules[1] end
   for _, name in ipairs(SKIPS_NIL_GRADINPUT) do
      if torch.isTypeOf(m, name) then
         m.gradInput = nil
         return m
      end
   end
end

-- Where the model trains: on cutorch's GPU backend (a GPU present, LUATORCH_CUTORCH not cpu) the GPUs
-- (opt.gpus, cutorch numbering; the model in the Cuda type of opt.tensorType), else host tensors on CPU
-- workers (opt.gpus nil). A rank takes opt.nGPU consecutive GPUs from localRank * nGPU on (MPI's or
-- Slurm's local rank), so the ranks of one machine use different GPUs where there are enough.
function M.placement(opt)
   opt.modelType = opt.tensorType
   if not torch._cutorchTriesGpu() then return end
   require 'cutorch'
   if cutorch.backend ~= 'gpu' then return end
   local count = cutorch.getDeviceCount()
   if opt.nGPU > count then
      error(string.format('models: -nGPU %d, but this machine has %d GPU%s (LUATORCH_CUTORCH=cpu trains on %d ' ..
                          'CPU workers instead)', opt.nGPU, count, count == 1 and '' or 's', opt.nGPU), 0)
   end
   local localRank = tonumber(os.getenv('OMPI_COMM_WORLD_LOCAL_RANK') or os.getenv('MPI_LOCALRANKID') or
                              os.getenv('SLURM_LOCALID') or '0') or 0
   local first = (localRank * opt.nGPU) % count
   opt.gpus = {}
   for i = 1, opt.nGPU do opt.gpus[i] = (first + i - 1) % count + 1 end
   opt.modelType = opt.tensorType == 'torch.DoubleTensor' and 'torch.CudaDoubleTensor' or 'torch.CudaTensor'
   cutorch.setDevice(opt.gpus[1])
end

-- Returns model, criterion. `checkpointModel` is the model of a resumed run.
function M.setup(opt, checkpointModel, info)
   if opt.modelType == nil then M.placement(opt) end
   local model
   if checkpointModel then
      model = unwrap(checkpointModel)
   elseif opt.retrain ~= 'none' then
      model = loadModel(opt.retrain, opt.trustModel)
   elseif opt.netType:match('%.t7$') then
      model = loadModel(opt.netType, opt.trustModel)
   else
      model = create(opt, info)
   end
   if opt.resetClassifier and not checkpointModel then resetClassifier(model, opt.nClasses) end

   M.skipInputGradient(model)

   -- on GPUs: the model on the first one before the table clones it to the others
   model = model:type(opt.modelType)
   if opt.nGPU > 1 then
      require 'cunn'
      local devices = opt.gpus or {}
      for i = #devices + 1, opt.nGPU do devices[i] = i end
      local dpt = nn.DataParallelTable(1, true, false):add(model, devices)
      if dpt.implementation then dpt:implementation(opt.dpt) end
      dpt:threads(function() require 'nn'; require 'cudnn' end)
      dpt.gradInput = nil
      model = dpt:type(opt.modelType)
   end

   -- a model whose last layer is a LogSoftMax (GoogLeNet-BN's heads) takes ClassNLL
   local mods = unwrap(model):listModules()
   local last = torch.type(mods[#mods])
   local criterion = (last == 'nn.LogSoftMax' or last == 'cudnn.LogSoftMax') and nn.ClassNLLCriterion()
                     or nn.CrossEntropyCriterion()
   return model, criterion:type(opt.modelType)
end

return M
