-- nn.SpatialDilatedMaxPooling(kW, kH, dW=kW, dH=kH, padW=0, padH=0,
-- dilationW=1, dilationH=1): max pooling over windows whose taps are
-- `dilation` pixels apart; :ceil()/:floor() and indices as SpatialMaxPooling.
local SpatialDilatedMaxPooling, parent = torch.class('nn.SpatialDilatedMaxPooling', 'nn.SpatialMaxPooling')
local C = torch.C
local check = torch._check

function SpatialDilatedMaxPooling:__init(kW, kH, dW, dH, padW, padH, dilationW, dilationH)
   parent.__init(self, kW, kH, dW, dH, padW, padH)
   self.dilationW = dilationW or 1
   self.dilationH = dilationH or 1
end

function SpatialDilatedMaxPooling:updateOutput(input)
   self.indices = nn.utils.indicesFor(input, self.indices)
   local dims = input:dim()
   self.iheight = input:size(dims - 1)
   self.iwidth = input:size(dims)
   check(C.lt_nn_SpatialDilatedMaxPooling_updateOutput(input._c, self.output._c, self.indices._c, self.kW,
         self.kH, self.dW, self.dH, self.padW, self.padH, self.dilationW, self.dilationH,
         self.ceil_mode and 1 or 0), 2)
   return self.output
end

function SpatialDilatedMaxPooling:updateGradInput(input, gradOutput)
   check(C.lt_nn_SpatialDilatedMaxPooling_updateGradInput(input._c, gradOutput._c, self.gradInput._c,
         self.indices._c, self.kW, self.kH, self.dW, self.dH, self.padW, self.padH, self.dilationW,
         self.dilationH, self.ceil_mode and 1 or 0), 2)
   return self.gradInput
end

-- 'nn.SpatialDilatedMaxPooling(3x3, 2,2, 1,1, 2,2)': pads only when non-zero
function SpatialDilatedMaxPooling:__tostring__()
   local s = parent.__tostring__(self)
   return s:sub(1, -2) .. ', ' .. self.dilationW .. ',' .. self.dilationH .. ')'
end
