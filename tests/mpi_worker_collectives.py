"""Run under mpiexec by tests/test_collectives.py: one scenario per invocation.

    mpiexec -n N python tests/mpi_worker_collectives.py SCENARIO [options]

Rank 0 prints one line "OK <details>" when the scenario passed on every
rank; any failure prints "FAIL ..." and exits non-zero.
"""
import argparse
import hashlib
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mpi4py import MPI  # noqa: E402

from pytorch_bridge import mpi  # noqa: E402

COMM = MPI.COMM_WORLD
R, P = COMM.Get_rank(), COMM.Get_size()


def fail(msg):
    print("FAIL rank %d/%d: %s" % (R, P, msg), flush=True)
    sys.stdout.flush()
    COMM.Abort(1)


def all_ok(ok, what):
    """Every rank's verdict; fails everywhere if one rank failed."""
    oks = COMM.allgather(bool(ok))
    if not all(oks):
        fail("%s (failed on ranks %s)" % (what, [i for i, o in enumerate(oks) if not o]))


def props(args):
    """Every algorithm x counts x colors x {float32, float64} x {in, out of place}, against MPI_Allreduce.

    The verdicts and result digests are gathered once at the end, so the run
    costs little more than the collectives under test."""
    seed = COMM.bcast(args.seed if args.seed else int.from_bytes(os.urandom(4), "little"))
    rng = np.random.default_rng(seed * 1000 + R)
    counts = [0, 1, 2, 3, 5, 7, 13, 31, 97, 1009, 4099]
    counts += [int(c) for c in np.random.default_rng(seed).integers(1, args.max_count, args.big)]
    results = []   # (case, ok, digest)
    n = 0
    for alg in args.algorithms.split(","):
        colors = [0, 1, 2, 3] if alg.startswith("multicolor") else [0]
        for count in counts:
            for c in colors:
                for dtype, inplace in ((np.float32, n % 2 == 0), (np.float64, n % 2 == 1)):
                    # small chunks so that small counts still run many pipeline steps
                    chunk = [0, 64, 1024, 4096][n % 4] if count < 5000 else [0, 16384][n % 2]
                    x = rng.standard_normal(count).astype(dtype)
                    ref = np.empty_like(x)
                    COMM.Allreduce(x, ref, op=MPI.SUM)
                    if inplace:
                        y = x.copy()
                        got = mpi.allreduce(y, algorithm=alg, colors=c, chunk=chunk)
                        same_object = got is y
                    else:
                        x0 = x.copy()
                        y = np.full_like(x, np.nan)
                        got = mpi.allreduce(x, out=y, algorithm=alg, colors=c, chunk=chunk)
                        same_object = got is y and np.array_equal(x, x0)  # input untouched
                    tol = (1e-5 if dtype == np.float32 else 1e-12) * P
                    ok = same_object and np.allclose(y, ref, rtol=tol, atol=tol)
                    # deterministic: the same bits when run again
                    again = mpi.allreduce(x.copy(), algorithm=alg, colors=c, chunk=chunk)
                    ok = ok and np.array_equal(again.view(np.uint8), y.view(np.uint8))
                    case = "alg=%s count=%d dtype=%s inplace=%s colors=%d chunk=%d maxerr=%s" % (
                        alg, count, np.dtype(dtype).name, inplace, c, chunk,
                        float(np.max(np.abs(y - ref))) if count else 0)
                    results.append((case, bool(ok), hashlib.sha1(y.tobytes()).hexdigest()))
                    n += 1
    everyone = COMM.gather(results, root=0)
    if R == 0:
        bad = []
        for i, (case, _, _) in enumerate(results):
            oks = [everyone[r][i][1] for r in range(P)]
            same = len({everyone[r][i][2] for r in range(P)}) == 1   # bitwise equal on every rank
            if not all(oks) or not same:
                bad.append("%s: wrong on ranks %s, bitwise equal everywhere: %s" % (
                    case, [r for r in range(P) if not oks[r]], same))
        if bad:
            print("FAIL props seed=%d, %d of %d cases:\n  %s" % (seed, len(bad), n, "\n  ".join(bad[:20])), flush=True)
            COMM.Abort(1)
        print("OK props %d cases on %d ranks (seed %d, %s)" % (n, P, seed, mpi.world().library), flush=True)
    COMM.Barrier()


