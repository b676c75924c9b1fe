-- The loop each worker state runs (started by threads.c through the boot
-- chunk Threads.lua builds): take a job, deserialize {callback, args}, run
-- it protected, post its serialized results (or its error and traceback).
local ffi = require 'ffi'
local torch = require 'torch'
local C = torch.C

local function handler(e)
   return {msg = type(e) == 'string' and e or tostring(e), traceback = debug.traceback('', 2)}
end

local function pack(...) return {n = select('#', ...), ...} end

local function run(ser, payload)
   local job = ser.load(payload)
   return job.fn(unpack(job.args, 1, job.args.n))
end

return function(pool, index, sername, nthreads)
   pool = ffi.cast('lt_pool*', pool)
   _G.__threadid = index
   -- torch.setnumthreads in a worker sets this thread's share only
   local share
   function torch.setnumthreads(n)
      n = tonumber(n)
      if not n or n < 1 then error('torch.setnumthreads: positive number expected', 2) end
      share = math.floor(n)
      C.lt_set_local_threads(share)
   end
   torch.setnumthreads(nthreads)
   local ser = require(sername)
   while true do
      local m = C.lt_pool_take_job(pool, index - 1)
      if m == nil then break end
      local id = m.id
      local payload = ffi.string(m.data, m.len)
      C.lt_msg_free(m)
      -- OpenBLAS's thread count is process-wide: set it back to this worker's
      -- share (the main thread may have changed it between jobs), so that
      -- concurrent workers neither oversubscribe nor queue on its one server
      C.lt_set_local_threads(share)
      local res = pack(xpcall(run, handler, ser, payload))
      local status, out = 0, nil
      if res[1] then
         local ok, s = pcall(ser.save, {n = res.n - 1, unpack(res, 2, res.n)})
         if ok then out = s else status, out = 1, ser.save({msg = 'cannot serialize the job results: ' .. tostring(s),
                                                             traceback = ''}) end
      else
         status, out = 1, ser.save(res[2])
      end
      torch._check(C.lt_pool_put_result(pool, index - 1, id, status, out, #out))
      res, payload = nil, nil
   end
   collectgarbage()
end
