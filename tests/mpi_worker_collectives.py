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


def lua_gpu(args):
    """The Lua package on tensors in GPU memory (run with cutorch's GPU backend and two GPUs per rank): allreduce,
    iallreduce and broadcast of Cuda tensors (staged through host memory) give what they give on host tensors and
    leave the tensors on their GPUs; and nn.DataParallelTable over the rank's two GPUs, its gradient buckets
    summed across ranks while the backward runs (allreduceGradients), trains as the same table over CPU workers
    with the same allreduce, each rank on its own data."""
    from pytorch_bridge import Runtime

    rt = Runtime()
    res = rt.execute(r"""
        require 'cudnn'
        require 'optim'
        local mpi = require 'mpi'
        assert(cutorch.backend == 'gpu' and cutorch.getDeviceCount() >= 2, 'two GPUs expected')
        local r, p = mpi.rank(), mpi.size()
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
        -- DataParallelTable over this rank's GPUs with its buckets allreduced across ranks
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
        local l1, w1 = train('torch.DoubleTensor')
        local before = mpi.stagingStats()
        local l2, w2 = train('torch.CudaDoubleTensor')
        -- the buckets of three steps staged in pinned buffers allocated in the first one
        local after = mpi.stagingStats()
        local made, reused = after.buffers - before.buffers, after.reuses - before.reuses
        assert(after.pageable == 0 and made >= 1 and reused >= 2 * made,
               string.format('staging: %d buffers made, %d reuses, %d pageable', made, reused, after.pageable))
        local worst = 0
        for i = 1, #l1 do worst = math.max(worst, math.abs(l1[i] - l2[i]) / math.abs(l1[i])) end
        local dw = (w1 - w2):abs():max()
        assert(worst < 1e-9 and dw < 1e-9, string.format('GPU training vs CPU: loss %g, parameters %g', worst, dw))
        -- and the ranks ended with the same parameters
        local sum = w2:clone()
        mpi.allreduce(sum)
        assert((sum / p - w2):abs():max() < 1e-12, 'ranks disagree')
        return r, p
    """)
    ok = tuple(res) == (R, P)
    all_ok(ok, "lua_gpu: %r" % (res,))
    if R == 0:
        print("OK lua_gpu", flush=True)


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