def nonblocking(args):
    """iallreduce progresses on the communication thread while this thread computes."""
    n = args.max_count
    x = np.arange(n, dtype=np.float64) * (R + 1)
    expect = np.arange(n, dtype=np.float64) * (P * (P + 1) / 2)
    h = mpi.iallreduce(x, algorithm=args.algorithms)
    # a second request queued behind the first, out of place
    y = np.ones(1000, np.float32)
    out = np.empty_like(y)
    h2 = mpi.iallreduce(y, out=out, algorithm="ring")
    work, polls = 0.0, 0
    while not h.test():
        work += float(np.sum(np.sqrt(np.arange(20000.0))))  # the "backward pass"
        polls += 1
    res = mpi.wait(h)
    ok = res is x and np.allclose(x, expect) and polls >= 0
    ok = ok and np.array_equal(mpi.wait(h2), np.full(1000, P, np.float32))
    # blocking calls after queued ones keep the order on every rank
    hs = [mpi.iallreduce(np.full(10 + i, float(R), np.float32)) for i in range(5)]
    z = mpi.allreduce(np.ones(7, np.float32))
    ok = ok and np.array_equal(z, np.full(7, P, np.float32))
    for i, hh in enumerate(hs):
        ok = ok and np.array_equal(hh.wait(), np.full(10 + i, P * (P - 1) / 2, np.float32))
    all_ok(ok, "non-blocking results")
    if R == 0:
        print("OK nonblocking polls=%d" % polls, flush=True)


def mismatch(args):
    """Different counts or types on different ranks: an error on every rank, then the next call works."""
    errors = []
    for case in ("count", "dtype"):
        if case == "count":
            x = np.ones(10 + (R == P - 1), np.float32)
        else:
            x = np.ones(10, np.float64 if R == 0 else np.float32)
        try:
            mpi.allreduce(x, algorithm=args.algorithms)
            errors.append(None)
        except mpi.MPIError as e:
            errors.append(str(e))
    ok = all(e is not None and "disagree" in e for e in errors)
    ok = ok and "element count" in errors[0] and "element type" in errors[1]
    y = mpi.allreduce(np.ones(5, np.float32), algorithm=args.algorithms)
    ok = ok and np.array_equal(y, np.full(5, P, np.float32))
    all_ok(ok, "mismatch errors: %s" % errors)
    if R == 0:
        print("OK mismatch: %s" % errors[0], flush=True)


def hang(args):
    """The last rank stops taking part; the others must give up after the timeout."""
    mpi.world(timeout=args.timeout)
    mpi.allreduce(np.ones(100, np.float32))   # all ranks fine so far
    if R == P - 1:
        time.sleep(600)
    mpi.allreduce(np.ones(args.max_count, np.float32), algorithm=args.algorithms)
    print("FAIL rank %d: allreduce returned without the stopped rank" % R, flush=True)


def die(args):
    """The last rank dies in the middle of a collective."""
    if R == P - 1:  # dies after a few tasks of a schedule (test hook of the C engine)
        os.environ["LUATORCH_MPI_FAULT_AFTER"] = "5"
    mpi.world(timeout=args.timeout)
    mpi.allreduce(np.ones(100, np.float32), algorithm="mpi")
    mpi.allreduce(np.ones(args.max_count, np.float32), algorithm=args.algorithms)
    print("FAIL rank %d: allreduce returned without the dead rank" % R, flush=True)


