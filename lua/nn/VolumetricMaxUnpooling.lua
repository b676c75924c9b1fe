-- nn.VolumetricMaxUnpooling(poolingModule): the inverse of a
-- nn.VolumetricMaxPooling whose kernel equals its stride (values back where
-- the maxima were, zeros elsewhere, the pooling module's last input size).
local VolumetricMaxUnpooling, parent = torch.class('nn.VolumetricMaxUnpooling', 'nn.Module')

-- The pooling modules an unpooling reads the indices of (weak keys, not a field: the modules stay as Torch7 made
-- and saved them)
VolumetricMaxUnpooling.readPoolings = setmetatable({}, {__mode = 'k'})
local C = torch.C
local check = torch._check

function VolumetricMaxUnpooling:__init(poolingModule)
   parent.__init(self)
   assert(torch.type(poolingModule) == 'nn.VolumetricMaxPooling', 'Argument must be a nn.VolumetricMaxPooling module')
   assert(poolingModule.kT == poolingModule.dT and poolingModule.kH == poolingModule.dH and
          poolingModule.kW == poolingModule.dW, "The size of pooling module's kernel must be equal to its stride")
   self.pooling = poolingModule
   -- on the GPU nn's pooling runs on cuDNN, which keeps no indices: cunn's composed one keeps them for this module
   VolumetricMaxUnpooling.readPoolings[poolingModule] = true
end

-- a loaded or cloned unpooling reads its (loaded or cloned) pooling's indices too
function VolumetricMaxUnpooling:read(file, version)
   parent.read(self, file, version)
   if self.pooling then VolumetricMaxUnpooling.readPoolings[self.pooling] = true end
end

function VolumetricMaxUnpooling:setParams()
   local p = self.pooling
   self.indices = p.indices
   self.otime, self.oheight, self.owidth = p.itime, p.iheight, p.iwidth
   self.dT, self.dH, self.dW = p.dT, p.dH, p.dW
   self.padT, self.padH, self.padW = p.padT, p.padH, p.padW
   if not self.otime then
      error('nn.VolumetricMaxUnpooling: run the associated VolumetricMaxPooling forward first', 3)
   end
end

function VolumetricMaxUnpooling:updateOutput(input)
   self:setParams()
   check(C.lt_nn_VolumetricMaxUnpooling_updateOutput(input._c, self.output._c, self.indices._c, self.otime,
         self.owidth, self.oheight, self.dT, self.dW, self.dH, self.padT, self.padW, self.padH), 2)
   return self.output
end

function VolumetricMaxUnpooling:updateGradInput(input, gradOutput)
   self:setParams()
   check(C.lt_nn_VolumetricMaxUnpooling_updateGradInput(input._c, gradOutput._c, self.gradInput._c,
         self.indices._c, self.otime, self.owidth, self.oheight, self.dT, self.dW, self.dH, self.padT, self.padW,
         self.padH), 2)
   return self.gradInput
end

-- older name of clearState
function VolumetricMaxUnpooling:empty()
   self:clearState()
end

function VolumetricMaxUnpooling:__tostring__()
   return 'nn.VolumetricMaxUnpooling associated to ' .. tostring(self.pooling)
end
