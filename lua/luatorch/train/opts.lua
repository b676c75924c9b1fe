-- Training options: fb.resnet.torch's opts.lua (names, defaults, derived values), plus
-- what the paper's distributed runs need (allreduce, DataParallelTable flavour, data
-- source, Goyal et al.'s large-batch rules).
--
--   local opt = require('luatorch.train.opts').parse(arg)
require 'torch'

local M = {}

function M.cmd()
   local cmd = torch.CmdLine()
   cmd:text('luatorch train: fb.resnet.torch-style training, data-parallel over MPI ranks x devices')
   cmd:text()
   cmd:text(' ------------ General options --------------------')
   cmd:option('-data', 'builtin', 'packed data set, image folder, or builtin (Fashion-MNIST)')
   cmd:option('-dataset', '', 'imagenet | cifar10 | cifar100 | mnist (default: from the data)')
   cmd:option('-manualSeed', 0, 'manually set RNG seed')
   cmd:option('-nGPU', 1, 'number of DataParallelTable devices (GPUs on cutorch\'s GPU backend, else CPU workers)')
   cmd:option('-backend', 'cudnn', 'accepted for compatibility; layers are cudnn.* classes on the CPU')
   cmd:option('-cudnn', 'fastest', 'accepted for compatibility')
   cmd:option('-gen', 'gen', 'accepted for compatibility (data caches live with the packed set)')
   cmd:option('-precision', 'single', 'single | double')
   cmd:text(' ------------- Data options ------------------------')
   cmd:option('-nThreads', 2, 'data loading workers per rank')
   cmd:option('-dataSource', 'memory', 'memory (packed, in RAM) | files (one file read per image)')
   cmd:option('-dataPolicy', 'replicate', 'replicate (global shuffle) | partition (static shards)')
   cmd:option('-dataFill', 'local', 'local (each host reads the whole set) | distributed (each reads 1/N, ' ..
              'the rest over MPI; replicate only)')
   cmd:text(' ------------- Training options --------------------')
   cmd:option('-nEpochs', 0, 'number of total epochs to run (0: the dataset default)')
   cmd:option('-epochNumber', 1, 'manual epoch number (useful on restarts)')
   cmd:option('-batchSize', 0, 'global mini-batch size, all ranks and devices together (0: 32, fb.resnet.torch\'s ' ..
              'default; 128 for mnist-type data)')
   cmd:option('-testOnly', 'false', 'run on validation set only')
   cmd:option('-tenCrop', 'false', 'ten-crop testing (not supported; accepted for compatibility)')
   cmd:option('-maxIters', 0, 'stop each training epoch after this many iterations (0: the whole epoch)')
   cmd:option('-valIters', 0, 'stop each validation pass after this many iterations (0: the whole set)')
   cmd:option('-validate', 'true', 'run the validation pass after every epoch')
   cmd:option('-freezeBN', 'false', 'keep BatchNorm in evaluate mode while training (frozen statistics)')
   cmd:text(' ------------- Checkpointing options ---------------')
   cmd:option('-save', 'checkpoints', 'directory in which to save checkpoints and log.jsonl')
   cmd:option('-resume', 'none', 'resume from the latest checkpoint in this directory')
   cmd:option('-overwrite', false, 'start afresh even if -save holds a run (`luatorch train` deletes its files)')
   cmd:option('-trustModel', false, 'let model, checkpoint and optimState files run the Lua functions they hold')
   cmd:text(' ---------- Optimization options ----------------------')
   cmd:option('-LR', 0.1, 'initial learning rate')
   cmd:option('-momentum', 0.9, 'momentum')
   cmd:option('-weightDecay', 1e-4, 'weight decay')
   cmd:option('-nesterov', 'true', 'Nesterov momentum (fb.resnet.torch: always)')
   cmd:option('-lrScaling', 'none', 'none | linear (Goyal et al.: LR x globalBatch/256)')
   cmd:option('-warmupEpochs', 0, 'gradual warmup epochs (Goyal et al.: 5), per iteration')
   cmd:option('-schedule', 'default', 'default (fb.resnet.torch per dataset) | goyal (x0.1 at 30,60,80) | ' ..
              'step:E1,E2,... (x0.1 at each)')
   cmd:text(' ---------- Model options ----------------------------------')
   cmd:option('-netType', 'resnet', 'resnet | googlenet_bn | path to a Torch7 .t7 model')
   cmd:option('-depth', 0, 'ResNet depth (0: 50 for imagenet, 20 for cifar, 8 for mnist)')
   cmd:option('-shortcutType', '', 'options: A | B | C')
   cmd:option('-retrain', 'none', 'fine-tune a pre-trained .t7 model')
   cmd:option('-optimState', 'none', 'path to an optimState to reload from')
   cmd:option('-shareGradInput', 'false', 'accepted for compatibility')
   cmd:option('-optnet', 'false', 'accepted for compatibility')
   cmd:option('-resetClassifier', 'false', 'reset the fully connected layer for fine-tuning')
   cmd:option('-nClasses', 0, 'number of classes in the dataset (with -resetClassifier)')
   cmd:text(' ---------- Distributed options ----------------------------')
   cmd:option('-allreduce', 'auto', 'multicolor | ring | rhd | tree | mpi | auto (across MPI ranks)')
   cmd:option('-colors', 0, 'multicolor: number of colors (0: from the cost model)')
   cmd:option('-dpt', 'optimized', 'baseline (Torch7 DataParallelTable) | optimized (the paper\'s)')
   cmd:option('-timeout', 60, 'seconds a collective may wait for a peer before every rank stops')
   return cmd
