-- nn.Padding(dim, pad, nInputDim, value, index): adds |pad| entries of `value` along `dim`
-- (pad < 0: before, pad > 0: after; index: insert at that position instead).
local Padding, parent = torch.class('nn.Padding', 'nn.Module')

function Padding:__init(dim, pad, nInputDim, value, index)
   self.value = value or 0
   self.index = index or 1
   self.dim = dim
   self.pad = pad
   self.nInputDim = nInputDim
   self.outputSize = torch.LongStorage()
   parent.__init(self)
end

function Padding:_dim(input)
   local dim = self.dim
   if dim < 0 then
      dim = input:dim() + dim + 1
   elseif self.nInputDim and input:dim() ~= self.nInputDim then
      dim = dim + 1
   end
   return dim
end

-- The stretches of the output holding the input (before/after the pad) and the pad itself.
local function parts(self, dim, n)
   local pad = math.abs(self.pad)
   -- the pad goes before input position `at`; a positive pad counts `index` from the end
   local at = self.pad > 0 and n - self.index + 2 or self.index
   return pad, at
end

function Padding:updateOutput(input)
   local dim = self:_dim(input)
   local n = input:size(dim)
   local pad, at = parts(self, dim, n)
   self.outputSize:resize(input:dim()):copy(input:size())
   self.outputSize[dim] = n + pad
   self.output:resize(self.outputSize)
   if at > 1 then self.output:narrow(dim, 1, at - 1):copy(input:narrow(dim, 1, at - 1)) end
   self.output:narrow(dim, at, pad):fill(self.value)
   if at <= n then self.output:narrow(dim, at + pad, n - at + 1):copy(input:narrow(dim, at, n - at + 1)) end
   return self.output
end

function Padding:updateGradInput(input, gradOutput)
   local dim = self:_dim(input)
   local n = input:size(dim)
   local pad, at = parts(self, dim, n)
   self.gradInput:resizeAs(input)
   if at > 1 then self.gradInput:narrow(dim, 1, at - 1):copy(gradOutput:narrow(dim, 1, at - 1)) end
   if at <= n then self.gradInput:narrow(dim, at, n - at + 1):copy(gradOutput:narrow(dim, at + pad, n - at + 1)) end
   return self.gradInput
end
