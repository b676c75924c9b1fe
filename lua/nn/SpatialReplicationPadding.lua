-- nn.SpatialReplicationPadding(pad_l, pad_r=pad_l, pad_t=pad_l, pad_b=pad_l): pads the last two dimensions
-- of a 3-D (C, H, W) or 4-D (N, C, H, W) input with the edge pixels repeated; a negative pad crops.
local SpatialReplicationPadding, parent = torch.class('nn.SpatialReplicationPadding', 'nn.Module')
local C = torch.C
local check = torch._check

function SpatialReplicationPadding:__init(pad_l, pad_r, pad_t, pad_b)
   parent.__init(self)
   nn._spatialPad.init(self, pad_l, pad_r, pad_t, pad_b)
end

function SpatialReplicationPadding:updateOutput(input)
   check(C.lt_nn_SpatialReplicationPadding_updateOutput(input._c, self.output._c, self.pad_l, self.pad_r,
         self.pad_t, self.pad_b), 2)
   return self.output
end

function SpatialReplicationPadding:updateGradInput(input, gradOutput)
   check(C.lt_nn_SpatialReplicationPadding_updateGradInput(input._c, gradOutput._c, self.gradInput._c, self.pad_l,
         self.pad_r, self.pad_t, self.pad_b), 2)
   return self.gradInput
end

SpatialReplicationPadding.__tostring__ = nn._spatialPad.tostring
