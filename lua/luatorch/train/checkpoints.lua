-- Checkpoints in fb.resnet.torch's layout (checkpoints.lua):
--   model_<epoch>.t7      the bare model (DataParallelTable stripped), clearState()'d
--   optimState_<epoch>.t7 the optim state (momentum buffer `dfdx`, evalCounter, ...)
--   latest.t7             {epoch=, modelFile=, optimFile=} (+ ours: rngState, bestTop1, seed)
--   model_best.t7         the model whenever validation top-1 improved
-- Every file is written to a temporary name and renamed, so a crash never leaves a
-- half-written checkpoint where `-resume` would read it.
require 'torch'
local load = require 'luatorch.train.load'

local M = {}

local function join(dir, name) return dir .. '/' .. name end

local function exists(path)
   local f = io.open(path, 'rb')
   if f then f:close() end
   return f ~= nil
end

-- Written beside and renamed over, so a failed write (a full disk) leaves the previous file, and the
-- latest.t7 that names it, intact; the half-written file is removed.
local function saveAtomic(path, obj)
   local tmp = path .. '.tmp'
   local saved, why = pcall(torch.save, tmp, obj)
   if not saved then
      os.remove(tmp)
      error(string.format('checkpoints: cannot write %s (%s); the checkpoints written before are intact',
                          path, tostring(why)), 0)
   end
   local ok, err = os.rename(tmp, path)
   if not ok then error('checkpoints: cannot rename ' .. tmp .. ' to ' .. path .. ': ' .. tostring(err), 0) end
end
M.saveAtomic = saveAtomic

-- New tables, shared tensors: what clearState() may then empty without touching the
-- live model (fb.resnet.torch's deepCopy).
local function deepCopy(tbl)
   local copy = {}
   for k, v in pairs(tbl) do
      if type(v) == 'table' then copy[k] = deepCopy(v) else copy[k] = v end
   end
   local mt = getmetatable(tbl)
   if mt then setmetatable(copy, mt) end
   return copy
end

local function bareModel(model)
   if torch.type(model) == 'nn.DataParallelTable' then model = model:get(1) end
   return deepCopy(model):clearState()
end

function M.latest(dir, trusted)
   if dir == nil or dir == 'none' then return nil end
   local path = join(dir, 'latest.t7')
   if not exists(path) then error('checkpoints: no latest.t7 in ' .. dir .. ' (nothing to resume)', 0) end
   print('=> Loading checkpoint ' .. path)
   local latest = load(path, trusted)
   local optimState = load(join(dir, latest.optimFile), trusted)
   return latest, optimState
end

-- The line for `-resume dir` when its run already reached -nEpochs (nil while epochs are left).
function M.finished(dir, latest, nEpochs)
   if latest.epoch < nEpochs then return nil end
   local best = (latest.bestTop1 or -1) >= 0 and string.format('best top-1 %.2f%%', latest.bestTop1) or 'no validation'
   local where = latest.epoch == nEpochs and string.format('finished epoch %d of %d', nEpochs, nEpochs)
      or string.format('is at epoch %d, beyond --epochs %d', latest.epoch, nEpochs)
   return string.format('nothing left to do: %s %s (%s); a larger --epochs trains on', dir, where, best)
end

function M.loadModel(dir, latest, trusted)
   return load(join(dir, latest.modelFile), trusted)
end

function M.save(dir, epoch, model, optimState, isBestModel, extra)
   os.execute('mkdir -p "' .. dir .. '"')
   local modelFile = 'model_' .. epoch .. '.t7'
   local optimFile = 'optimState_' .. epoch .. '.t7'
   local bare = bareModel(model)
   saveAtomic(join(dir, modelFile), bare)
   saveAtomic(join(dir, optimFile), optimState)
   local latest = {epoch = epoch, modelFile = modelFile, optimFile = optimFile}
   for k, v in pairs(extra or {}) do latest[k] = v end
   saveAtomic(join(dir, 'latest.t7'), latest)
   if isBestModel then saveAtomic(join(dir, 'model_best.t7'), bare) end
end

return M