def lua(args):
    """The Lua package: require 'mpi' on Torch tensors."""
    from pytorch_bridge import Runtime

    rt = Runtime()
    res = rt.execute(r"""
        local mpi = require 'mpi'
        local r, p = mpi.rank(), mpi.size()
        local function range(t)   -- min and max of a tensor's elements
           local lo, hi = math.huge, -math.huge
           t:apply(function(v) lo, hi = math.min(lo, v), math.max(hi, v) end)
           return lo, hi
        end
        local function all(t, v) local lo, hi = range(t); return lo == v and hi == v end
        local function sum(t) local s = 0; t:apply(function(v) s = s + v end); return s end
        local out = {}
        out.rank, out.size = r, p
        mpi.barrier()
        for _, alg in ipairs{'auto', 'mpi', 'ring', 'rhd', 'tree', 'multicolor'} do
           for _, T in ipairs{'torch.FloatTensor', 'torch.DoubleTensor'} do
              local t = torch.Tensor():type(T):resize(1001):fill(r + 1)
              local ret = mpi.allreduce(t, {algorithm = alg, colors = 2, chunk = 1024})
              assert(ret == t, 'allreduce returns its tensor')
              assert(all(t, p * (p + 1) / 2), alg .. ' ' .. T .. ': wrong sum')
           end
        end
        -- non-contiguous tensor: a column of a matrix
        local m = torch.DoubleTensor(6, 3):fill(1)
        local col = m:select(2, 2)
        mpi.allreduce(col)
        assert(sum(col) == 6 * p and sum(m:select(2, 1)) == 6, 'non-contiguous allreduce')
        -- non-blocking
        local t = torch.FloatTensor(50000):fill(2)
        local h = mpi.iallreduce(t, {algorithm = 'multicolor'})
        mpi.wait(h)
        assert(all(t, 2 * p), 'iallreduce')
        -- broadcast
        local b = torch.LongTensor(4):fill(r)
        mpi.broadcast(b, p - 1)
        assert(all(b, p - 1), 'broadcast')
        -- errors are Lua errors
        local ok, err = pcall(mpi.allreduce, torch.IntTensor(3))
        assert(not ok and err:find('FloatTensor or DoubleTensor'), tostring(err))
        ok, err = pcall(mpi.allreduce, torch.FloatTensor(3 + (r == 0 and 1 or 0)))
        assert(not ok and err:find('disagree'), tostring(err))
        return out.rank, out.size
    """)
    ok = tuple(res) == (R, P)
    all_ok(ok, "lua: %r" % (res,))
    if R == 0:
        print("OK lua", flush=True)


# The start of the Lua scripts of the GPU workers: cutorch's GPU backend with two GPUs, the mpi package, rank and size.
GPU_PRELUDE_LUA = r"""
        require 'cudnn'
        require 'optim'
        local mpi = require 'mpi'
        assert(cutorch.backend == 'gpu' and cutorch.getDeviceCount() >= 2, 'two GPUs expected')
        local r, p = mpi.rank(), mpi.size()
"""

# Lua of the GPU workers (after GPU_PRELUDE_LUA): nn.DataParallelTable over the rank's two GPUs, its gradient buckets
# allreduced across ranks while the backward runs (allreduceGradients), trained three steps as the same table over
# CPU workers, each rank on its own data. compareTraining() asserts that both train alike and that the ranks end
# with the same parameters; it returns mpi.stagingStats() before and after the GPU training.
DPT_TRAINING_LUA = r"""
        local function train(ty)
           if ty:match('Cuda') then cutorch.setDevice(1) end
           torch.manualSeed(5)
           local net = nn.Sequential()
              :add(cudnn.SpatialConvolution(3, 4, 3, 3, 1, 1, 1, 1)):add(cudnn.SpatialBatchNormalization(4))
              :add(cudnn.ReLU(true)):add(nn.View(4 * 6 * 6)):add(nn.Linear(4 * 6 * 6, 5)):double():type(ty)
           local dpt = nn.DataParallelTable(1, true):add(net, {1, 2}):implementation('optimized')
              :threads(function() require 'cudnn' end)
           dpt:allreduceGradients(mpi, {size = 40})   -- small buckets: several per step
           local crit = nn.CrossEntropyCriterion():type(ty)
           local w, g = dpt:getParameters()
           torch.manualSeed(100 + r)   -- each rank its own data
           local x, y = torch.randn(6, 3, 6, 6):type(ty), torch.LongTensor(6):random(1, 5)
           if ty:match('Cuda') then y = y:cudaLong() end
           local state, losses = {learningRate = 0.1, momentum = 0.9}, {}
           for step = 1, 3 do
              optim.sgd(function()
                 dpt:zeroGradParameters()
                 losses[step] = dpt:forwardBackward(x, y, crit)
                 dpt:waitGradients()
                 g:div(p)
                 return losses[step], g
              end, w, state)
           end
           dpt.impl:close()
           return losses, w:double()
        end
        local function compareTraining()
           local l1, w1 = train('torch.DoubleTensor')
           local before = mpi.stagingStats()
           local l2, w2 = train('torch.CudaDoubleTensor')
           local after = mpi.stagingStats()
           local worst = 0
           for i = 1, #l1 do worst = math.max(worst, math.abs(l1[i] - l2[i]) / math.abs(l1[i])) end
           local dw = (w1 - w2):abs():max()
           assert(worst < 1e-9 and dw < 1e-9, string.format('GPU training vs CPU: loss %g, parameters %g', worst, dw))
           -- and the ranks ended with the same parameters
           local sum = w2:clone()
           mpi.allreduce(sum)
           assert((sum / p - w2):abs():max() < 1e-12, 'ranks disagree')
           return before, after
        end
"""


