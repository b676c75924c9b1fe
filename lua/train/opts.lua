-- Training options: fb.resnet.torch's opts.lua (names, defaults, derived values), plus
-- what the paper's distributed runs need (allreduce, DataParallelTable flavour, data
-- source, Goyal et al.'s large-batch rules).
--
--   local opt = require('train.opts').parse(arg)
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
   cmd:option('-nGPU', 1, 'number of DataParallelTable devices (CPU workers here)')
   cmd:option('-backend', 'cudnn', 'accepted for compatibility; layers are cudnn.* classes on the CPU')
   cmd:option('-cudnn', 'fastest', 'accepted for compatibility')
   cmd:option('-gen', 'gen', 'accepted for compatibility (data caches live with the packed set)')
   cmd:option('-precision', 'single', 'single | double')
   cmd:text(' ------------- Data options ------------------------')
   cmd:option('-nThreads', 2, 'data loading workers per rank')
   cmd:option('-dataSource', 'memory', 'memory (packed, in RAM) | files (one file read per image)')
   cmd:option('-dataPolicy', 'replicate', 'replicate (global shuffle) | partition (static shards)')
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
   if opt.resetClassifier and opt.nClasses < 1 then
      error('opts: -resetClassifier needs -nClasses N', 0)
   end
   if opt.nGPU < 1 then error('opts: -nGPU must be >= 1', 0) end
   if opt.dpt ~= 'baseline' and opt.dpt ~= 'optimized' then error('opts: -dpt baseline|optimized', 0) end
   if opt.dataSource ~= 'memory' and opt.dataSource ~= 'files' then
      error('opts: -dataSource memory|files', 0)
   end
   return opt
end

function M.parse(argv)
   return M.cmd():parse(argv)
end

return M
