-- nn.View(sizes...): a view of the input with other sizes; one size may be -1.
-- With setNumInputDims(n), dims before the last n form the batch dimension.
local View, parent = torch.class('nn.View', 'nn.Module')

function View:resetSize(...)
   local first = ...
   if select('#', ...) == 1 and torch.typename(first) == 'torch.LongStorage' then
      self.size = first
   else
      self.size = torch.LongStorage({...})
   end
   self.numElements = 1
   local inferred = false
   for i = 1, #self.size do
      local s = self.size[i]
      if s >= 0 then
         self.numElements = self.numElements * s
      else
         assert(s == -1, 'size should be positive or -1')
         assert(not inferred, 'only one dimension can be at -1')
         inferred = true
      end
   end
   return self
end

function View:__init(...)
   parent.__init(self)
   self:resetSize(...)
   self.numInputDims = nil
end

function View:setNumInputDims(numInputDims)
   self.numInputDims = numInputDims
   return self
end

-- The batch size to prepend, or nil when the input is one sample.
local function batchsize(input, size, numInputDims, numElements)
   local ind = input:nDimension()
   local isz = input:size()
   local maxdim = numInputDims or ind
   local ine = 1
   for i = ind, ind - maxdim + 1, -1 do ine = ine * isz[i] end
   if ine % numElements ~= 0 then
      error(string.format('input view (%s) and desired view (%s) do not match',
                          table.concat(input:size():totable(), 'x'), table.concat(size:totable(), 'x')))
   end
   local bsz = ine / numElements
   for i = 1, size:size() do
      if size[i] == -1 then bsz = 1; break end  -- the remainder goes to the -1 dim
   end
   for i = ind - maxdim, 1, -1 do bsz = bsz * isz[i] end  -- dims beyond numInputDims are batch
   if bsz == 1 and (not numInputDims or input:nDimension() <= numInputDims) then return nil end
   return bsz
end

function View:updateOutput(input)
   self.output = self.output or input.new()
   local bsz = batchsize(input, self.size, self.numInputDims, self.numElements)
   if bsz then
      self.output:view(input, bsz, unpack(self.size:totable()))
   else
      self.output:view(input, self.size)
   end
   return self.output
end

function View:updateGradInput(input, gradOutput)
   self.gradInput = self.gradInput or gradOutput.new()
   self.gradInput:view(gradOutput, input:size())
   return self.gradInput
end

function View:__tostring__()
   return torch.type(self) .. '(' .. table.concat(self.size:totable(), ', ') .. ')'
end
