-- nn.Bilinear(inputSize1, inputSize2, outputSize, bias=true):
-- {x1 (N, I1), x2 (N, I2)} -> y (N, O), y_k = x1 W_k x2^T + b_k, weight (O, I1, I2).
local Bilinear, parent = torch.class('nn.Bilinear', 'nn.Module')

local function isint(x) return type(x) == 'number' and x == math.floor(x) end

function Bilinear:__assertInput(input)
   assert(input and torch.type(input) == 'table' and #input == 2,
          'nn.Bilinear: input should be a table of two data tensors')
   assert(input[1]:nDimension() == 2 and input[2]:nDimension() == 2, 'nn.Bilinear: input tensors should be 2D')
   assert(input[1]:size(1) == input[2]:size(1), 'nn.Bilinear: input tensors should have the same number of rows')
   assert(input[1]:size(2) == self.weight:size(2), 'nn.Bilinear: first input has the wrong number of columns')
   assert(input[2]:size(2) == self.weight:size(3), 'nn.Bilinear: second input has the wrong number of columns')
end

function Bilinear:__assertInputGradOutput(input, gradOutput)
   assert(input[1]:size(1) == gradOutput:size(1), 'nn.Bilinear: gradOutput rows do not match the input')
   assert(gradOutput:size(2) == self.weight:size(1), 'nn.Bilinear: gradOutput columns do not match outputSize')
end

function Bilinear:__init(inputSize1, inputSize2, outputSize, bias)
   assert(inputSize1 and inputSize2 and outputSize, 'nn.Bilinear(inputSize1, inputSize2, outputSize[, bias])')
   assert(isint(inputSize1) and isint(inputSize2) and isint(outputSize),
          'nn.Bilinear: inputSize1, inputSize2 and outputSize should be integers')
   assert(inputSize1 > 0 and inputSize2 > 0 and outputSize > 0,
          'nn.Bilinear: inputSize1, inputSize2 and outputSize should be positive')
   parent.__init(self)
   bias = (bias == nil) and true or bias
   self.weight = torch.Tensor(outputSize, inputSize1, inputSize2)
   self.gradWeight = torch.Tensor(outputSize, inputSize1, inputSize2)
   if bias then
      self.bias = torch.Tensor(outputSize)
      self.gradBias = torch.Tensor(outputSize)
   end
   self.gradInput = {torch.Tensor(), torch.Tensor()}
   self:reset()
end

function Bilinear:reset(stdv)
   if stdv then
      assert(type(stdv) == 'number' and stdv > 0, 'nn.Bilinear: the standard deviation should be positive')
      stdv = stdv * math.sqrt(3)
   else
      stdv = 1 / math.sqrt(self.weight:size(2))
   end
   self.weight:uniform(-stdv, stdv)
   if self.bias then self.bias:uniform(-stdv, stdv) end
   return self
end

-- y[:, k] = rowsum((x1 W_k) .* x2)
function Bilinear:updateOutput(input)
   self:__assertInput(input)
   local x1, x2 = input[1], input[2]
   self.buff2 = self.buff2 or x1.new()
   self.output:resize(x1:size(1), self.weight:size(1))
   for k = 1, self.weight:size(1) do
      self.buff2:resizeAs(x2):mm(x1, self.weight[k]):cmul(x2)
      self.output:narrow(2, k, 1):sum(self.buff2, 2)
   end
   if self.bias then self.output:add(self.bias:view(1, self.bias:nElement()):expandAs(self.output)) end
   return self.output
end

-- dx1 = sum_k go_k (x2 W_k^T), dx2 = sum_k go_k (x1 W_k)
function Bilinear:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   self:__assertInputGradOutput(input, gradOutput)
   local x1, x2 = input[1], input[2]
   for i = 1, 2 do self.gradInput[i] = self.gradInput[i] or x1.new() end
   local g1, g2 = self.gradInput[1]:resizeAs(x1):zero(), self.gradInput[2]:resizeAs(x2):zero()
   self.buff1 = self.buff1 or x1.new()
   self.buff2 = self.buff2 or x1.new()
   for k = 1, self.weight:size(1) do
      local go = gradOutput:narrow(2, k, 1)
      self.buff1:resizeAs(x1):mm(x2, self.weight[k]:t()):cmul(go:expandAs(x1))
      g1:add(self.buff1)
      self.buff2:resizeAs(x2):mm(x1, self.weight[k]):cmul(go:expandAs(x2))
      g2:add(self.buff2)
   end
   return self.gradInput
end

-- dW_k += scale * (go_k .* x1)^T x2
function Bilinear:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   self:__assertInputGradOutput(input, gradOutput)
   local x1, x2 = input[1], input[2]
   self.buff1 = self.buff1 or x1.new()
   for k = 1, self.weight:size(1) do
      self.buff1:resizeAs(x1):cmul(x1, gradOutput:narrow(2, k, 1):expandAs(x1))
      self.gradWeight[k]:addmm(scale, self.buff1:t(), x2)
   end
   if self.bias then self.gradBias:add(scale, gradOutput:sum(1):view(self.gradBias:nElement())) end
end

function Bilinear:__tostring__()
   return torch.type(self) .. string.format('(%dx%d -> %d) %s', self.weight:size(2), self.weight:size(3),
                                            self.weight:size(1), self.bias == nil and ' without bias' or '')
end

function Bilinear:clearState()
   if self.buff2 then self.buff2:set() end
   if self.buff1 then self.buff1:set() end
   return parent.clearState(self)
end