end

-- What each option accepts: M.check applies these to the values a command line gives, before the run
-- starts (run/train.py runs it in the launching process too, so a bad value stops `luatorch train --np N`
-- before any rank starts). A value equal to the default (0: "the data set's default") always passes.
local function integer(low)
   return function(v)
      local n = tonumber(v)
      if not n or n ~= math.floor(n) or n < low or n == math.huge then
         return string.format('must be an integer >= %d (got %s)', low, tostring(v))
      end
   end
end

local function number(low, strict)
   return function(v)
      local n = tonumber(v)
      if not n or n ~= n or n == math.huge or n == -math.huge or n < low or (strict and n == low) then
         return string.format('must be a number %s %s (got %s)', strict and '>' or '>=', tostring(low), tostring(v))
      end
   end
end

local function oneOf(...)
   local names = {...}
   return function(v)
      for _, name in ipairs(names) do if tostring(v) == name then return nil end end
      return string.format('must be %s (got %s)', #names == 2 and names[1] .. ' or ' .. names[2]
                           or 'one of ' .. table.concat(names, ', '), tostring(v))
   end
end

local function exists(path)
   local f = io.open(path, 'rb') -- opens folders too (Linux)
   if f then f:close() end
   return f ~= nil
end

local function fileOrNone(v)
   if v ~= 'none' and not exists(v) then return 'must be none or an existing file (no such file: ' .. v .. ')' end
end

local function model(v)
   local what = 'must be resnet, googlenet_bn or a Torch7 .t7 model file '
   if v == 'resnet' or v == 'googlenet_bn' or v == 'googlenet' then return nil end
   if not v:match('%.t7$') then return what .. '(got ' .. v .. ')' end
   if not exists(v) then return what .. '(no such model file: ' .. v .. ')' end
end

local function data(v)
   if v ~= 'builtin' and not exists(v) then
      return 'must be builtin, a packed data set or an image folder (no such file or folder: ' .. v .. ')'
   end
end

local function schedule(v)
   local ok = v == 'default' or v == 'goyal'
   local steps = v:match('^step:(.+)$')
   if steps then
      ok = true
      for e in (steps .. ','):gmatch('([^,]*),') do ok = ok and tonumber(e) ~= nil end
   end
   if not ok then return 'must be default, goyal or step:E1,E2,... (got ' .. v .. ')' end
end

