-- nn.Cosine(inputSize, outputSize): y_j = <x, w_j> / (||x|| ||w_j||), the
-- rows w_j of weight (outputSize, inputSize). 1-D or 2-D (batch) input.
local Cosine, parent = torch.class('nn.Cosine', 'nn.Module')

function Cosine:__init(inputSize, outputSize)
   parent.__init(self)
   self.weight = torch.Tensor(outputSize, inputSize)
   self.gradWeight = torch.Tensor(outputSize, inputSize)
   self:reset()
end

function Cosine:reset(stdv)
   stdv = stdv and stdv * math.sqrt(3) or 1 / math.sqrt(self.weight:size(1))
   self.weight:uniform(-stdv, stdv)
   return self
end

local eps = 1e-12

-- 2-D view of the input and its batch size.
local function asBatch(input)
   if input:dim() == 1 then return input:contiguous():view(1, input:nElement()) end
   if input:dim() == 2 then return input end
   error('nn.Cosine: input must be vector or matrix, got ' .. input:dim() .. 'D')
end

function Cosine:updateOutput(input)
   local x = asBatch(input)
   local B, O = x:size(1), self.weight:size(1)
   self._weightNorm = self._weightNorm or self.weight.new()
   self._inputNorm = self._inputNorm or self.weight.new()
   self._weightNorm:norm(self.weight, 2, 2):add(eps)            -- (O, 1)
   self._inputNorm:norm(x, 2, 2):add(eps)                         -- (B, 1)
   self.output:resize(B, O):zero():addmm(0, self.output, 1, x, self.weight:t())
   self.output:cdiv(self._weightNorm:view(1, O):expand(B, O)):cdiv(self._inputNorm:expand(B, O))
   if input:dim() == 1 then
      self.output:resize(O)
      self.__norm = self._inputNorm[1][1]
   end
   return self.output
end

-- dy_j/dx = w_j / (||w_j|| ||x||) - y_j x / ||x||^2
function Cosine:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local x = asBatch(input)
   local B, O = x:size(1), self.weight:size(1)
   local go, y = gradOutput:contiguous():view(B, O), self.output:view(B, O)
   self._gradOutput = self._gradOutput or gradOutput.new()
   self._sum = self._sum or input.new()
   self._gradOutput:cmul(go, y)
   self._sum:sum(self._gradOutput, 2)                             -- sum_j go_j y_j, (B, 1)
   self.gradInput:resize(B, x:size(2)):copy(x):cdiv(self._inputNorm:expandAs(x))
   self.gradInput:cmul(self._sum:expandAs(x))
   self._gradOutput:cdiv(go, self._weightNorm:view(1, O):expand(B, O))
   self.gradInput:addmm(-1, self.gradInput, 1, self._gradOutput, self.weight)
   self.gradInput:cdiv(self._inputNorm:expandAs(x))
   self.gradInput:resizeAs(input)
   return self.gradInput
end

-- dy_j/dw_j = x / (||w_j|| ||x||) - y_j w_j / ||w_j||^2
function Cosine:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   local x = asBatch(input)
   local B, O = x:size(1), self.weight:size(1)
   local go, y = gradOutput:contiguous():view(B, O), self.output:view(B, O)
   self._gradOutput = self._gradOutput or gradOutput.new()
   self._sum = self._sum or input.new()
   self._weight = self._weight or self.weight.new()
   self._input = self._input or input.new()
   self._gradOutput:cmul(go, y)
   self._sum:sum(self._gradOutput, 1)                             -- (1, O)
   self._sum:cdiv(self._weightNorm:view(1, O))
   self._weight:resizeAs(self.weight):copy(self.weight):cmul(self._sum:view(O, 1):expandAs(self.weight))
   self._input:resizeAs(x):copy(x):cdiv(self._inputNorm:expandAs(x))
   self._weight:addmm(-1, self._weight, 1, go:t(), self._input)
   self._weight:cdiv(self._weightNorm:expandAs(self._weight))
   self.gradWeight:add(scale, self._weight)
end

function Cosine:type(type, tensorCache)
   if type then
      self._input, self._weight, self._inputNorm, self._weightNorm = nil, nil, nil, nil
      self._gradOutput, self._sum = nil, nil
   end
   return parent.type(self, type, tensorCache)
end

function Cosine:clearState()
   nn.utils.clear(self, {'_input', '_weight', '_gradOutput', '_sum', '_inputNorm', '_weightNorm'})
   return parent.clearState(self)
end