def run_gpu_lua(scenario, script):
    """Run GPU_PRELUDE_LUA, DPT_TRAINING_LUA and then script (which returns rank and size) in a Runtime."""
    from pytorch_bridge import Runtime

    res = Runtime().execute(GPU_PRELUDE_LUA + DPT_TRAINING_LUA + script)
    all_ok(tuple(res) == (R, P), "%s: %r" % (scenario, res))
    if R == 0:
        print("OK " + scenario, flush=True)


def lua_gpu(args):
    """The Lua package on tensors in GPU memory (run with cutorch's GPU backend and two GPUs per rank): allreduce,
    iallreduce and broadcast of Cuda tensors (staged through host memory: this MPI says it is not CUDA-aware) give
    what they give on host tensors and leave the tensors on their GPUs; and nn.DataParallelTable over the rank's two GPUs, its gradient buckets
    summed across ranks while the backward runs (allreduceGradients), trains as the same table over CPU workers
    with the same allreduce, each rank on its own data."""
    run_gpu_lua("lua_gpu", r"""
        local aware, why = mpi.cudaAware()
        assert(not aware and why:find('says no'), 'detection: ' .. tostring(aware) .. ', ' .. why)
        -- collectives on device tensors
        cutorch.setDevice(2)
        local t = torch.CudaTensor(3001):fill(r + 1)
        mpi.allreduce(t, {algorithm = 'multicolor', colors = 2, chunk = 512})
        assert(t:getDevice() == 2 and t:min() == p * (p + 1) / 2 and t:max() == p * (p + 1) / 2, 'allreduce')
        local m = torch.CudaDoubleTensor(5, 4):fill(r)
        local col = m:select(2, 3)
        local h = mpi.iallreduce(col, {algorithm = 'ring'})
        mpi.wait(h)
        assert(col:min() == p * (p - 1) / 2 and m:select(2, 1):max() == r, 'non-contiguous iallreduce')
        local b = torch.CudaLongTensor(4):fill(r)
        mpi.broadcast(b, p - 1)
        assert(b:min() == p - 1 and b:max() == p - 1 and b:getDevice() == 2, 'broadcast')
        -- several iallreduces in flight at once, waited out of order: each stages in a pinned buffer of its own
        local hs, ts = {}, {}
        for i = 1, 4 do
           ts[i] = torch.CudaTensor(100 * i + 7):fill(r + i)
           hs[i] = mpi.iallreduce(ts[i])
        end
        for i = 4, 1, -1 do mpi.wait(hs[i]) end
        for i = 1, 4 do
           local want = p * (p - 1) / 2 + p * i
           assert(ts[i]:min() == want and ts[i]:max() == want, 'iallreduce in flight ' .. i)
        end
        cutorch.setDevice(1)
        local before, after = compareTraining()
        -- the buckets of three steps staged in pinned buffers allocated in the first one
        local made, reused = after.buffers - before.buffers, after.reuses - before.reuses
        assert(after.pageable == 0 and made >= 1 and reused >= 2 * made,
               string.format('staging: %d buffers made, %d reuses, %d pageable', made, reused, after.pageable))
        assert(mpi.stagingStats().direct == 0, 'device memory went to an MPI that is not CUDA-aware')
        return r, p
    """)


