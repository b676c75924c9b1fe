-- nn.Linear's use of the BLAS forms, checked against plain Lua loops, the
-- random generator from Lua code, LAPACK's Torch7 layouts and conv2's forms.
local spec = require 'spec'

local T = {}

local function randomMatrix(n, m, typename)
   return torch[typename or 'DoubleTensor'](n, m):uniform(-1, 1)
end

-- out[i][j] = sum_k a[i][k] * b[k][j], by loops
local function loopmm(a, b)
   local n, k, m = a:size(1), a:size(2), b:size(2)
   local r = torch.DoubleTensor(n, m)
   for i = 1, n do
      for j = 1, m do
         local s = 0
         for l = 1, k do s = s + a[i][l] * b[l][j] end
         r[i][j] = s
      end
   end
   return r
end

function T.linear_batch_forward_backward()
   torch.manualSeed(1)
   local nIn, nOut, batch = 7, 4, 5
   local weight, bias = randomMatrix(nOut, nIn), torch.DoubleTensor(nOut):uniform()
   local input, gradOutput = randomMatrix(batch, nIn), randomMatrix(batch, nOut)
   local ones = torch.DoubleTensor(batch):fill(1)

   -- updateOutput: output = input * W^T + 1 bias^T
   local output = torch.DoubleTensor(batch, nOut):fill(0 / 0)   -- garbage must not leak (beta = 0)
   output:addmm(0, output, 1, input, weight:t())
   output:addr(1, ones, bias)
   local want = loopmm(input, weight:t())
   for i = 1, batch do for j = 1, nOut do want[i][j] = want[i][j] + bias[j] end end
   spec.tensorEq(output, want, 1e-12, 'output')

   -- updateGradInput: gradInput = gradOutput * W
   local gradInput = torch.DoubleTensor(batch, nIn)
   gradInput:addmm(0, 1, gradOutput, weight)
   spec.tensorEq(gradInput, loopmm(gradOutput, weight), 1e-12, 'gradInput')

   -- accGradParameters with scale: gradW += s gO^T input, gradB += s gO^T 1
   local scale = 0.5
   local gradWeight, gradBias = torch.DoubleTensor(nOut, nIn):fill(1), torch.DoubleTensor(nOut):fill(2)
   gradWeight:addmm(scale, gradOutput:t(), input)
   gradBias:addmv(scale, gradOutput:t(), ones)
   local gw = loopmm(gradOutput:t(), input)
   for i = 1, nOut do
      local gb = 0
      for b = 1, batch do gb = gb + gradOutput[b][i] end
      spec.near(gradBias[i], 2 + scale * gb, 1e-12, 'gradBias')
      for j = 1, nIn do spec.near(gradWeight[i][j], 1 + scale * gw[i][j], 1e-12, 'gradWeight') end
   end
end

function T.linear_single_sample()
   local weight, input = randomMatrix(3, 6, 'FloatTensor'), torch.FloatTensor(6):uniform()
   local output = torch.FloatTensor(3):fill(1)
   output:addmv(1, weight, input)
   local gradWeight = torch.FloatTensor(3, 6):zero()
   local gradOutput = torch.FloatTensor(3):fill(2)
   gradWeight:addr(0.5, gradOutput, input)
   for i = 1, 3 do
      local s = 1
      for j = 1, 6 do
         s = s + weight[i][j] * input[j]
         spec.near(gradWeight[i][j], input[j], 1e-6)
      end
      spec.near(output[i], s, 1e-5)
   end
end

function T.operator_and_errors()
   local a, b = randomMatrix(2, 3), randomMatrix(3, 2)
   spec.tensorEq(a * b, loopmm(a, b), 1e-12)
   spec.raises(function() return torch.mm(a, a) end, 'size mismatch, m1: [2 x 3], m2: [2 x 3]')
   spec.raises(function() return a:addmv(a, a) end, 'matrix and vector expected, got 2D, 2D')
