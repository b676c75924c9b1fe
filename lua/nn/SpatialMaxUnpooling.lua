-- nn.SpatialMaxUnpooling(poolingModule): the inverse of a
-- nn.SpatialMaxPooling whose kernel equals its stride: each value goes back
-- to where the pooling module found its maximum (its indices), zeros elsewhere;
-- the output has the pooling module's last input size.
local SpatialMaxUnpooling, parent = torch.class('nn.SpatialMaxUnpooling', 'nn.Module')
local C = torch.C
local check = torch._check

function SpatialMaxUnpooling:__init(poolingModule)
   parent.__init(self)
   assert(torch.type(poolingModule) == 'nn.SpatialMaxPooling', 'Argument must be a nn.SpatialMaxPooling module')
   assert(poolingModule.kH == poolingModule.dH and poolingModule.kW == poolingModule.dW,
          "The size of pooling module's kernel must be equal to its stride")
   self.pooling = poolingModule
end

function SpatialMaxUnpooling:setParams()
   self.indices = self.pooling.indices
   self.oheight = self.pooling.iheight
   self.owidth = self.pooling.iwidth
   if not self.oheight then
      error('nn.SpatialMaxUnpooling: run the associated SpatialMaxPooling forward first', 3)
   end
end

function SpatialMaxUnpooling:updateOutput(input)
   self:setParams()
   check(C.lt_nn_SpatialMaxUnpooling_updateOutput(input._c, self.output._c, self.indices._c, self.owidth,
         self.oheight), 2)
   return self.output
end

function SpatialMaxUnpooling:updateGradInput(input, gradOutput)
   self:setParams()
   check(C.lt_nn_SpatialMaxUnpooling_updateGradInput(input._c, gradOutput._c, self.gradInput._c, self.indices._c,
         self.owidth, self.oheight), 2)
   return self.gradInput
end

-- older name of clearState
function SpatialMaxUnpooling:empty()
   self:clearState()
end

function SpatialMaxUnpooling:__tostring__()
   return 'nn.SpatialMaxUnpooling associated to ' .. tostring(self.pooling)
end
