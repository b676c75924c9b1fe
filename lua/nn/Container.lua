-- nn.Container: a module holding an ordered list of modules.
local Container, parent = torch.class('nn.Container', 'nn.Module')

function Container:__init(...)
   parent.__init(self, ...)
   self.modules = {}
end

function Container:add(module)
   table.insert(self.modules, module)
   return self
end

function Container:get(index)
   return self.modules[index]
end

function Container:size()
   return #self.modules
end

-- The error handler keeps the traceback of the place where the error
-- happened; outer containers only prepend their position. It is one static
-- function (no closure per call), so container calls stay JIT-compiled.
local function keepTraceback(err)
   err = tostring(err)
   if err:find('\nWARNING: If you see a stack trace below', 1, true) then return err end
   return err .. '\nWARNING: If you see a stack trace below, it doesn\'t point to the place where this error '
          .. 'occurred. Please use only the one above.\n' .. debug.traceback('', 2)
end

-- Call module[funcName](module, ...) so that an error names the module's
-- position: "In 3 module of nn.Sequential: <original message>".
function Container:rethrowErrors(module, moduleIndex, funcName, ...)
   assert(module == self.modules[moduleIndex], 'mismatch between moduleIndex and self.modules in rethrowErrors')
   local ok, a, b = xpcall(module[funcName], keepTraceback, module, ...)
   if not ok then
      a = tostring(a):gsub('^\n', '')  -- an inner container's message: one line break between prefixes
      error('\n' .. string.format('In %d module of %s:', moduleIndex, torch.type(self)) .. '\n' .. a, 0)
   end
   return a, b
end

function Container:applyToModules(func)
   for _, module in ipairs(self.modules) do func(module) end
end

function Container:zeroGradParameters()
   self:applyToModules(function(m) m:zeroGradParameters() end)
end

function Container:updateParameters(learningRate)
   self:applyToModules(function(m) m:updateParameters(learningRate) end)
end

function Container:training()
   self:applyToModules(function(m) m:training() end)
   parent.training(self)
end

function Container:evaluate()
   self:applyToModules(function(m) m:evaluate() end)
   parent.evaluate(self)
end

function Container:share(mlp, ...)
   for i = 1, #self.modules do self.modules[i]:share(mlp.modules[i], ...) end
   return self
end

function Container:reset(stdv)
   self:applyToModules(function(m) m:reset(stdv) end)
end

function Container:parameters()
   local w, gw = {}, {}
   for _, module in ipairs(self.modules) do
      local mw, mgw = module:parameters()
      if mw then
         for i = 1, #mw do
            w[#w + 1] = mw[i]
            gw[#gw + 1] = mgw[i]
         end
      end
   end
   return w, gw
end

function Container:clearState()
   -- Torch7 replaces (rather than empties) the container's own buffers
   if self.output then self.output = torch.isTensor(self.output) and self.output.new() or {} end
   if self.gradInput then self.gradInput = torch.isTensor(self.gradInput) and self.gradInput.new() or {} end
   self:applyToModules(function(m) if m.clearState then m:clearState() end end)
   return self
end