end

function T.sort_and_random_in_lua()
   torch.manualSeed(123)
   local x = torch.rand(50)
   local g = torch.Generator()
   torch.manualSeed(g, 123)
   local y = torch.Tensor(50):uniform(g)
   spec.tensorEq(x, y, 0, 'same seed, same stream')
   local v, i = x:sort(1, true)
   for k = 2, 50 do assert(v[k - 1] >= v[k]) end
   for k = 1, 50 do spec.eq(x[i[k]], v[k]) end
   spec.eq(torch.typename(i), 'torch.LongTensor')
   local p = torch.randperm(10)
   local seen = {}
   for k = 1, 10 do seen[p[k]] = true end
   for k = 1, 10 do assert(seen[k], 'randperm is a permutation of 1..n') end
end

-- LAPACK results come back column-major (Torch7's layout), and a result
-- tensor that is also the input is overwritten with the answer.
function T.lapack_layouts_and_in_place()
   torch.manualSeed(7)
   local a = torch.randn(6, 6) + torch.eye(6) * 6
   local b = torch.randn(6, 2)
   local x = torch.gesv(b, a)
   spec.eq(x:stride(1), 1, 'column-major result')
   spec.eq(x:stride(2), 6)
   spec.tensorEq(a * x, b, 1e-12, 'A x = B')
   local bb, aa = b:clone(), a:clone()
   local r1, r2 = torch.gesv(bb, aa, bb, aa)
   assert(r1 == bb and r2 == aa, 'the given results are returned')
   spec.tensorEq(bb, x, 0, 'in place: x left in b')
   local inv = torch.inverse(a)
   assert(not inv:isContiguous(), 'inverse is column-major')
   spec.tensorEq(a * inv, torch.eye(6), 1e-12, 'A A^-1 = I')
   local q, r = torch.qr(torch.randn(7, 4):t())   -- a non-contiguous 4 x 7 input
   spec.eq(q:size(1), 4); spec.eq(q:size(2), 4); spec.eq(r:size(1), 4); spec.eq(r:size(2), 7)
   spec.tensorEq(q:t() * q, torch.eye(4), 1e-12, 'Q is orthogonal')
   spec.raises(function() return torch.potrf(torch.Tensor({{1, 2}, {2, 1}})) end,
               'potrf: the matrix is not positive definite: its leading minor of order 2 is not positive')
end

-- conv2's forms from Lua, against loops.
function T.conv2_forms()
   torch.manualSeed(3)
   local x, k = torch.rand(9, 8), torch.rand(3, 2)
   local function loopxcorr(x, k)
      local oh, ow = x:size(1) - k:size(1) + 1, x:size(2) - k:size(2) + 1
      local r = torch.zeros(oh, ow)
      for i = 1, oh do for j = 1, ow do
         local s = 0
         for u = 1, k:size(1) do for v = 1, k:size(2) do s = s + x[i + u - 1][j + v - 1] * k[u][v] end end
         r[i][j] = s
      end end
      return r
   end
   spec.tensorEq(torch.xcorr2(x, k), loopxcorr(x, k), 1e-12, 'xcorr2 valid')
   local flipped = torch.Tensor(3, 2)
   for u = 1, 3 do for v = 1, 2 do flipped[u][v] = k[4 - u][3 - v] end end
   spec.tensorEq(torch.conv2(x, k), torch.xcorr2(x, flipped), 0, 'conv2 flips the kernel')
   local r = torch.Tensor()
   assert(torch.conv2(r, x, k, 'F') == r and r:size(1) == 11 and r:size(2) == 9, 'full result in r')
   spec.tensorEq(x:conv2(k, 'F'), r, 0, 'method form')
   local planes = torch.conv2(torch.cat(x:view(1, 9, 8), x:view(1, 9, 8), 1), torch.rand(4, 2, 3, 2))
   spec.eq(planes:size(1), 4, 'O x P kernels give O planes')
end

return T
