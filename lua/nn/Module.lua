-- nn.Module: the base class (Torch7's Module.lua contract).
local Module = torch.class('nn.Module')

function Module:__init()
   self.gradInput = torch.Tensor()
   self.output = torch.Tensor()
   self._type = self.output:type()
end

-- {weight, bias}, {gradWeight, gradBias} — whichever exist; nothing if neither.
function Module:parameters()
   if self.weight and self.bias then
      return {self.weight, self.bias}, {self.gradWeight, self.gradBias}
   elseif self.weight then
      return {self.weight}, {self.gradWeight}
   elseif self.bias then
      return {self.bias}, {self.gradBias}
   end
end

function Module:updateOutput(input)
   return self.output
end

function Module:forward(input)
   return self:updateOutput(input)
end

-- A module whose output is a tensor takes a tensor gradOutput: a table here would reach the C
-- kernels as no tensor at all. (nil is let through: modules that ignore gradOutput, as Kmeans, take
-- it, and a kernel that needs one says so.)
local function checkGradOutput(self, gradOutput)
   if torch.isTensor(self.output) and gradOutput ~= nil and not torch.isTensor(gradOutput) then
      error(string.format('%s: backward: gradOutput must be a tensor like the output, got %s',
                          torch.type(self), torch.type(gradOutput)), 3)
   end
end

function Module:backward(input, gradOutput, scale)
   scale = scale or 1
   checkGradOutput(self, gradOutput)
   self:updateGradInput(input, gradOutput)
   self:accGradParameters(input, gradOutput, scale)
   return self.gradInput
end

function Module:backwardUpdate(input, gradOutput, lr)
   checkGradOutput(self, gradOutput)
   self:updateGradInput(input, gradOutput)
   self:accUpdateGradParameters(input, gradOutput, lr)
   return self.gradInput
end

function Module:updateGradInput(input, gradOutput)
   return self.gradInput
end

function Module:accGradParameters(input, gradOutput, scale)
end

-- Update the weights directly with -lr times this sample's gradient by
-- pointing the gradient buffers at the weights for one accGradParameters call.
function Module:accUpdateGradParameters(input, gradOutput, lr)
   local gradWeight, gradBias = self.gradWeight, self.gradBias
   self.gradWeight, self.gradBias = self.weight, self.bias
   self:accGradParameters(input, gradOutput, -lr)
   self.gradWeight, self.gradBias = gradWeight, gradBias
end

function Module:sharedAccUpdateGradParameters(input, gradOutput, lr)
   if self:parameters() then
      self:zeroGradParameters()
      self:accGradParameters(input, gradOutput, 1)
      self:updateParameters(lr)
   end
end

function Module:zeroGradParameters()
   local _, gradParams = self:parameters()
   if gradParams then
      for i = 1, #gradParams do gradParams[i]:zero() end
   end
end

function Module:updateParameters(learningRate)
   local params, gradParams = self:parameters()
   if params then
      for i = 1, #params do params[i]:add(-learningRate, gradParams[i]) end
   end
end

function Module:training()
   self.train = true
end

function Module:evaluate()
   self.train = false
end

-- Make the named fields share storage with mlp's (weights stay tied).
function Module:share(mlp, ...)
   for _, name in ipairs {...} do
      if self[name] ~= nil then
         self[name]:set(mlp[name])
         self.accUpdateGradParameters = self.sharedAccUpdateGradParameters
         mlp.accUpdateGradParameters = mlp.sharedAccUpdateGradParameters
      end
   end
   return self
end

-- A deep copy through serialization (as Torch7), optionally sharing fields.
function Module:clone(...)
   local f = torch.MemoryFile('rw'):binary()
   f:writeObject(self)
   f:seek(1)
   local copy = f:readObject()
   f:close()
   if select('#', ...) > 0 then copy:share(self, ...) end
   return copy
end

function Module:type(type, tensorCache)
   if not type then return self._type end
   tensorCache = tensorCache or {}
   -- convert every field, keeping shared storages shared
   for key, param in pairs(self) do
      self[key] = nn.utils.recursiveType(param, type, tensorCache)
   end
   self._type = type
   return self
end

function Module:float(...) return self:type('torch.FloatTensor', ...) end
function Module:double(...) return self:type('torch.DoubleTensor', ...) end
function Module:cuda(...) return self:type('torch.CudaTensor', ...) end

function Module:reset()
end

function Module:write(file)
   local fields = {}
   for k, v in pairs(self) do fields[k] = v end
   file:writeObject(fields)
end

function Module:read(file)
   local fields = file:readObject()
   for k, v in pairs(fields) do self[k] = v end
end

-- Torch7's flattening: every distinct storage used by `parameters` is copied
-- (in order of first use) into one new storage, unused stretches ("holes") of
-- those storages are squeezed out, and each tensor is re-pointed into it.
-- Tensors that shared a storage keep sharing (now the flat one).
function Module.flatten(parameters)
   if not parameters or #parameters == 0 then return torch.Tensor() end
   local Tensor = parameters[1].new
   local storages, order, total = {}, {}, 0
   local meta = {}
   for k, p in ipairs(parameters) do
      local s = p:storage()
      local key = torch.pointer(s)
      if not storages[key] then
         storages[key] = {storage = s, base = total}
         order[#order + 1] = key
         total = total + s:size()
      end
      meta[k] = {offset = p:storageOffset() + storages[key].base, size = p:size(), stride = p:stride()}
   end

   local flat = Tensor(total):zero()
   -- mark the elements some parameter uses
   local used = torch.ByteTensor(total):zero()
   local compact = true
   for k = 1, #parameters do
      local m = meta[k]
      local view = torch.ByteTensor():set(used:storage(), m.offset, m.size, m.stride)
      view:fill(1)
      -- a view is compact when its elements are one dense block
      local n, extent = view:nElement(), 1
      for d = 1, view:dim() do extent = extent + (view:size(d) - 1) * view:stride(d) end
      compact = compact and (n == extent)
   end
   for _, key in ipairs(order) do
      local entry = storages[key]
      if entry.storage:size() > 0 then
         flat:narrow(1, entry.base + 1, entry.storage:size()):copy(Tensor():set(entry.storage))
      end
   end
   for k = 1, #parameters do parameters[k]:set(Tensor()) end

   local nUsed = used:long():sum()
   if nUsed ~= total then
      assert(compact, 'Cannot gather tensors that are not compact')
      local newOffset = used:long():cumsum(1)
      flat = Tensor(nUsed):copy(flat:maskedSelect(used))
      for k = 1, #parameters do meta[k].offset = newOffset[meta[k].offset] end
   end
   for k = 1, #parameters do
      parameters[k]:set(flat:storage(), meta[k].offset, meta[k].size, meta[k].stride)
   end
   return flat
end

-- One flat parameter tensor and one flat gradient tensor (call once per network).
function Module:getParameters()
   local parameters, gradParameters = self:parameters()
   local p = Module.flatten(parameters)
   local g = Module.flatten(gradParameters)
   assert(p:nElement() == g:nElement(), 'check that you are sharing parameters and gradParameters')
   if parameters then
      for i = 1, #parameters do
         assert(parameters[i]:storageOffset() == gradParameters[i]:storageOffset(),
                'misaligned parameter at ' .. tostring(i))
      end
   end
   return p, g
end

function Module:__call__(input, gradOutput)
   self:forward(input)
   if gradOutput then
      self:backward(input, gradOutput)
      return self.output, self.gradInput
   end
   return self.output
end

function Module:apply(callback)
   callback(self)
   if self.modules then
      for _, module in ipairs(self.modules) do module:apply(callback) end
   end
end

-- All modules of exactly `typename` (and the containers holding them).
function Module:findModules(typename, container)
   container = container or self
   local nodes, containers = {}, {}
   if torch.typename(self) == typename then
      nodes[#nodes + 1] = self
      containers[#containers + 1] = container
   end
   if self.modules then
      for _, child in ipairs(self.modules) do
         local n, c = child:findModules(typename, self)
         for i = 1, #n do
            nodes[#nodes + 1] = n[i]
            containers[#containers + 1] = c[i]
         end
      end
   end
   return nodes, containers
end

function Module:listModules()
   local list = {self}
   if self.modules then
      for _, child in ipairs(self.modules) do
         for _, m in ipairs(child:listModules()) do list[#list + 1] = m end
      end
   end
   return list
end

function Module:clearState()
   return nn.utils.clear(self, 'output', 'gradInput')
end

function Module:replace(callback)
   local out = callback(self)
   if self.modules then
      for i, module in ipairs(self.modules) do self.modules[i] = module:replace(callback) end
   end
   return out
end

function Module:__tostring__()
   return torch.type(self)
end
