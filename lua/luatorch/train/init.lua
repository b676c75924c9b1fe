-- train: fb.resnet.torch's main.lua for luatorch, one call per MPI rank.
--
--   require('luatorch.train').main(arg [, host])
--
-- `arg` holds fb.resnet.torch's options (see train/opts.lua); `host` is the Python side
-- the launcher installs (pytorch_bridge.host.TrainHost: data, rank/world, progress bar,
-- log.jsonl and plots); by default package.loaded['luatorch.host'].
require 'torch'
require 'nn'

local opts = require 'luatorch.train.opts'
local models = require 'luatorch.train.models'
local checkpoints = require 'luatorch.train.checkpoints'
local load = require 'luatorch.train.load'

local function collectState(model)
   if torch.type(model) == 'nn.DataParallelTable' and model.impl and model.impl.__threads then
      model.impl:exec(function() collectgarbage() end)
   end
   collectgarbage()
end
local Trainer = require 'luatorch.train.Trainer'
local DataLoader = require 'luatorch.datasets'

local train = {Trainer = Trainer, opts = opts, models = models, checkpoints = checkpoints}

-- The first and the last line of a run, on rank 0: what trains on what, and where the results are.
local function count(n)
   if n >= 1e6 then return string.format('%.1fM', n / 1e6) end
   if n >= 1e3 then return string.format('%.1fk', n / 1e3) end
   return tostring(n)
end

local function banner(opt, info, world, nParams, latest)
   local name = opt.retrain ~= 'none' and opt.retrain or opt.netType == 'resnet' and 'resnet-' .. opt.depth
                or opt.netType
   local plural = function(n, what) return string.format('%d %s%s', n, what, n == 1 and '' or 's') end
   return string.format('luatorch train: %s (%s parameters) on %s (%s, %d train / %d val images, %d classes)\n' ..
                        '                %s x %s, global batch %d%s%s; run folder %s%s',
                        name, count(nParams), opt.data, info.kind, info.nTrain, info.nVal, info.nClasses,
                        plural(world, 'rank'),
                        opt.gpus and plural(opt.nGPU, 'GPU') .. ' (' .. table.concat(opt.gpus, ',') .. ')'
                        or plural(opt.nGPU, 'device'), opt.batchSize,
                        world > 1 and string.format(' (%d per rank), allreduce %s', opt.rankBatchSize,
                                                    opt.allreduce) or '',
                        opt.nGPU > 1 and ', DataParallelTable ' .. opt.dpt or '', opt.save,
                        latest and string.format(' (resuming after epoch %d)', latest.epoch) or '')
end

local function summary(opt, epochs, seconds, bestTop1, bestEpoch)
   local best = bestTop1 >= 0 and string.format('best val top-1 %.2f%%%s', bestTop1,
                                                bestEpoch and string.format(' (epoch %d)', bestEpoch) or '')
                or 'no validation'
   return string.format('luatorch train: %d epoch%s in %.1f s; %s; checkpoints, log.jsonl and plots in %s', epochs,
                        epochs == 1 and '' or 's', seconds, best, opt.save)
end

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
   local timer = torch.Timer()
   local opt = opts.parse(argv)
   local bad, problem = opts.check(opt, host.world)
   if bad then error('opts: -' .. bad .. ' ' .. problem, 0) end
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

   local refusal = host.check_save and host.check_save(opt.save, opt.resume, opt.overwrite, opt.testOnly)
   if refusal then error(refusal, 0) end -- another run's folder (the verdict is the same on every rank)
   local latest, optimState = checkpoints.latest(opt.resume, opt.trustModel)
   local finished = latest and not opt.testOnly and checkpoints.finished(opt.resume, latest, opt.nEpochs)
   if finished then -- every rank read the same latest.t7: all return here, before any collective
      if rank == 0 then print(finished) end
      return nil, nil
   end
   models.placement(opt)   -- GPUs or CPU workers; a resumed model loads onto the first GPU
   local checkpointModel = latest and checkpoints.loadModel(opt.resume, latest, opt.trustModel)
   if latest == nil and opt.optimState ~= 'none' then optimState = load(opt.optimState, opt.trustModel) end
   local model, criterion = models.setup(opt, checkpointModel, info)

   local trainer = Trainer(model, criterion, opt, optimState, comm)
   if comm then broadcastModel(comm, model, trainer.params) end
   local batchOpt = setmetatable({batchSize = opt.rankBatchSize}, {__index = opt})
   local trainLoader, valLoader = DataLoader.create(batchOpt, host)
   if rank == 0 then io.stderr:write(banner(opt, info, world, trainer.params:nElement(), latest), '\n') end

   if opt.testOnly then
      local v = trainer:test(0, valLoader)
      host.log({epoch = 0, val_loss = v.loss, val_top1 = v.top1, val_top5 = v.top5, val_images = v.images,
                seconds = v.seconds})
      return v.top1, v.top5
   end

   local startEpoch = latest and latest.epoch + 1 or opt.epochNumber
   if latest and latest.rngState then torch.setRNGState(latest.rngState) end
   local bestTop1 = latest and latest.bestTop1 or -1
   local last, bestEpoch
   for epoch = startEpoch, opt.nEpochs do
      host.epoch_start(epoch, opt.nEpochs, trainLoader:size())
      local tr = trainer:train(epoch, trainLoader, host.progress)
      local v = opt.validate and trainer:test(epoch, valLoader) or {seconds = 0, top1 = -1}
      local best = v.top1 > bestTop1
      if best then bestTop1, bestEpoch = v.top1, epoch end
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
         best = best, n_epochs = opt.nEpochs,
      }
      host.log(last)
      -- A tensor's memory is C memory that LuaJIT's collector does not count, so the epoch's temporaries
      -- would pile up between its cycles: collect them here, and in every DataParallelTable worker.
      collectState(model)
   end
   if comm then comm.barrier() end
   if rank == 0 then
      io.stderr:write(summary(opt, opt.nEpochs - startEpoch + 1, timer:time().real, bestTop1, bestEpoch), '\n')
   end
   return last and last.val_top1, last and last.val_top5
end

return train
