-- A short tour of luatorch's Torch7-compatible torch package:
--   luatorch demo            (or: luatorch th lua/demos/tour.lua)
-- It builds tensors, does math through the C kernels and BLAS, fits a
-- least-squares line by gradient descent, and round-trips a .t7 file.
local sys_clock = os.clock

print(torch._VERSION .. ' on ' .. jit.version .. ', ' .. torch.getnumthreads() .. ' threads')
print('default tensor type: ' .. torch.getdefaulttensortype())

torch.manualSeed(1234)
local a = torch.FloatTensor(3, 4):uniform(-1, 1)
print('a uniform 3x4 FloatTensor:')
print(a)
print('a:t() is a view: contiguous = ' .. tostring(a:t():isContiguous()) .. ', shares storage = ' ..
      tostring(torch.pointer(a:storage()) == torch.pointer(a:t():storage())))

-- Matrix multiply through OpenBLAS, timed.
local n = 512
local x, y = torch.FloatTensor(n, n):normal(), torch.FloatTensor(n, n):normal()
local z = torch.FloatTensor(n, n)
local timer = torch.Timer()
for _ = 1, 5 do z:mm(x, y) end
local secs = timer:time().real / 5
print(string.format('%dx%d sgemm: %.2f ms (%.1f GFLOP/s)', n, n, secs * 1e3, 2 * n ^ 3 / secs / 1e9))

-- Fit y = 3x - 2 by gradient descent on the mean squared error.
local N = 256
local X = torch.DoubleTensor(N, 2)
X:select(2, 1):uniform(-1, 1)
X:select(2, 2):fill(1)
local target = X:select(2, 1) * 3 - 2 + torch.randn(N) * 0.05
local w = torch.zeros(2)
for step = 1, 200 do
   local err = X * w - target                 -- mv
   local grad = X:t() * err * (2 / N)         -- mv
   w:add(-0.5, grad)
   if step % 50 == 0 then
      print(string.format('step %3d  mse %.5f  w = (%.4f, %.4f)', step, err:dot(err) / N, w[1], w[2]))
   end
end

-- Serialization: the same bytes Torch7 writes.
local path = os.tmpname()
torch.save(path, {weights = w, note = 'fitted line', shape = a:size()})
local back = torch.load(path)
os.remove(path)
print(string.format('saved and loaded back: %s, w = (%.4f, %.4f), shape %s', back.note, back.weights[1],
                    back.weights[2], table.concat(back.shape:totable(), 'x')))
