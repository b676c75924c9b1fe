"""cutorch's pinned host memory, the uploads of kernel tables, events and _sleep on the GPU backend
(native/src/cuda_pinned.c, lua/cutorch/gpu.lua), as cutorch's own test.lua asks for them.

In CI these run on the emulated driver (test_cutorch_gpu.py's last test), whose streams are lazy: queued work runs
only when something waits for it, and a copy from pinned memory reads the host bytes when it runs. So a pinned block
handed out again while a queued copy still has to read it, or a stream that does not wait for an event, gives wrong
values here, as it may on a GPU. Oracles: numpy copies of the values taken before the host memory was reused, and
the driver's own order."""
import numpy as np
import pytest

from pytorch_bridge import LuaError
from test_cutorch_gpu import gpu, to_host  # noqa: F401  (the fixture)

PTR = "function(t) return tonumber(ffi.cast('intptr_t', t:data())) end"


def _lua(rt, src):
    return rt.eval("function(...) local ffi = require 'ffi' " + src + " end")


def test_a_freed_pinned_block_serves_the_next_request_of_its_size(gpu):
    rt = gpu
    r = _lua(rt, """
        local ptr = """ + PTR + """
        local a = cutorch.createCudaHostTensor(100)           -- 400 bytes: a 512-byte block
        local pa = ptr(a)
        a = nil; collectgarbage(); collectgarbage()
        local b = cutorch.createCudaHostTensor({10, 10})       -- the same size: the same block
        local c = cutorch.createCudaHostDoubleTensor(100)      -- 800 bytes: another block
        return pa, ptr(b), ptr(c), b:dim(), b:sum()""")()
    pa, pb, pc, dim, total = r
    assert pb == pa and pc != pa and dim == 2
    assert total == 0   # handed out zero-filled, as every new host storage


def test_a_pinned_tensor_resizes_as_cutorchs_did(gpu, rng):
    """fb.resnet.torch's trainer resizes an empty createCudaHostTensor() to each batch and copyAsync's it: a resize
    keeps the elements that stay and zero-fills the new ones, the tensor stays pinned (its copies are still
    queued, not made synchronous), a resize within the block's rounded size keeps the block, and the block it
    leaves is not handed out again while a queued copy still reads it."""
    rt = gpu
    a, b = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(40).astype(np.float32)
    r = _lua(rt, """
        local a, b = ...
        local ptr = """ + PTR + """
        local h = cutorch.createCudaHostTensor()
        h:resize(a:size()):copy(a)
        local d1 = torch.CudaTensor(4, 3)
        d1:copyAsync(h)                                   -- queued on the lazy driver: reads h's block when it runs
        local p1 = ptr(h)
        h:resize(40)                                      -- 160 bytes: the same 512-byte block, in place
        local kept, grownZero, p2 = h:narrow(1, 1, 12):clone(), h:narrow(1, 13, 28):clone(), ptr(h)
        h:resize(1000)                                    -- 4000 bytes: another block; the first goes back
        local p3 = ptr(h)
        local other = cutorch.createCudaHostTensor(100)   -- 512 bytes: not the first block while d1's copy is queued
        local p4 = ptr(other)
        h:resize(40):copy(b)
        local d2 = torch.CudaTensor(40)
        local before = cutorch.deviceCallCounts()
        d2:copyAsync(h)
        local after = cutorch.deviceCallCounts()
        cutorch.synchronize()
        return d1, d2, kept, grownZero, p1, p2, p3, p4, after.hostWaits - before.hostWaits""")(
        rt.from_numpy(a), rt.from_numpy(b))
    d1, d2, kept, grown_zero, p1, p2, p3, p4, waits = r
    np.testing.assert_array_equal(to_host(rt, d1), a)
    np.testing.assert_array_equal(to_host(rt, d2), b)
    np.testing.assert_array_equal(rt.to_numpy(kept), a.ravel())
    assert not rt.to_numpy(grown_zero).any()
    assert p2 == p1 and p3 != p1 and p4 != p1
    assert waits == 0   # still pinned: copyAsync queued the copy


