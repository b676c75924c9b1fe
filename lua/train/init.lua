-- train: fb.resnet.torch's main.lua for luatorch, one call per MPI rank.
--
--   require('train').main(arg [, host])
--
-- `arg` holds fb.resnet.torch's options (see train/opts.lua); `host` is the Python side
-- the launcher installs (pytorch_bridge.host.TrainHost: data, rank/world, progress bar,
-- log.jsonl and plots); by default package.loaded['luatorch.host'].
require 'torch'
require 'nn'

local opts = require 'train.opts'
local models = require 'train.models'
local checkpoints = require 'train.checkpoints'
local Trainer = require 'train.Trainer'
local DataLoader = require 'datasets'

local train = {Trainer = Trainer, opts = opts, models = models, checkpoints = checkpoints}

local function broadcastModel(comm, model, params)
   -- every rank starts from rank 0's parameters and BatchNorm statistics
   comm.broadcast(params, 0)
   for _, m in ipairs(model:findModules('nn.SpatialBatchNormalization')) do
      comm.broadcast(m.running_mean, 0)
      comm.broadcast(m.running_var, 0)
   end
end

function train.main(argv, host)
   host = host or require('luatorch.host')
   local opt = opts.parse(argv)
   host.set_save(opt.save)
   local info = host.dataset(opt.data)
   if opt.dataset == '' then opt.dataset = info.kind end
   opts.finish(opt)
   if opt.nClasses == 0 or not opt.resetClassifier then opt.nClasses = info.nClasses end

   local rank, world = host.rank, host.world
   if opt.batchSize % world ~= 0 then
      error(string.format('train: the global -batchSize %d must be a multiple of the %d ranks', opt.batchSize, world), 0)
   end
   opt.rankBatchSize = opt.batchSize / world
   torch.setdefaulttensortype(opt.tensorType)
   torch.manualSeed(opt.manualSeed)

   local comm
   if world > 1 then
      comm = require 'mpi'
      comm.setTimeout(opt.timeout)
   end

   local latest, optimState = checkpoints.latest(opt.resume)
   local checkpointModel = latest and checkpoints.loadModel(opt.resume, latest)
   if latest == nil and opt.optimState ~= 'none' then optimState = torch.load(opt.optimState) end
   local model, criterion = models.setup(opt, checkpointModel, info)

   local trainer = Trainer(model, criterion, opt, optimState, comm)
   if comm then broadcastModel(comm, model, trainer.params) end
   local batchOpt = setmetatable({batchSize = opt.rankBatchSize}, {__index = opt})
   local trainLoader, valLoader = DataLoader.create(batchOpt, host)

   if opt.testOnly then
      local v = trainer:test(0, valLoader)
      host.log({epoch = 0, val_loss = v.loss, val_top1 = v.top1, val_top5 = v.top5, val_images = v.images,
                seconds = v.seconds})
      return v.top1, v.top5
   end

   local startEpoch = latest and latest.epoch + 1 or opt.epochNumber
   if latest and latest.rngState then torch.setRNGState(latest.rngState) end
   local bestTop1 = latest and latest.bestTop1 or -1
   local last
   for epoch = startEpoch, opt.nEpochs do
      host.epoch_start(epoch, opt.nEpochs, trainLoader:size())
      local tr = trainer:train(epoch, trainLoader, host.progress)
      local v = opt.validate and trainer:test(epoch, valLoader) or {seconds = 0, top1 = -1}
      local best = v.top1 > bestTop1
      if best then bestTop1 = v.top1 end
      if rank == 0 then
         checkpoints.save(opt.save, epoch, model, trainer.optimState, best,
                          {rngState = torch.getRNGState(), bestTop1 = bestTop1, seed = opt.manualSeed})
      end
      local seconds = tr.seconds + v.seconds
      last = {
         epoch = epoch, train_loss = tr.loss, train_top1 = tr.top1, val_loss = v.loss,
         val_top1 = v.top1, val_top5 = v.top5, val_images = v.images, images_per_s = tr.images / tr.seconds, seconds = seconds,
         lr = tr.lr, iterations = tr.iterations, ranks = world, devices = opt.nGPU,
         time_data = tr.time.data, time_compute = tr.time.compute, time_allreduce = tr.time.allreduce,
         time_update = tr.time.update, train_seconds = tr.seconds, val_seconds = v.seconds,
         best = best,
      }
      host.log(last)
   end
   if comm then comm.barrier() end
   return last and last.val_top1, last and last.val_top5
end

return train