def lua_gpu_aware(args):
    """The Lua package on device tensors with the MPI taken as CUDA-aware (LUATORCH_MPI_CUDA_AWARE=1; the emulated
    driver's device memory unguarded, so that the host MPI can read it as a CUDA-aware one reads GPU memory):
    'auto' and 'mpi' hand the device memory to MPI without staging (stagingStats: direct, nothing staged), blocking,
    non-blocking with several in flight, non-contiguous and broadcast, on values still queued on the device (lazy
    streams: without the synchronize MPI would read them before they are there), bitwise as the staged path and
    the sum on the CPU; algorithms asked for by name still stage; and DataParallelTable's bucketed gradient
    allreduce goes direct and trains as on the CPU."""
    # auto's choice for host memory: ring, one of our host-reducing algorithms, so that a device tensor that went
    # to it instead of to MPI's own would show (the agreement check of the mixed 'auto'/'mpi' call below)
    mpi.world().set_table([(1, "ring", 1)])
    run_gpu_lua("lua_gpu_aware", r"""
        local aware, why = mpi.cudaAware()
        assert(aware == true and why == 'LUATORCH_MPI_CUDA_AWARE=1', 'forced: ' .. tostring(aware) .. ', ' .. why)
        local function staged(s) return s.buffers + s.reuses + s.pageable end
        -- moves of device memory since `s`: (direct, staged)
        local function movesSince(s)
           local now = mpi.stagingStats()
           return now.direct - s.direct, staged(now) - staged(s)
        end
        local function expectMoves(s, direct, staging, what)
           local d, st = movesSince(s)
           assert(d == direct and st == staging,
                  string.format('%s: %d direct, %d staged; %d, %d expected', what, d, st, direct, staging))
        end
        -- rank q's values of case c (every rank can make every rank's), on the host in double
        local function values(c, q, n)
           torch.manualSeed(1000 * c + q)
           return torch.randn(n)
        end
        -- the sum over ranks in rank order on the CPU, in the tensor type `host` (MPI's float sum is float)
        local function cpuSum(c, n, host)
           local sum = values(c, 0, n):type(host)
           for q = 1, p - 1 do sum:add(values(c, q, n):type(host)) end
           return sum
        end
        -- a device tensor of this rank's values of case c, doubled on the device: still queued when MPI is called
        local function onDevice(c, n, ty)
           return torch.Tensor():type(ty):resize(n):copy(values(c, r, n)):mul(2)
        end
        local function maxDiff(a, b) return (a:double() - b:double()):abs():max() end
        local tol = p <= 2 and 0 or 1e-5   -- two ranks: one addition, the same bits in any order

        -- blocking, 'auto' and 'mpi', on the second GPU
        cutorch.setDevice(2)
        for c, case in ipairs{{'auto', 'torch.CudaTensor', 'torch.FloatTensor', 3001},
                              {'mpi', 'torch.CudaDoubleTensor', 'torch.DoubleTensor', 1237}} do
           local alg, ty, host, n = case[1], case[2], case[3], case[4]
           local s = mpi.stagingStats()
           local t = onDevice(c, n, ty)
           assert(mpi.allreduce(t, {algorithm = alg}) == t, 'allreduce returns its tensor')
           expectMoves(s, 1, 0, alg .. ' ' .. ty)
           local want = cpuSum(c, n, host):mul(2)
           assert(t:getDevice() == 2 and torch.type(t) == ty, 'stays on its device')
           assert(maxDiff(t, want) <= tol, alg .. ' ' .. ty .. ': ' .. maxDiff(t, want))
           -- the staged path (an algorithm of ours, asked for by name) gives the same bits
           for _, named in ipairs{'ring', 'multicolor'} do
              s = mpi.stagingStats()
              local u = onDevice(c, n, ty)
              mpi.allreduce(u, {algorithm = named, colors = 2, chunk = 512})
              expectMoves(s, 0, 1, named .. ' ' .. ty)
              assert(maxDiff(u, t) <= tol, named .. ' vs direct: ' .. maxDiff(u, t))
           end
        end
        -- 'auto' on a device tensor is MPI's algorithm, whatever auto runs on host memory (ring, by the table set
        -- above): a rank asking 'auto' and one asking 'mpi' agree on the collective
        local s = mpi.stagingStats()
        local v = onDevice(4, 99, 'torch.CudaTensor')
        mpi.allreduce(v, {algorithm = r == 0 and 'auto' or 'mpi'})
        expectMoves(s, 1, 0, "'auto' beside 'mpi'")
        assert(maxDiff(v, cpuSum(4, 99, 'torch.FloatTensor'):mul(2)) <= tol, "'auto' beside 'mpi'")
        -- non-contiguous: a column, through a contiguous copy on its device (not the current one); the other columns
        -- untouched
        s = mpi.stagingStats()
        local m = torch.CudaDoubleTensor(7, 3):copy(values(3, r, 21):view(7, 3)):mul(1)
        local col = m:select(2, 2)
        cutorch.setDevice(1)
        local allocations = cutorch.getAllocatorStats(1).allocs
        mpi.allreduce(col, {algorithm = 'mpi'})
        assert(cutorch.getAllocatorStats(1).allocs == allocations, 'non-contiguous: a copy on the current device')
        cutorch.setDevice(2)
        expectMoves(s, 1, 0, 'non-contiguous')
        local want = cpuSum(3, 21, 'torch.DoubleTensor'):view(7, 3)
        assert(maxDiff(col, want:select(2, 2)) <= tol, 'non-contiguous column')
        assert(maxDiff(m:select(2, 1), values(3, r, 21):view(7, 3):select(2, 1)) == 0
               and maxDiff(m:select(2, 3), values(3, r, 21):view(7, 3):select(2, 3)) == 0, 'other columns')
        -- several iallreduces in flight (direct, a staged one among them), waited out of order, a blocking call
        -- queued behind them
        s = mpi.stagingStats()
        local hs, ts = {}, {}
        for i = 1, 4 do
           ts[i] = onDevice(10 + i, 100 * i + 7, 'torch.CudaTensor')
           hs[i] = mpi.iallreduce(ts[i], {algorithm = i == 3 and 'tree' or 'auto'})
        end
        local z = onDevice(20, 55, 'torch.CudaTensor')
        mpi.allreduce(z)
        for i = 4, 1, -1 do assert(mpi.wait(hs[i]) == ts[i]) end
        expectMoves(s, 4, 1, 'in flight')
        for i = 1, 4 do
           local d = maxDiff(ts[i], cpuSum(10 + i, 100 * i + 7, 'torch.FloatTensor'):mul(2))
           assert(d <= tol, 'iallreduce in flight ' .. i .. ': ' .. d)
        end
        assert(maxDiff(z, cpuSum(20, 55, 'torch.FloatTensor'):mul(2)) <= tol, 'blocking behind the queued ones')
        -- broadcast from the last rank, direct
        s = mpi.stagingStats()
        local b = torch.CudaLongTensor(5):fill(r):add(10)
        mpi.broadcast(b, p - 1)
        expectMoves(s, 1, 0, 'broadcast')
        assert(b:min() == p + 9 and b:max() == p + 9 and b:getDevice() == 2, 'broadcast')
        -- host tensors are host tensors
        s = mpi.stagingStats()
        local hostT = torch.FloatTensor(9):fill(r + 1)
        mpi.allreduce(hostT)
        expectMoves(s, 0, 0, 'host tensor')
        assert(hostT:min() == p * (p + 1) / 2 and hostT:max() == p * (p + 1) / 2, 'host tensor')
        cutorch.setDevice(1)
        -- DataParallelTable's buckets, each an iallreduce of the flat gradient's narrow, go direct
        local before, after = compareTraining()
        local made, reused = after.buffers - before.buffers, after.reuses - before.reuses
        local direct = after.direct - before.direct
        assert(made == 0 and reused == 0 and after.pageable == before.pageable and direct >= 6,
               string.format('DPT buckets: %d direct, %d staging buffers made, %d reused', direct, made, reused))
        return r, p
    """)