def test_a_pinned_block_is_not_reused_while_a_queued_copy_reads_it(gpu, rng):
    """copyAsync from a pinned tensor, then the tensor dropped and a new one of the same size asked for and filled at
    once: the new one must be another block (the copy has not run on the lazy driver), the device gets the first
    values, and once the device has run the copy the first block is handed out again."""
    rt = gpu
    values = rng.standard_normal(300).astype(np.float32)
    src = rt.from_numpy(values.copy())
    d, p1, p2, p3 = _lua(rt, """
        local src = ...
        local ptr = """ + PTR + """
        local h = cutorch.createCudaHostTensor(src:size(1)):copy(src)
        local d = torch.CudaTensor(src:size(1))
        d:copyAsync(h)
        local p1 = ptr(h)
        h = nil; collectgarbage(); collectgarbage()
        local h2 = cutorch.createCudaHostTensor(src:size(1)):fill(-1)
        local p2 = ptr(h2)
        cutorch.synchronize()
        local h3 = cutorch.createCudaHostTensor(src:size(1))
        return d, p1, p2, ptr(h3)""")(src)
    assert p2 != p1 and p3 == p1
    np.testing.assert_array_equal(to_host(rt, d), values)


def test_a_programs_copy_from_pageable_memory_waits_as_cudas_does(gpu, rng):
    """tensor:copy(host tensor) from ordinary memory is synchronous, as CUDA's cudaMemcpy from pageable memory: one
    host wait, the source free to rewrite at once, and work queued afterwards on another stream (with no event)
    sees the bytes."""
    rt = gpu
    values = rng.standard_normal((7, 9)).astype(np.float32)
    src = rt.from_numpy(values.copy())
    waits, got = _lua(rt, """
        local src = ...
        cutorch.reserveStreams(2)
        local d, e = torch.CudaTensor(7, 9), torch.CudaTensor(7, 9)
        cutorch.synchronize()
        cutorch.setStream(1)
        local c0 = cutorch.deviceCallCounts()
        d:copy(src)
        local c1 = cutorch.deviceCallCounts()
        src:fill(-5)
        cutorch.setStream(2)
        e:copy(d)
        local got = e:float()
        cutorch.setStream(0)
        return c1.hostWaits - c0.hostWaits, got""")(src)
    assert waits == 1
    np.testing.assert_array_equal(rt.to_numpy(got), values)


def test_kernel_tables_upload_without_waiting_and_pin_a_bounded_number_of_blocks(gpu, rng):
    """The host tables a kernel reads (a padding layer's index maps here) go up through cached pinned blocks without
    waiting for the GPU. 300 forwards with nothing waiting in between (on the lazy emulated driver nothing runs):
    at most 64 blocks of a size are used by queued copies at once (the next upload then copies synchronously, which
    lets them all run), so they pin at most 64 new blocks; every output is the CPU module's."""
    rt = gpu
    rt.execute("require 'cunn'")
    x = rng.standard_normal((2, 3, 5, 4))
    r = _lua(rt, """
        local x = ...
        local v = ffi.new('int64_t[4]')
        local function allocs() torch.C.lt_cuda_pinned_cache_stats(v, v + 1, v + 2, v + 3) return tonumber(v[3]) end
        local cpu = nn.SpatialReplicationPadding(2, 1, 1, 3):double()
        local m = cpu:clone():type('torch.CudaDoubleTensor')
        local xd = x:cudaDouble()
        cutorch.synchronize()
        local a0, w0 = allocs(), cutorch.deviceCallCounts().hostWaits
        m:forward(xd)
        local w1 = cutorch.deviceCallCounts().hostWaits
        local outs = {}
        for i = 1, 300 do outs[i] = m:forward(xd):clone() end
        local a1 = allocs()
        local worst = 0
        local want = cpu:forward(x)
        for i = 1, 300 do worst = math.max(worst, (outs[i]:double() - want):abs():max()) end
        return w1 - w0, a1 - a0, worst""")(rt.from_numpy(x))
    assert r[0] == 0 and r[1] <= 64 and r[2] == 0, tuple(r)


