"""threads: torch/threads' pool API over native/src/threads.c (one pthread + LuaJIT state per worker)."""
import time

import pytest

from pytorch_bridge import LuaError


def test_results_come_back_and_init_functions_run_per_thread(rt):
    out = rt.execute(r"""
    local threads = require 'threads'
    local pool = threads.Threads(3, function(i) _G.initA = i end, function(i) _G.initB = initA * 10 end)
    local got = {}
    for k = 1, 9 do
      pool:addjob(function(a, b) return a * b, initB, __threadid end,
                  function(r, ib, tid) got[#got + 1] = r; assert(ib == tid * 10) end, k, 2)
    end
    pool:synchronize()
    assert(not pool:hasjob())
    table.sort(got)
    pool:terminate()
    return table.concat(got, ',')
    """)
    assert out == "2,4,6,8,10,12,14,16,18"


def test_jobs_run_in_parallel_rendezvous(rt):
    # Proof without timing: each job waits (5 s at most) until both have arrived;
    # run one after the other, the first would time out.
    ok1, ok2 = rt.execute(r"""
    local threads = require 'threads'
    local m, c = threads.Mutex(), threads.Condition()
    local count = torch.LongTensor(1):zero()
    threads.Threads.serialization('threads.sharedserialize')
    local pool = threads.Threads(2)
    threads.Threads.serialization('threads.serialize')
    local res = {}
    for i = 1, 2 do
      pool:addjob(function(mid, cid, cnt)
        local threads = require 'threads'
        local m, c = threads.Mutex(mid), threads.Condition(cid)
        m:lock()
        cnt[1] = cnt[1] + 1
        c:broadcast()
        local ok = true
        while cnt[1] < 2 and ok do ok = c:wait(m, 5) end
        m:unlock()
        return ok
      end, function(ok) res[#res + 1] = ok end, m:id(), c:id(), count)
    end
    pool:synchronize()
    pool:terminate()
    return res[1], res[2]
    """)
    assert ok1 is True and ok2 is True


def test_two_sleeping_jobs_take_one_sleep(rt):
    # a C sleep uses no CPU, so a loaded machine does not make this flaky
    t = rt.execute(r"""
    local threads = require 'threads'
    local pool = threads.Threads(2)
    pool:synchronize()
    local t0 = torch.Timer()
    for i = 1, 2 do pool:addjob(function() require('threads').sleep(0.4) end) end
    pool:synchronize()
    local t = t0:time().real
    pool:terminate()
    return t
    """)
    assert 0.39 <= t < 0.75, t


def test_sharedserialize_shares_tensors_and_serialize_copies(rt):
    shared, copied, back = rt.execute(r"""
    local threads = require 'threads'
    threads.Threads.serialization('threads.sharedserialize')
    local sp = threads.Threads(2)
    threads.Threads.serialization('threads.serialize')
    local cp = threads.Threads(1)
    local a = torch.FloatTensor(6):zero()
    local v = a:narrow(1, 3, 2)          -- a view: offset and storage cross together
    local fromWorker
    sp:addjob(function(t) t:fill(7); return torch.DoubleTensor(3):fill(__threadid) end,
              function(r) fromWorker = r end, v)
    sp:synchronize()
    local b = torch.FloatTensor(2):zero()
    cp:addjob(function(t) t:fill(5) end, nil, b)
    cp:synchronize()
    sp:terminate(); cp:terminate()
    return a[3] + a[4] + a[1] + a[5], b:sum(), fromWorker:sum() > 0 and fromWorker:size(1)
    """)
    assert shared == 14
    assert copied == 0
    assert back == 3


def test_sharedserialize_shares_half_tensors_too(rt):
    """Half storages cross by pointer like the others (they are not in torch._types: a DataParallelTable in half
    got copies of its replicas' flat parameters back from its threads, on the wrong GPU, and did not train)."""
    seen, back_shared = rt.execute(r"""
    local threads = require 'threads'
    threads.Threads.serialization('threads.sharedserialize')
    local sp = threads.Threads(1)
    threads.Threads.serialization('threads.serialize')
    local h = torch.HalfTensor(4):copy(torch.FloatTensor{1, 2, 3, 4})
    local fromWorker
    sp:addjob(function(t) t:copy(torch.FloatTensor{5, 6, 7, 8}); return t end, function(r) fromWorker = r end, h)
    sp:synchronize()
    sp:terminate()
    return h:float():sum(), torch.pointer(fromWorker:storage():data()) == torch.pointer(h:storage():data())
    """)
    assert seen == 26 and back_shared


def test_closures_carry_upvalues_and_packages(rt):
    out = rt.execute(r"""
    local threads = require 'threads'
    local nn = require 'nn'
    local cfg = {scale = 3, names = {'a', 'b'}}
    local function helper(x) return x * cfg.scale end
    local pool = threads.Threads(1)
    local got
    pool:addjob(function() return helper(2), cfg.names[2], torch.type(nn.Linear(2, 3)) end,
                function(a, b, c) got = a .. b .. c end)
    pool:synchronize()
    pool:terminate()
    return got
    """)
    assert out == "6bnn.Linear"


