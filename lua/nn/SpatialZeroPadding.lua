-- nn.SpatialZeroPadding(pad_l, pad_r=pad_l, pad_t=pad_l, pad_b=pad_l): zeros around the last two
-- dimensions of a 3-D (C, H, W) or 4-D (N, C, H, W) input; a negative pad crops.
local SpatialZeroPadding, parent = torch.class('nn.SpatialZeroPadding', 'nn.Module')
local C = torch.C
local check = torch._check

-- Shared by the Spatial*Padding classes: the four pads and their printed form.
nn._spatialPad = nn._spatialPad or {}
function nn._spatialPad.init(self, pad_l, pad_r, pad_t, pad_b)
   self.pad_l = pad_l
   self.pad_r = pad_r or pad_l
   self.pad_t = pad_t or pad_l
   self.pad_b = pad_b or pad_l
end
function nn._spatialPad.tostring(self)
   return torch.type(self) .. string.format('(l=%d, r=%d, t=%d, b=%d)', self.pad_l, self.pad_r, self.pad_t, self.pad_b)
end

function SpatialZeroPadding:__init(pad_l, pad_r, pad_t, pad_b)
   parent.__init(self)
   nn._spatialPad.init(self, pad_l, pad_r, pad_t, pad_b)
end

function SpatialZeroPadding:updateOutput(input)
   check(C.lt_nn_SpatialZeroPadding_updateOutput(input._c, self.output._c, self.pad_l, self.pad_r, self.pad_t,
         self.pad_b), 2)
   return self.output
end

function SpatialZeroPadding:updateGradInput(input, gradOutput)
   check(C.lt_nn_SpatialZeroPadding_updateGradInput(input._c, gradOutput._c, self.gradInput._c, self.pad_l,
         self.pad_r, self.pad_t, self.pad_b), 2)
   return self.gradInput
end

SpatialZeroPadding.__tostring__ = nn._spatialPad.tostring