def cuda_aware(args):
    """Detection: this MPI's own answer, the override, and one answer for all ranks."""
    aware, why = mpi.cuda_aware()
    ok = aware is False and why.endswith("says no")
    all_ok(ok, "the MPI library's answer: %s, %s" % (aware, why))
    answers = []
    for setting in (["1"] * (P - 1) + ["auto"], ["1"] * P, ["0"] * P, ["1"] * (P - 1) + ["maybe"]):
        os.environ[mpi.CUDA_AWARE_VAR] = setting[R]
        try:
            comm = mpi.Communicator()
            answers.append((comm.cuda_aware, comm.cuda_aware_reason))
            comm.close()
        except mpi.MPIError as e:
            answers.append(("error", str(e)))
    del os.environ[mpi.CUDA_AWARE_VAR]
    ok = answers[0][0] is False and "not CUDA-aware on ranks [%d]" % (P - 1) in answers[0][1]
    ok = ok and answers[1] == (True, "LUATORCH_MPI_CUDA_AWARE=1") and answers[2] == (False, "LUATORCH_MPI_CUDA_AWARE=0")
    ok = ok and answers[3] == ("error", "LUATORCH_MPI_CUDA_AWARE='maybe': auto, 0 or 1 expected")
    all_ok(ok, "overrides: %s" % answers)
    if R == 0:
        print("OK cuda_aware: %s | %s" % (why, answers[0][1]), flush=True)


