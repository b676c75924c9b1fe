-- nn.VolumetricReplicationPadding(pleft, pright, ptop, pbottom, pfront, pback) (each defaulting to pleft):
-- repeats the edges of the last three dimensions (D, H, W) of a 4-D or 5-D input; a negative pad crops.
local VolumetricReplicationPadding, parent = torch.class('nn.VolumetricReplicationPadding', 'nn.Module')
local C = torch.C
local check = torch._check

function VolumetricReplicationPadding:__init(pleft, pright, ptop, pbottom, pfront, pback)
   parent.__init(self)
   self.pleft = pleft
   self.pright = pright or pleft
   self.ptop = ptop or pleft
   self.pbottom = pbottom or pleft
   self.pfront = pfront or pleft
   self.pback = pback or pleft
end

function VolumetricReplicationPadding:updateOutput(input)
   check(C.lt_nn_VolumetricReplicationPadding_updateOutput(input._c, self.output._c, self.pleft, self.pright,
         self.ptop, self.pbottom, self.pfront, self.pback), 2)
   return self.output
end

function VolumetricReplicationPadding:updateGradInput(input, gradOutput)
   check(C.lt_nn_VolumetricReplicationPadding_updateGradInput(input._c, gradOutput._c, self.gradInput._c,
         self.pleft, self.pright, self.ptop, self.pbottom, self.pfront, self.pback), 2)
   return self.gradInput
end

function VolumetricReplicationPadding:__tostring__()
   return torch.type(self) .. string.format('(left=%d, right=%d, top=%d, bottom=%d, front=%d, back=%d)',
      self.pleft, self.pright, self.ptop, self.pbottom, self.pfront, self.pback)
end
