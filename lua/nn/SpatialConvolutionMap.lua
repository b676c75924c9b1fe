-- nn.SpatialConvolutionMap(connTable, kW, kH, dW=1, dH=1): a valid convolution (no padding) in which
-- row k of connTable (nk x 2, 1-based {input plane, output plane}) connects two planes through its
-- own kernel weight[k] (weight: nk x kH x kW; bias: one per output plane). nn.tables builds the
-- usual connection tables.
local SpatialConvolutionMap, parent = torch.class('nn.SpatialConvolutionMap', 'nn.Module')
local C = torch.C
local check = torch._check

nn.tables = nn.tables or {}

-- Every input plane to every output plane, grouped by output plane.
function nn.tables.full(nin, nout)
   local t = torch.Tensor(nin * nout, 2)
   local row = 0
   for o = 1, nout do
      for i = 1, nin do
         row = row + 1
         t[row][1] = i
         t[row][2] = o
      end
   end
   return t
end

-- Plane i to plane i.
function nn.tables.oneToOne(nfeat)
   local t = torch.Tensor(nfeat, 2)
   for i = 1, nfeat do
      t[i][1] = i
      t[i][2] = i
   end
   return t
end

-- Each output plane gets nto distinct input planes: consecutive chunks of nto taken from a random
-- permutation of the inputs, with a fresh permutation once its whole chunks are used up.
function nn.tables.random(nin, nout, nto)
   local t = torch.Tensor(nto * nout, 2)
   local chunks = math.floor(nin / nto)
   local perm, chunk = torch.randperm(nin), 0
   local row = 0
   for o = 1, nout do
      for j = 1, nto do
         row = row + 1
         t[row][1] = perm[chunk * nto + j]
         t[row][2] = o
      end
      chunk = chunk + 1
      if chunk == chunks then
         perm, chunk = torch.randperm(nin), 0
      end
   end
   return t
end

function SpatialConvolutionMap:__init(conMatrix, kW, kH, dW, dH)
   parent.__init(self)
   self.kW = kW
   self.kH = kH
   self.dW = dW or 1
   self.dH = dH or 1
   self.connTable = conMatrix
   self.nInputPlane = self.connTable:select(2, 1):max()
   self.nOutputPlane = self.connTable:select(2, 2):max()
   self.weight = torch.Tensor(self.connTable:size(1), kH, kW)
   self.bias = torch.Tensor(self.nOutputPlane)
   self.gradWeight = torch.Tensor(self.connTable:size(1), kH, kW)
   self.gradBias = torch.Tensor(self.nOutputPlane)
   self:reset()
end

-- reset(stdv): U(-stdv*sqrt(3), +) everywhere. Default: each kernel (and each output plane's bias)
-- U(-1/sqrt(kW*kH*fanin), +), fanin being the number of connections into its output plane.
-- Shared with nn.SpatialFullConvolutionMap.
function nn._mapReset(self, stdv)
   if stdv then
      stdv = stdv * math.sqrt(3)
      self.weight:uniform(-stdv, stdv)
      self.bias:uniform(-stdv, stdv)
      return
   end
   local fanin = {}
   for o = 1, self.nOutputPlane do fanin[o] = 0 end
   local nk = self.connTable:size(1)
   for k = 1, nk do
      local o = self.connTable[k][2]
      fanin[o] = fanin[o] + 1
   end
   for k = 1, nk do
      local s = 1 / math.sqrt(self.kW * self.kH * fanin[self.connTable[k][2]])
      self.weight:select(1, k):uniform(-s, s)
   end
   for o = 1, self.bias:size(1) do
      local s = 1 / math.sqrt(self.kW * self.kH * fanin[o])
      self.bias[o] = torch.uniform(-s, s)
   end
end
SpatialConvolutionMap.reset = nn._mapReset

-- full: 0 for this module, 1 for SpatialFullConvolutionMap (the same kernels, adjoint geometry).
function nn._mapUpdateOutput(self, input, full)
   check(C.lt_nn_SpatialConvolutionMap_updateOutput(input._c, self.output._c, self.weight._c, self.bias._c,
         self.connTable._c, self.nInputPlane, self.nOutputPlane, self.dW, self.dH, full), 3)
   return self.output
end

function nn._mapUpdateGradInput(self, input, gradOutput, full)
   check(C.lt_nn_SpatialConvolutionMap_updateGradInput(input._c, gradOutput._c, self.gradInput._c, self.weight._c,
         self.connTable._c, self.nInputPlane, self.nOutputPlane, self.dW, self.dH, full), 3)
   return self.gradInput
end

function nn._mapAccGradParameters(self, input, gradOutput, scale, full)
   check(C.lt_nn_SpatialConvolutionMap_accGradParameters(input._c, gradOutput._c, self.gradWeight._c,
         self.gradBias._c, self.connTable._c, self.nInputPlane, self.nOutputPlane, self.dW, self.dH, full,
         scale or 1), 3)
end

function SpatialConvolutionMap:updateOutput(input)
   return nn._mapUpdateOutput(self, input, 0)
end

function SpatialConvolutionMap:updateGradInput(input, gradOutput)
   if self.gradInput then return nn._mapUpdateGradInput(self, input, gradOutput, 0) end
end

function SpatialConvolutionMap:accGradParameters(input, gradOutput, scale)
   nn._mapAccGradParameters(self, input, gradOutput, scale, 0)
end

function SpatialConvolutionMap:decayParameters(decay)
   self.weight:add(-decay, self.weight)
   self.bias:add(-decay, self.bias)
end
