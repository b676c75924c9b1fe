-- nn.Kmeans(k, dim, scale=nil): k-means clustering as a module. weight (k, dim)
-- holds the centroids; forward assigns each row of a (N, dim) batch to its
-- nearest centroid (output: the 1-based cluster indices, loss: the summed
-- squared distances); accGradParameters adds -scale * the mean offset of each
-- cluster's samples, so weight:add(-1, gradWeight) is one Lloyd step when scale = 1.
local Kmeans, parent = torch.class('nn.Kmeans', 'nn.Module')

function Kmeans:__init(k, dim, scale)
   parent.__init(self)
   self.k = k
   self.dim = dim
   self.scale = scale
   assert(k > 0, 'nn.Kmeans: the number of clusters must be positive')
   assert(dim > 0, 'nn.Kmeans: the dimensionality must be positive')
   self.weight = torch.Tensor(self.k, self.dim)
   self.gradWeight = torch.Tensor(self.weight:size())
   self.loss = 0
   self.clusterSampleCount = torch.Tensor(self.k)
   self:reset()
end

function Kmeans:reset(stdev)
   stdev = stdev or 1
   self.weight:uniform(-stdev, stdev)
end

local function checkInput(self, input)
   assert(input:nDimension() == 2, 'nn.Kmeans: expecting a 2D input (N, dim)')
   assert(input:size(2) == self.dim, "nn.Kmeans: dimensionality of input and weight don't match")
end

-- Centroids = k samples drawn at random (with replacement).
function Kmeans:initRandom(input)
   checkInput(self, input)
   local n = input:size(1)
   assert(n >= self.k, 'nn.Kmeans: need at least k samples for initialization')
   for i = 1, self.k do self.weight[i]:copy(input[torch.random(1, n)]) end
end

-- k-means++-like seeding: each new centroid is drawn among the (1 - p) fraction
-- of samples farthest from the centroids chosen so far.
function Kmeans:initKmeansPlus(input, p)
   self.p = p or self.p or 0.95
   assert(self.p >= 0 and self.p <= 1, 'nn.Kmeans: p should be between 0 and 1')
   checkInput(self, input)
   local n = input:size(1)
   local pcount = math.max(1, math.ceil((1 - self.p) * n))
   self.weight[1]:copy(input[torch.random(n)])
   local distances = self.weight.new(n):fill(math.huge)
   local diff = self.weight.new()
   for c = 2, self.k do
      diff:resizeAs(input):copy(input):add(-1, self.weight[c - 1]:view(1, self.dim):expandAs(input))
      local d2 = diff:cmul(diff):sum(2):view(n)
      distances:cmin(d2)
      local _, order = distances:sort(1, true)
      self.weight[c]:copy(input[order[torch.random(pcount)]])
   end
end

function Kmeans:updateOutput(input)
   checkInput(self, input)
   local n = input:size(1)
   -- squared distances (k, n) = |w|^2 + |x|^2 - 2 w x^T
   self._clusterDistances = self._clusterDistances or self.weight.new()
   self._temp = self._temp or self.weight.new()
   local d = self._clusterDistances:resize(self.k, n)
   d:zero():addmm(0, d, -2, self.weight, input:t())
   self._temp:resizeAs(self.weight):copy(self.weight):pow(2)
   d:add(self._temp:sum(2):expand(self.k, n))
   self._tempExpanded = self._tempExpanded or self.weight.new()
   self._tempExpanded:resizeAs(input):copy(input):pow(2)
   d:add(self._tempExpanded:sum(2):view(1, n):expand(self.k, n))
   d:cmax(0)
   self._minScore = self._minScore or self.weight.new()
   self._minIndx = self._minIndx or torch.LongTensor()
   self._minScore:min(self._minIndx, d, 1)
   self._minIndx = self._minIndx:view(n)
   self.output:resize(n):copy(self._minIndx)
   self.loss = self._minScore:sum()
   return self.output
end

function Kmeans:updateGradInput(input, gradOutput)
   self.gradInput:resize(input:size()):zero()
   return self.gradInput
end

function Kmeans:accGradParameters(input, gradOutput, scale)
   scale = self.scale or scale or 1
   assert(scale > 0, 'nn.Kmeans: scale has to be positive')
   local n = input:size(1)
   self._cscAdder = self._cscAdder or self.weight.new()
   self._cscAdder:resize(n):fill(1)
   self.clusterSampleCount:zero():indexAdd(1, self._minIndx, self._cscAdder)
   -- -scale * (x_i - w_c(i)), summed per cluster, divided by the cluster's size
   self._gradWeight = self._gradWeight or self.gradWeight.new()
   self._gradWeight:index(self.weight, 1, self._minIndx):mul(-1):add(input):mul(-scale)
   self._gradWeight2 = self._gradWeight2 or self.gradWeight.new()
   self._gradWeight2:resizeAs(self.gradWeight):zero():indexAdd(1, self._minIndx, self._gradWeight)
   self._ccounts = self._ccounts or self.clusterSampleCount.new()
   self._ccounts:resize(self.k):copy(self.clusterSampleCount):add(1e-7)
   self._gradWeight2:cdiv(self._ccounts:view(self.k, 1):expandAs(self.gradWeight))
   self.gradWeight:add(self._gradWeight2)
end

function Kmeans:clearState()
   for _, name in ipairs {'_expandedSamples', '_clusterDistances', '_temp', '_tempExpanded', '_tempWeight',
                          '_tempWeightExp', '_expandedWeight', '_minScore', '_minIndx', '_cscAdder',
                          '_gradWeight', '_gradWeight2', '_ccounts'} do
      self[name] = nil
   end
   return self
end

function Kmeans:type(type, tensorCache)
   self:clearState()
   return parent.type(self, type, tensorCache)
end
