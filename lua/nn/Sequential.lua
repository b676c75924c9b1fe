-- nn.Sequential: modules applied one after another.
local Sequential, parent = torch.class('nn.Sequential', 'nn.Container')

function Sequential:__len()
   return #self.modules
end

function Sequential:add(module)
   if #self.modules == 0 then self.gradInput = module.gradInput end
   table.insert(self.modules, module)
   self.output = module.output
   return self
end

function Sequential:insert(module, index)
   index = index or (#self.modules + 1)
   if index > #self.modules + 1 or index < 1 then error('index should be contiguous to existing modules') end
   table.insert(self.modules, index, module)
   self.output = self.modules[#self.modules].output
   self.gradInput = self.modules[1].gradInput
end

function Sequential:remove(index)
   index = index or #self.modules
   if index > #self.modules or index < 1 then error('index out of range') end
   table.remove(self.modules, index)
   if #self.modules > 0 then
      self.output = self.modules[#self.modules].output
      self.gradInput = self.modules[1].gradInput
   else
      self.output = torch.Tensor()
      self.gradInput = torch.Tensor()
   end
end

function Sequential:updateOutput(input)
   local current = input
   for i = 1, #self.modules do
      current = self:rethrowErrors(self.modules[i], i, 'updateOutput', current)
   end
   self.output = current
   return current
end

function Sequential:updateGradInput(input, gradOutput)
   local g = gradOutput
   for i = #self.modules, 2, -1 do
      local prev = self.modules[i - 1]
      g = self:rethrowErrors(self.modules[i], i, 'updateGradInput', prev.output, g)
   end
   self.gradInput = self:rethrowErrors(self.modules[1], 1, 'updateGradInput', input, g)
   return self.gradInput
end

function Sequential:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   local g = gradOutput
   for i = #self.modules, 2, -1 do
      local m, prev = self.modules[i], self.modules[i - 1]
      self:rethrowErrors(m, i, 'accGradParameters', prev.output, g, scale)
      g = m.gradInput
   end
   self:rethrowErrors(self.modules[1], 1, 'accGradParameters', input, g, scale)
end

function Sequential:backward(input, gradOutput, scale)
   scale = scale or 1
   local g = gradOutput
   for i = #self.modules, 2, -1 do
      local m, prev = self.modules[i], self.modules[i - 1]
      g = self:rethrowErrors(m, i, 'backward', prev.output, g, scale)
      m.gradInput = g
   end
   g = self:rethrowErrors(self.modules[1], 1, 'backward', input, g, scale)
   self.gradInput = g
   return g
end

function Sequential:accUpdateGradParameters(input, gradOutput, lr)
   local g = gradOutput
   for i = #self.modules, 2, -1 do
      local m, prev = self.modules[i], self.modules[i - 1]
      self:rethrowErrors(m, i, 'accUpdateGradParameters', prev.output, g, lr)
      g = m.gradInput
   end
   self:rethrowErrors(self.modules[1], 1, 'accUpdateGradParameters', input, g, lr)
end

function Sequential:__tostring__()
   local parts = {'nn.Sequential {\n  [input'}
   for i = 1, #self.modules do parts[#parts + 1] = ' -> (' .. i .. ')' end
   parts[#parts + 1] = ' -> output]'
   for i, m in ipairs(self.modules) do
      parts[#parts + 1] = '\n  (' .. i .. '): ' .. tostring(m):gsub('\n', '\n  ')
   end
   parts[#parts + 1] = '\n}'
   return table.concat(parts)
end
