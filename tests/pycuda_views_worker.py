"""pycuda's views of cutorch's device tensors (pytorch_bridge/pycuda_views.py), run by
tests/test_pycuda_views.py on the emulated driver and by .ci/gpu-check on a GPU (LUATORCH_CUTORCH=gpu, pycuda
installed). Prints OK at the end."""
import os
import sys

sys.setdlopenflags(os.RTLD_LAZY | os.RTLD_GLOBAL)   # the emulated libcuda has the driver calls these tests make
import numpy as np
from pytorch_bridge import Runtime, pycuda_views
rt = Runtime(threads=1)
rt.execute("require 'cutorch'")
assert rt.eval("cutorch.backend") == "gpu"
import pycuda.driver as drv
# a matrix, a transposed view of it, a tensor on the second device
t = rt.eval("torch.range(1, 12):view(3, 4):cuda()")
a = pycuda_views.gpuarray(rt, t)
assert a.shape == (3, 4) and a.dtype == np.float32 and a.strides == (16, 4), (a.shape, a.strides)
np.testing.assert_array_equal(a.get(), np.arange(1, 13, dtype=np.float32).reshape(3, 4))
tv = pycuda_views.gpuarray(rt, rt.eval("function(t) return t:t() end")(t))
assert tv.shape == (4, 3) and tv.strides == (4, 16) and tv.gpudata == a.gpudata, (tv.strides, tv.gpudata)
# pycuda's context is the primary one, the context cutorch's calls run in
ctx = drv.Context.get_current()
assert drv.Context.get_device() == drv.Device(0) and ctx.get_device() == drv.Device(0)
# a pycuda write is seen by Lua, a Lua write by pycuda: one memory
a.set(np.arange(12, dtype=np.float32).reshape(3, 4) * 10)
assert rt.eval("function(t) return t:sum() end")(t) == 660
rt.eval("function(t) t:mul(2) end")(t)
np.testing.assert_array_equal(a.get(), np.arange(12, dtype=np.float32).reshape(3, 4) * 20)
d = rt.eval("torch.CudaDoubleTensor(5):fill(0.5)")
np.testing.assert_array_equal(pycuda_views.gpuarray(rt, d).get(), np.full(5, 0.5))
if rt.eval("cutorch.getDeviceCount()") >= 2:
    u = rt.eval("cutorch.withDevice(2, function() return torch.CudaTensor(4):fill(7) end)")
    b = pycuda_views.gpuarray(rt, u)   # switches this thread to the second device's primary context
    np.testing.assert_array_equal(b.get(), np.full(4, 7, np.float32))
# the tensor's storage outlives the Lua tensor while the view lives
del t
rt.execute("collectgarbage(); collectgarbage()")
np.testing.assert_array_equal(pycuda_views.gpuarray(rt, d).get(), np.full(5, 0.5))
print("OK pycuda views")
