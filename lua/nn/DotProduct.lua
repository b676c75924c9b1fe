-- nn.DotProduct(): {a, b} -> <a, b> (1-D, one output) or row-wise (2-D, a vector of N).
local DotProduct, parent = torch.class('nn.DotProduct', 'nn.Module')

function DotProduct:__init()
   parent.__init(self)
   self.gradInput = {torch.Tensor(), torch.Tensor()}
end

local function rows(t)
   if t:dim() == 1 then return t:contiguous():view(1, t:nElement()) end
   if t:dim() == 2 then return t end
   error('nn.DotProduct: inputs must be vectors or matrices, got ' .. t:dim() .. 'D')
end

function DotProduct:updateOutput(input)
   local a, b = rows(input[1]), rows(input[2])
   self.buffer = self.buffer or a.new()
   self.buffer:cmul(a, b)
   self.output:sum(self.buffer, 2)
   self.output:resize(a:size(1))
   return self.output
end

function DotProduct:updateGradInput(input, gradOutput)
   local a, b = rows(input[1]), rows(input[2])
   self.gradInput[1] = self.gradInput[1] or a.new()
   self.gradInput[2] = self.gradInput[2] or b.new()
   local go = gradOutput:contiguous():view(a:size(1), 1):expandAs(a)
   self.gradInput[1]:cmul(b, go)
   self.gradInput[2]:cmul(a, go)
   -- drop anything beyond the two inputs' gradients (a gradInput of a longer table)
   for i = #self.gradInput, 3, -1 do self.gradInput[i] = nil end
   self.gradInput[1]:resizeAs(input[1])
   self.gradInput[2]:resizeAs(input[2])
   return self.gradInput
end

function DotProduct:clearState()
   if self.buffer then self.buffer:set() end
   return parent.clearState(self)
end