def api(args):
    """Argument errors raise before any communication (run as a singleton or under mpiexec)."""
    def raises(exc, fn, *a, **k):
        try:
            fn(*a, **k)
        except exc as e:
            return str(e)
        fail("%s%r did not raise %s" % (fn.__name__, a, exc.__name__))

    x = np.ones(10, np.float32)
    msgs = [
        raises(TypeError, mpi.allreduce, np.ones(4, np.int32)),
        raises(TypeError, mpi.allreduce, [1.0, 2.0]),
        raises(ValueError, mpi.allreduce, np.ones((4, 4), np.float32)[:, 1]),
        raises(ValueError, mpi.allreduce, x, algorithm="fastest"),
        raises(ValueError, mpi.allreduce, x, out=np.ones(9, np.float32)),
        raises(ValueError, mpi.allreduce, x, out=np.ones(10, np.float64)),
        raises(mpi.MPIError, mpi.allreduce, x, algorithm="multicolor", colors=99),
        raises(mpi.MPIError, mpi.broadcast, x, P),
    ]
    alg, colors, chunk = mpi.world().choose(1 << 20)
    ok = alg in mpi.ALGORITHMS and chunk > 0 and mpi.rank() == R and mpi.size() == P
    all_ok(ok, "choose/rank/size")
    if R == 0:
        print("OK api: " + " | ".join(msgs), flush=True)


def trees(args):
    """multicolor's trees: binary, one root, and for two colors (the two-tree)
    no rank interior in both, for every p up to 64."""
    L = mpi.lib()
    for p in range(1, 65):
        for colors in (1, 2, 3, 4):
            interior = []
            for c in range(colors):
                parents = [L.ltc_multicolor_parent(p, colors, c, r) for r in range(p)]
                if parents.count(-1) != 1:
                    fail("p=%d color %d/%d: %d roots" % (p, c, colors, parents.count(-1)))
                kids = {q: parents.count(q) for q in set(parents) if q >= 0}
                if any(k > 2 for k in kids.values()):
                    fail("p=%d color %d/%d: a node with more than 2 children" % (p, c, colors))
                for r in range(p):  # every rank reaches the root
                    q, steps = r, 0
                    while parents[q] >= 0 and steps <= p:
                        q, steps = parents[q], steps + 1
                    if steps > p:
                        fail("p=%d color %d/%d: cycle" % (p, c, colors))
                interior.append(set(kids))
            if colors == 2 and interior[0] & interior[1]:
                fail("p=%d: ranks %s interior in both trees" % (p, sorted(interior[0] & interior[1])))
    print("OK trees", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario")
    ap.add_argument("--algorithms", default=None)
    ap.add_argument("--max-count", type=int, default=300000)
    ap.add_argument("--big", type=int, default=1, help="random large counts per algorithm")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()
    if args.algorithms is None:
        args.algorithms = "mpi,ring,rhd,tree,multicolor,multicolor_ring,auto" if args.scenario == "props" else "auto"
    globals()[args.scenario](args)


if __name__ == "__main__":
    main()
