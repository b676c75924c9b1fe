-- nn.Concat(dim): every child sees the same input; outputs are concatenated along dim.
local Concat, parent = torch.class('nn.Concat', 'nn.Container')

function Concat:__init(dimension)
   parent.__init(self)
   self.outputSize = torch.LongStorage()
   self.dimension = dimension
end

-- Where a child's output goes in the concatenated tensor (DepthConcat overrides).
function Concat:_window(output, childOutput, offset)
   return output:narrow(self.dimension, offset, childOutput:size(self.dimension))
end

-- Account for one more child's output in self.outputSize (DepthConcat overrides).
function Concat:_growSize(childOutput)
   self.outputSize[self.dimension] = self.outputSize[self.dimension] + childOutput:size(self.dimension)
end

function Concat:updateOutput(input)
   local outs = {}
   for i = 1, #self.modules do
      local out = self:rethrowErrors(self.modules[i], i, 'updateOutput', input)
      outs[i] = out
      if i == 1 then
         self.outputSize:resize(out:dim()):copy(out:size())
      else
         self:_growSize(out)
      end
   end
   self.output:resize(self.outputSize)
   if self._padded then self.output:zero() end
   local offset = 1
   for i = 1, #outs do
      self:_window(self.output, outs[i], offset):copy(outs[i])
      offset = offset + outs[i]:size(self.dimension)
   end
   return self.output
end

-- Run `method` on every child with its slice of gradOutput; sum the gradInputs
-- when `collect` is set.
function Concat:_eachSlice(method, input, gradOutput, scale, collect)
   if collect then self.gradInput:resizeAs(input) end
   local offset = 1
   for i, module in ipairs(self.modules) do
      local slice = self:_window(gradOutput, module.output, offset)
      local g = self:rethrowErrors(module, i, method, input, slice, scale)
      if collect and g then  -- a child without gradInput (e.g. a first layer) is skipped
         if i == 1 then self.gradInput:copy(g) else self.gradInput:add(g) end
      end
      offset = offset + module.output:size(self.dimension)
   end
   return self.gradInput
end

function Concat:updateGradInput(input, gradOutput)
   return self:_eachSlice('updateGradInput', input, gradOutput, nil, true)
end

function Concat:accGradParameters(input, gradOutput, scale)
   self:_eachSlice('accGradParameters', input, gradOutput, scale or 1, false)
end

function Concat:backward(input, gradOutput, scale)
   return self:_eachSlice('backward', input, gradOutput, scale or 1, true)
end

function Concat:accUpdateGradParameters(input, gradOutput, lr)
   self:_eachSlice('accUpdateGradParameters', input, gradOutput, lr, false)
end

local function branches(self, name)
   local lines = {name .. ' {\n  input'}
   for i, m in ipairs(self.modules) do
      local last = i == #self.modules
      local arrow = last and '   `-> ' or '  |`-> '
      local cont = last and '       ' or '  |    '
      lines[#lines + 1] = '\n  ' .. arrow .. '(' .. i .. '): ' .. tostring(m):gsub('\n', '\n  ' .. cont)
   end
   lines[#lines + 1] = '\n     ... -> output\n}'  -- Torch7's indent: tab, then '   ... -> '
   return table.concat(lines)
end
nn._branchesToString = branches

function Concat:__tostring__()
   return branches(self, torch.type(self))
end
