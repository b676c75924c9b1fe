-- nn.Linear(inputSize, outputSize, bias=true): y = x W^T + b, W is (out, in).
local Linear, parent = torch.class('nn.Linear', 'nn.Module')

function Linear:__init(inputSize, outputSize, bias)
   parent.__init(self)
   bias = (bias == nil) and true or bias
   self.weight = torch.Tensor(outputSize, inputSize)
   self.gradWeight = torch.Tensor(outputSize, inputSize)
   if bias then
      self.bias = torch.Tensor(outputSize)
      self.gradBias = torch.Tensor(outputSize)
   end
   self:reset()
end

function Linear:noBias()
   self.bias = nil
   self.gradBias = nil
   return self
end

-- U(-1/sqrt(in), 1/sqrt(in)) for weight and bias; reset(stdv) uses stdv*sqrt(3).
function Linear:reset(stdv)
   if stdv then
      stdv = stdv * math.sqrt(3)
   else
      stdv = 1 / math.sqrt(self.weight:size(2))
   end
   self.weight:uniform(-stdv, stdv)
   if self.bias then self.bias:uniform(-stdv, stdv) end
   return self
end

-- A ones vector of the batch size, for adding the bias with one addr.
function Linear:updateAddBuffer(input)
   local nframe = input:size(1)
   self.addBuffer = self.addBuffer or input.new()
   if self.addBuffer:nElement() ~= nframe then
      self.addBuffer:resize(nframe):fill(1)
   end
end

function Linear:updateOutput(input)
   if input:dim() == 1 then
      self.output:resize(self.weight:size(1))
      if self.bias then self.output:copy(self.bias) else self.output:zero() end
      self.output:addmv(1, self.weight, input)
   elseif input:dim() == 2 then
      local nframe = input:size(1)
      if input:size(2) ~= self.weight:size(2) then
         error(string.format('size mismatch, m1: [%d x %d], m2: [%d x %d]', nframe, input:size(2),
                             self.weight:size(2), self.weight:size(1)))
      end
      self.output:resize(nframe, self.weight:size(1))
      self:updateAddBuffer(input)
      self.output:addmm(0, self.output, 1, input, self.weight:t())
      if self.bias then self.output:addr(1, self.addBuffer, self.bias) end
   else
      error('input must be vector or matrix')
   end
   return self.output
end

function Linear:updateGradInput(input, gradOutput)
   if self.gradInput then
      local nElement = self.gradInput:nElement()
      self.gradInput:resizeAs(input)
      if self.gradInput:nElement() ~= nElement then self.gradInput:zero() end
      if input:dim() == 1 then
         self.gradInput:addmv(0, 1, self.weight:t(), gradOutput)
      elseif input:dim() == 2 then
         self.gradInput:addmm(0, 1, gradOutput, self.weight)
      end
      return self.gradInput
   end
end

function Linear:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   if input:dim() == 1 then
      self.gradWeight:addr(scale, gradOutput, input)
      if self.bias then self.gradBias:add(scale, gradOutput) end
   elseif input:dim() == 2 then
      self.gradWeight:addmm(scale, gradOutput:t(), input)
      if self.bias then
         self:updateAddBuffer(input)
         self.gradBias:addmv(scale, gradOutput:t(), self.addBuffer)
      end
   end
end

Linear.sharedAccUpdateGradParameters = Linear.accUpdateGradParameters

function Linear:clearState()
   if self.addBuffer then self.addBuffer:set() end
   return parent.clearState(self)
end

function Linear:__tostring__()
   return torch.type(self) .. string.format('(%d -> %d)', self.weight:size(2), self.weight:size(1)) ..
          (self.bias == nil and ' without bias' or '')
end