def test_errors_propagate_with_thread_and_traceback_and_pool_survives(rt):
    with pytest.raises(LuaError) as e:
        rt.execute(r"""
        local threads = require 'threads'
        _G.pool = threads.Threads(2)
        pool:addjob(function() return 1 end)
        pool:addjob(function() local t = nil; return t.x end)
        pool:addjob(function() return 2 end)
        pool:synchronize()
        """)
    msg = e.value.lua_message
    assert "[thread " in msg and "callback]" in msg
    assert "attempt to index" in msg
    assert "stack traceback" in msg
    # nothing is left pending, the pool still works, terminate is clean
    assert rt.execute("""
    local n
    assert(not pool:hasjob())
    pool:addjob(function() return 41 end, function(v) n = v + 1 end)
    pool:synchronize(); pool:terminate(); pool:terminate()
    return n""") == 42


def test_init_error_raises_at_construction_and_stops_the_pool(rt):
    with pytest.raises(LuaError, match="init failed"):
        rt.execute("""
        local threads = require 'threads'
        threads.Threads(2, function(i) if i == 2 then error('init failed') end end)""")
    assert rt.execute("return require('threads').alive()") == 0


def test_specific_mode_addresses_threads(rt):
    out = rt.execute(r"""
    local threads = require 'threads'
    local pool = threads.Threads(3)
    pool:specific(true)
    local ids = {}
    for i = 3, 1, -1 do
      pool:addjob(i, function() return __threadid end, function(t) ids[#ids + 1] = t end)
    end
    pool:synchronize()
    local ok = pcall(pool.addjob, pool, function() end)   -- an id is required
    pool:terminate()
    table.sort(ids)
    return table.concat(ids, ','), ok
    """)
    assert out == ("1,2,3", False)


def test_dojob_runs_one_endcallback(rt):
    out = rt.execute(r"""
    local threads = require 'threads'
    local pool = threads.Threads(1)
    local n = 0
    for i = 1, 3 do pool:addjob(function() end, function() n = n + 1 end) end
    pool:dojob()
    local after1 = n
    pool:synchronize()
    pool:terminate()
    return after1, n
    """)
    assert out == (1, 3)


def _pools_do_not_leak(rt, n):
    alive = rt.execute(r"""
    local threads = require 'threads'
    for k = 1, %d do
      local pool = threads.Threads(2)
      pool:addjob(function() return 1 end)
      pool:terminate()
    end
    collectgarbage()
    return threads.alive()
    """ % n)
    assert alive == 0


def test_pools_do_not_leak_threads(rt):
    _pools_do_not_leak(rt, 10)


@pytest.mark.slow
def test_100_pools_do_not_leak_threads(rt):
    _pools_do_not_leak(rt, 100)


def test_worker_compute_threads_are_a_share_of_the_cores(rt):
    n_main, n_worker = rt.execute(r"""
    local threads = require 'threads'
    torch.setnumthreads(4)
    local pool = threads.Threads(2)
    local nw
    pool:addjob(function() return torch.getnumthreads() end, function(v) nw = v end)
    pool:synchronize(); pool:terminate()
    return torch.getnumthreads(), nw
    """)
    assert (n_main, n_worker) == (4, 2)


def test_torch_threads_package_forms(rt):
    """What programs of the era call: the package as the class (`Threads(n, init, main)` after
    `local Threads = require 'threads'`, `Threads.serialization(...)`), the last init function's
    results per worker, and the queries acceptsjob/haserror/isrunning."""
    out = rt.execute(r"""
    local Threads = require 'threads'
    Threads.serialization('threads.sharedserialize')
    assert(Threads.serialization() == 'threads.sharedserialize')
    local data = torch.range(1, 10)
    local pool, sizes = Threads(3, function() _G.base = 100 end,
                                function(idx) _G.t = data; return data:size(1) + idx, base end)
    Threads.serialization('threads.serialize')
    assert(#sizes == 3)
    local seen = {}
    for _, r in ipairs(sizes) do
       assert(r[2] == 100)
       seen[#seen + 1] = r[1]
    end
    table.sort(seen)
    assert(pool:acceptsjob() and not pool:haserror() and pool:isrunning())
    -- the shared tensor is the same memory in the workers
    pool:addjob(function() t[1] = -1 end)
    pool:synchronize()
    pool:terminate()
    assert(not pool:isrunning())
    return table.concat(seen, ',') .. ' ' .. data[1]
    """)
    assert out == "11,12,13 -1"


def test_queue_carries_jobs_between_states(rt):
    """threads.Queue: a bounded queue of closures; workers attach by id, producers wait while it is full,
    dojob runs the job where it is taken and returns its results."""
    out = rt.execute(r"""
    local threads = require 'threads'
    local q = threads.Queue(2)
    assert(q.size == 2 and q.isempty == 1 and q.isfull == 0)
    local pool = threads.Threads(2)
    local id = q:id()
    -- two workers each put 5 jobs through a queue of 2 slots: they wait for the main state to take them
    for w = 1, 2 do
       pool:addjob(function()
          local Q = require('threads').Queue(id)
          for k = 1, 5 do Q:addjob(function(a, b) return a * 100 + b, __threadid end, w, k) end
          return true
       end)
    end
    local got = {}
    for i = 1, 10 do
       local v = q:dojob()
       got[#got + 1] = v
    end
    pool:synchronize()
    pool:terminate()
    assert(q.isempty == 1)
    table.sort(got)
    return table.concat(got, ',')
    """)
    assert out == "101,102,103,104,105,201,202,203,204,205"
