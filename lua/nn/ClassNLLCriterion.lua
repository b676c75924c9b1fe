-- nn.ClassNLLCriterion(weights=nil, sizeAverage=true, ignoreIndex=-100): the
-- negative log-likelihood of 1-based class targets given log-probabilities.
local ClassNLLCriterion, parent = torch.class('nn.ClassNLLCriterion', 'nn.Criterion')
local C = torch.C
local check = torch._check

function ClassNLLCriterion:__init(weights, sizeAverage, ignoreIndex)
   parent.__init(self)
   self.sizeAverage = (sizeAverage == nil) and true or sizeAverage
   self.ignoreIndex = ignoreIndex or -100
   if weights then
      assert(weights:dim() == 1, 'weights input should be 1-D Tensor')
      self.weights = weights
   end
   self.output_tensor = torch.zeros(1)
   self.total_weight_tensor = torch.ones(1)
   self.target = torch.LongTensor(1):zero()
end

-- # of the criterion, where Lua honours __len on tables (Torch7's LuaJIT did): its class weights' size, 0 without them
function ClassNLLCriterion:__len()
   return self.weights and #self.weights or 0
end

-- Targets may be a number or a tensor of any type; the kernel takes a LongTensor (the GPU's, cunn/gpu.lua, a
-- CudaLongTensor: longType).
function ClassNLLCriterion:_longTarget(target, longType)
   longType = longType or 'torch.LongTensor'
   if torch.typename(target) == longType then return target end
   -- (the buffer changes type when the module is converted, e.g. by :float())
   self.target = torch.typename(self.target) == longType and self.target or torch.getmetatable(longType).new()
   if type(target) == 'number' then
      self.target:resize(1)
      self.target[1] = target
   else
      self.target:resize(target:size()):copy(target)
   end
   return self.target
end

local function buffers(self, input)
   if torch.typename(self.output_tensor) ~= input:type() then
      self.output_tensor = input.new(1):zero()
      self.total_weight_tensor = input.new(1):fill(1)
   end
end

function ClassNLLCriterion:updateOutput(input, target)
   buffers(self, input)
   local t = self:_longTarget(target)
   check(C.lt_nn_ClassNLLCriterion_updateOutput(input._c, t._c, self.output_tensor._c,
         self.sizeAverage and 1 or 0, self.weights and self.weights._c or nil, self.total_weight_tensor._c,
         self.ignoreIndex), 2)
   self.output = self.output_tensor[1]
   return self.output, self.total_weight_tensor[1]
end

function ClassNLLCriterion:updateGradInput(input, target)
   buffers(self, input)
   local t = self:_longTarget(target)
   self.gradInput:resizeAs(input):zero()
   check(C.lt_nn_ClassNLLCriterion_updateGradInput(input._c, t._c, self.gradInput._c,
         self.sizeAverage and 1 or 0, self.weights and self.weights._c or nil, self.total_weight_tensor._c,
         self.ignoreIndex), 2)
   return self.gradInput
end
