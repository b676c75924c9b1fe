-- nn.Bottle(module, nInputDim = 2, nOutputDim = nInputDim): applies `module` (which takes
-- nInputDim-dimensional inputs) to an input with more leading dimensions, by folding them
-- into the first one and unfolding the result.
local Bottle, parent = torch.class('nn.Bottle', 'nn.Decorator')

function Bottle:__init(module, nInputDim, nOutputDim)
   parent.__init(self, module)
   self.nInputDim = nInputDim or 2
   self.nOutputDim = nOutputDim or self.nInputDim
   self.dimDelta = self.nInputDim - self.nOutputDim
   self.inShape = torch.Tensor(self.nInputDim)
   self.outShape = torch.Tensor(self.nOutputDim)
end

-- The input's size folded to nInputDim dims, and the number of leading dims squashed.
local function folded(self, input)
   local idim = input:dim()
   local extra = idim - self.nInputDim
   local size = torch.LongStorage(self.nInputDim)
   local lead = 1
   for i = 1, extra + 1 do lead = lead * input:size(i) end
   size[1] = lead
   for i = 2, self.nInputDim do size[i] = input:size(extra + i) end
   return size, extra
end

function Bottle:updateOutput(input)
   local idim = input:dim()
   assert(idim >= self.nInputDim, 'input has fewer dimensions than nInputDim')
   if idim == self.nInputDim then
      self.output = self.modules[1]:updateOutput(input)
      return self.output
   end
   local size, extra = folded(self, input)
   -- as Torch7: the folded shapes the module sees, as values (its backward views by them)
   self.inShape = torch.Tensor(size:totable())
   local x = input:isContiguous() and input or input:contiguous()
   local out = self.modules[1]:updateOutput(x:view(size))
   local osize = torch.LongStorage(extra + out:dim())
   for i = 1, extra + 1 do osize[i] = input:size(i) end
   for i = 2, out:dim() do osize[extra + i] = out:size(i) end
   self.outShape = torch.Tensor(out:size():totable())
   self.output:set(out:view(osize))
   return self.output
end

local function backwardCall(self, method, input, gradOutput, scale)
   if input:dim() == self.nInputDim then
      return self.modules[1][method](self.modules[1], input, gradOutput, scale)
   end
   local size = folded(self, input)
   local x = input:isContiguous() and input or input:contiguous()
   local g = gradOutput:isContiguous() and gradOutput or gradOutput:contiguous()
   local gsize = torch.LongStorage(self.modules[1].output:dim())
   gsize[1] = size[1]
   for i = 2, #gsize do gsize[i] = self.modules[1].output:size(i) end
   return self.modules[1][method](self.modules[1], x:view(size), g:view(gsize), scale)
end

function Bottle:updateGradInput(input, gradOutput)
   local gi = backwardCall(self, 'updateGradInput', input, gradOutput)
   if input:dim() == self.nInputDim then
      self.gradInput = gi
   else
      self.gradInput:set(gi:view(input:size()))
   end
   return self.gradInput
end

function Bottle:accGradParameters(input, gradOutput, scale)
   backwardCall(self, 'accGradParameters', input, gradOutput, scale)
end

function Bottle:accUpdateGradParameters(input, gradOutput, lr)
   backwardCall(self, 'accUpdateGradParameters', input, gradOutput, lr)
end
