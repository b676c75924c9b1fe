-- The `threads` package (Torch's torch/threads API): see Threads.lua.
local torch = require 'torch'
local sync = require 'threads.sync'

local threads = {
   Threads = require 'threads.Threads',
   Mutex = sync.Mutex,
   Condition = sync.Condition,
   Queue = require 'threads.Queue',
}
-- As in torch/threads, the package itself works as the class: threads(N, ...)
-- and threads.serialization(name) are threads.Threads(N, ...) and its serialization.
setmetatable(threads, {__index = threads.Threads, __call = function(_, ...) return threads.Threads(...) end})
-- threads.sleep(seconds): a C sleep (LuaJIT has none), handy in tests
function threads.sleep(s) torch.C.lt_threads_sleep(s) end
-- worker threads alive in the whole process
function threads.alive() return torch.C.lt_threads_alive() end
return threads