def test_empty_cache_frees_the_blocks_nothing_uses(gpu):
    rt = gpu
    stats = _lua(rt, """
        local C = torch.C
        local v = ffi.new('int64_t[4]')
        C.lt_cuda_pinned_cache_stats(v, v + 1, v + 2, v + 3)
        return tonumber(v[0]), tonumber(v[2])""")
    keep = rt.eval("cutorch.createCudaHostTensor(5000)")
    rt.execute("local t = cutorch.createCudaHostTensor(70000); t = nil; collectgarbage(); collectgarbage()")
    blocks, free = stats()
    assert blocks >= 2 and free >= 1
    rt.execute("cutorch.synchronize(); cutorch.emptyCache()")   # (no copy still reads a block)
    blocks2, free2 = stats()
    assert free2 == 0 and blocks2 == blocks - free and blocks2 >= 1
    assert rt.eval("function(t) return t:size(1) end")(keep) == 5000   # a held block stays


def test_host_tensor_forms_and_half(gpu, rng):
    rt = gpu
    sizes = _lua(rt, """
        local a = cutorch.createCudaHostTensor(3, 4, 5)
        local b = cutorch.createCudaHostTensor(torch.LongStorage({4, 5}))
        local c = cutorch.createCudaHostTensor({2, 3})
        local e = cutorch.createCudaHostTensor()
        return a:size():totable(), b:size():totable(), c:size():totable(), e:storage() ~= nil, e:nElement()""")()
    assert [list(s.values()) for s in sizes[:3]] == [[3, 4, 5], [4, 5], [2, 3]]
    assert sizes[3] is True and sizes[4] == 0
    values = rng.standard_normal(37).astype(np.float16)
    src = rt.from_numpy(values.astype(np.float32))
    back = _lua(rt, """
        local src = ...
        local h = cutorch.createCudaHostHalfTensor(src:size(1)):copy(src)
        local d = torch.CudaHalfTensor(src:size(1))
        d:copyAsync(h)
        local h2 = cutorch.createCudaHostHalfTensor(src:size(1))
        h2:copyAsync(d)
        cutorch.synchronize()
        return h2:float()""")(src)
    np.testing.assert_array_equal(rt.to_numpy(back), values.astype(np.float32))


@pytest.mark.parametrize("wait", [True, False])
def test_an_event_orders_two_streams(gpu, wait):
    """cutorch.Event() records the current stream's point; waitOn makes the current stream wait for it. On the lazy
    driver a copy on stream 2 that does not wait reads the tensor before stream 1's fill ran: 0 instead of 1."""
    rt = gpu
    got = _lua(rt, """
        local wait = ...
        cutorch.reserveStreams(2)
        local t1, t2 = torch.CudaTensor(1000):zero(), torch.CudaTensor(1):zero()
        cutorch.synchronize()
        cutorch.setStream(1)
        t1:fill(1)
        local event = cutorch.Event()
        cutorch.setStream(2)
        if wait then event:waitOn() end
        t2:copy(t1:narrow(1, 1000, 1))
        local v = t2[1]
        cutorch.setStream(0)
        cutorch.synchronize()
        return v""")(wait)
    if wait:
        assert got == 1
    elif rt.eval("os.getenv('LUATORCH_CUDA_DRIVER') ~= nil"):   # (a GPU may have run the fill already)
        assert got == 0


def test_sleep_launches_on_the_current_stream(gpu):
    rt = gpu
    launches = _lua(rt, """
        local c0 = cutorch.deviceCallCounts().launches
        cutorch._sleep(1000)
        local c1 = cutorch.deviceCallCounts().launches
        cutorch.synchronize()
        return c1 - c0""")()
    assert launches == 1
    with pytest.raises(LuaError, match="number of cycles"):
        rt.execute("cutorch._sleep('x')")