-- the algorithms the collectives know (pytorch_bridge.mpi.ALGORITHMS, the C library's table)
local function allreduce(v)
   local names = python.eval('",".join(__import__("pytorch_bridge.mpi", fromlist=["mpi"]).ALGORITHMS)')
   local list = {}
   for name in tostring(names):gmatch('[^,]+') do list[#list + 1] = name end
   return oneOf(unpack(list))(v)
end

local BOOLEAN = oneOf('true', 'false')
M.rules = {
   nGPU = integer(1), nThreads = integer(0), manualSeed = integer(0), nEpochs = integer(1), epochNumber = integer(1),
   batchSize = integer(1), maxIters = integer(0), valIters = integer(0), depth = integer(1), nClasses = integer(1),
   colors = integer(1), LR = number(0), momentum = number(0), weightDecay = number(0), warmupEpochs = number(0),
   timeout = number(0, true),
   precision = oneOf('single', 'double'), dataSource = oneOf('memory', 'files'),
   dataPolicy = oneOf('replicate', 'partition'), dataFill = oneOf('local', 'distributed'), lrScaling = oneOf('none', 'linear'),
   dpt = oneOf('baseline', 'optimized'),
   dataset = oneOf('imagenet', 'cifar10', 'cifar100', 'mnist'), shortcutType = oneOf('A', 'B', 'C'),
   allreduce = allreduce, schedule = schedule, netType = model, retrain = fileOrNone, optimState = fileOrNone,
   data = data,
   testOnly = BOOLEAN, tenCrop = BOOLEAN, validate = BOOLEAN, freezeBN = BOOLEAN, nesterov = BOOLEAN,
   resetClassifier = BOOLEAN, shareGradInput = BOOLEAN, optnet = BOOLEAN, overwrite = BOOLEAN, trustModel = BOOLEAN,
}

-- The ResNet depths models/resnet.lua builds, per kind of data.
function M.depthProblem(depth, kind)
   if kind == 'imagenet' then
      for _, d in ipairs {18, 34, 50, 101, 152, 200} do if d == depth then return nil end end
      return string.format('must be one of 18, 34, 50, 101, 152, 200 for ImageNet-type data (got %s)', depth)
   elseif (depth - 2) % 6 ~= 0 then
      return string.format('must be 6n+2 (8, 14, 20, 32, 44, 56, 110, ...) for %s-type data (got %s)', kind, depth)
   end
end

local function isDefault(v, default)
   if type(default) == 'number' then return tonumber(v) == default end
   return tostring(v) == tostring(default)
end

-- nil, or the first option (by name) whose value is wrong and what is wrong: "nGPU", "must be an integer >= 1
-- (got 0)". `values`: option name -> value (strings as typed, or parsed values); `world`: the rank count if
-- known; `kind`: the kind of data (imagenet, cifar10, ...) if known.
function M.check(values, world, kind)
   local options = M.cmd().options
   local keys = {}
   for key in pairs(values) do keys[#keys + 1] = key end
   table.sort(keys)
   for _, key in ipairs(keys) do
      local v, o = values[key], options['-' .. key]
      if o and M.rules[key] and not isDefault(v, o.default) then
         local problem = M.rules[key](v)
         if problem then return key, problem end
      end
   end
   local batch = tonumber(values.batchSize)
   if world and batch and batch > 0 and batch % world ~= 0 then
      return 'batchSize', string.format('must be a multiple of the %d ranks (got %d)', world, batch)
   end
   kind = values.dataset ~= nil and values.dataset ~= '' and values.dataset or kind
   local depth = tonumber(values.depth)
   if kind and depth and depth > 0 and (values.netType or 'resnet') == 'resnet'
      and (values.retrain or 'none') == 'none' and (values.resume or 'none') == 'none' then
      local problem = M.depthProblem(depth, kind)
      if problem then return 'depth', problem end
   end
end

local function bool(v) return v ~= 'false' and v ~= false end

-- Defaults that fb.resnet.torch derives after parsing, per dataset.
function M.finish(opt)
   for _, k in ipairs {'testOnly', 'tenCrop', 'shareGradInput', 'optnet', 'resetClassifier', 'nesterov',
                       'freezeBN', 'validate'} do
      opt[k] = bool(opt[k])
   end
   if opt.tenCrop then error('opts: -tenCrop is not supported', 0) end
   if opt.precision == 'single' then
      opt.tensorType = 'torch.FloatTensor'
   elseif opt.precision == 'double' then
      opt.tensorType = 'torch.DoubleTensor'
   else
      error('opts: unknown precision: ' .. opt.precision, 0)
   end
   local defaults = {
      imagenet = {nEpochs = 90, depth = 50, shortcutType = 'B', batchSize = 32},
      cifar10 = {nEpochs = 164, depth = 20, shortcutType = 'A', batchSize = 32},
      cifar100 = {nEpochs = 164, depth = 20, shortcutType = 'A', batchSize = 32},
      mnist = {nEpochs = 2, depth = 8, shortcutType = 'A', batchSize = 128},
   }
   local d = defaults[opt.dataset]
   if not d then error('opts: unknown dataset: ' .. tostring(opt.dataset), 0) end
   if opt.nEpochs < 1 then opt.nEpochs = d.nEpochs end
   if opt.depth < 1 then opt.depth = d.depth end
   if opt.batchSize < 1 then opt.batchSize = d.batchSize end
   if opt.shortcutType == '' then opt.shortcutType = d.shortcutType end
   if opt.netType == 'resnet' and opt.retrain == 'none' and opt.resume == 'none' then
      local problem = M.depthProblem(opt.depth, opt.dataset)
      if problem then error('opts: -depth ' .. problem, 0) end
   end
   if opt.resetClassifier and opt.nClasses < 1 then
      error('opts: -resetClassifier needs -nClasses N', 0)
   end
   if opt.nGPU < 1 then error('opts: -nGPU must be >= 1', 0) end
   if opt.dpt ~= 'baseline' and opt.dpt ~= 'optimized' then error('opts: -dpt baseline|optimized', 0) end
   if opt.dataSource ~= 'memory' and opt.dataSource ~= 'files' then
      error('opts: -dataSource memory|files', 0)
   end
   if opt.dataFill == 'distributed' and (opt.dataPolicy ~= 'replicate' or opt.dataSource ~= 'memory') then
      error('opts: -dataFill distributed needs -dataPolicy replicate and -dataSource memory', 0)
   end
   return opt
end

function M.parse(argv)
   return M.cmd():parse(argv)
end

return M
