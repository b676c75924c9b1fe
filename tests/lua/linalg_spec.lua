-- nn.Linear's use of the BLAS forms, checked against plain Lua loops, and
-- the random generator from Lua code.
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

return T
