-- nn.GPU(module, device, outdevice=device): `module` lives and runs on GPU `device` (cutorch numbering); its
-- input and gradOutput are copied there when they are on another GPU, its output is handed back on `outdevice`
-- and its gradInput on the input's GPU, so a model can be spread over GPUs a layer range at a time, as Torch7's
-- nn.GPU did. With a host tensor type it is a plain wrapper. Files keep Torch7's layout: {type, device}, then the
-- module's fields, read back onto that device (or GPU 1, with a warning, where the machine has fewer).
local GPU, parent = torch.class('nn.GPU', 'nn.Container')

local function onGpu(self) return self._type:find('torch%.Cuda.*Tensor') ~= nil end

local function isCudaTensor(x) return torch.isTensor(x) and torch.type(x):find('torch%.Cuda.*Tensor') ~= nil end

-- f(...) with self.device current (the caller's device current again afterwards) where the module is on a GPU
local function onDevice(self, f, ...)
   if not onGpu(self) then return f(...) end
   local args = table.pack(...)
   return cutorch.withDevice(self.device, function() return f(unpack(args, 1, args.n)) end)
end

function GPU:__init(module, device, outdevice)
   parent.__init(self)
   assert(torch.type(device) == 'number', 'nn.GPU(module, device[, outdevice]): device must be a number')
   assert(torch.isTypeOf(module, 'nn.Module'), 'nn.GPU(module, device): module must be an nn.Module')
   self.device = device
   self.outdevice = outdevice or device
   self.modules[1] = module
   if module:type():find('torch%.Cuda.*Tensor') then self:type(module:type()) end
end

-- Every Cuda tensor reachable from obj (tables, modules; not the inner nn.GPUs, nor tables marked __noGPU__)
-- that is on another GPU, replaced by a copy on `device` (the current one).
function GPU.recursiveModuleDevice(obj, device)
   if type(obj) == 'table' and not torch.isTypeOf(obj, 'nn.GPU') and not obj.__noGPU__ then
      for k, v in pairs(obj) do obj[k] = GPU.recursiveModuleDevice(v, device) end
   elseif isCudaTensor(obj) and obj:getDevice() ~= device and obj:getDevice() ~= 0 then
      obj = obj:clone()   -- (clone allocates on the current device)
   end
   return obj
end

function GPU:setDevice(device)
   self.device = device or self.device
   self.modules[1] = cutorch.withDevice(self.device, function()
      return GPU.recursiveModuleDevice(self.modules[1], self.device)
   end)
   return self
end

-- src (a tensor or a table of them) as it must be on the GPU `where` names: a number, a tensor (its GPU) or a
-- table of those matching src's. Tensors already there (or on no GPU) are src's own; others are copied into dst's
-- matching tensor where that is on the right GPU, else into a new one.
function GPU.recursiveSetDevice(dst, src, where)
   if type(src) == 'table' and not torch.isTensor(src) then
      dst = (type(dst) == 'table' and not torch.isTensor(dst)) and dst or {}
      for i, v in ipairs(src) do
         dst[i] = GPU.recursiveSetDevice(dst[i], v, type(where) == 'table' and where[i] or where)
      end
      for i = #src + 1, #dst do dst[i] = nil end
      return dst
   end
   local device = torch.isTensor(where) and where:getDevice() or where
   if type(device) ~= 'number' then error('nn.GPU: a device number, a tensor or a table expected', 2) end
   if not isCudaTensor(src) or src:getDevice() == device or src:getDevice() == 0 then return src end
   if not (isCudaTensor(dst) and torch.type(dst) == torch.type(src) and dst:getDevice() == device) then
      dst = src.new()
   end
   cutorch.withDevice(device, function() dst:resizeAs(src):copy(src) end)
   return dst
end

function GPU:updateOutput(input)
   if not onGpu(self) then
      self.output = self.modules[1]:updateOutput(input)
      return self.output
   end
   self._input = GPU.recursiveSetDevice(self._input, input, self.device)
   local output = onDevice(self, function() return self.modules[1]:updateOutput(self._input) end)
   self.output = self.outdevice == self.device and output or GPU.recursiveSetDevice(self.output, output, self.outdevice)
   return self.output
end

function GPU:updateGradInput(input, gradOutput)
   if not onGpu(self) then
      self.gradInput = self.modules[1]:updateGradInput(input, gradOutput)
      return self.gradInput
   end
   self._gradOutput = GPU.recursiveSetDevice(self._gradOutput, gradOutput, self.device)
   local gradInput = onDevice(self, function() return self.modules[1]:updateGradInput(self._input, self._gradOutput) end)
   self.gradInput = GPU.recursiveSetDevice(self.gradInput, gradInput, input)
   return self.gradInput
end

function GPU:accGradParameters(input, gradOutput, scale)
   if not onGpu(self) then return self.modules[1]:accGradParameters(input, gradOutput, scale) end
   onDevice(self, function() self.modules[1]:accGradParameters(self._input, self._gradOutput, scale) end)
end

function GPU:type(type, typecache)
   if type and type:find('torch%.Cuda.*Tensor') then
      if not cutorch then error('nn.GPU: ' .. type .. " needs require 'cutorch'", 2) end
      cutorch.withDevice(self.device, function() parent.type(self, type, typecache) end)
      self:setDevice()
   else
      self.output, self.gradInput, self._input, self._gradOutput = nil, nil, nil, nil
      parent.type(self, type, typecache)
   end
   return self
end

function GPU:clearState()
   nn.utils.clear(self, 'output', 'gradInput')
   self._input, self._gradOutput = nil, nil
   return onDevice(self, parent.clearState, self)
end

-- the container's methods that touch the module's tensors, run on its GPU
for _, name in ipairs {'zeroGradParameters', 'updateParameters', 'training', 'evaluate', 'apply'} do
   GPU[name] = function(self, ...) onDevice(self, parent[name], self, ...) end
end
function GPU:share(...) onDevice(self, parent.share, self, ...) return self end
function GPU:reset(...) onDevice(self, parent.reset, self, ...) return self end
function GPU:clone(...) return onDevice(self, parent.clone, self, ...) end

function GPU:write(file)
   local fields = {}
   for k, v in pairs(self) do fields[k] = v end
   file:writeObject({self._type, self.device})
   file:writeObject(fields)
end

function GPU:read(file)
   local header = file:readObject()
   local fields
   if type(header[1]) == 'string' and header[1]:find('torch%.Cuda.*Tensor') and cutorch then
      local device = header[2]
      if device > cutorch.getDeviceCount() then
         io.stderr:write(string.format('nn.GPU: the model was saved on GPU %d, this machine has %d: loading it onto ' ..
                                       'GPU 1\n', device, cutorch.getDeviceCount()))
         device = 1
      end
      fields = cutorch.withDevice(device, function() return file:readObject() end)
   else
      fields = file:readObject()
   end
   for k, v in pairs(fields) do self[k] = v end
end

function GPU:__tostring__()
   local inner = self.modules[1].__tostring__ and self.modules[1]:__tostring__() or torch.type(self.modules[1])
   return torch.type(self) .. '(' .. self.device .. ') @ ' .. inner
end

function GPU:accUpdateGradParameters()
   error('accUpdateGradParameters is not implemented for ' .. torch.type(self), 2)
end

function GPU:sharedAccUpdateGradParameters()
   error('sharedAccUpdateGradParameters is not implemented for ' .. torch.type(self), 2)
end
