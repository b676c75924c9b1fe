-- nn.SpatialMaxPooling(kW, kH, dW=kW, dH=kH, padW=0, padH=0); :ceil() / :floor() (default).
-- Output size floor|ceil((i + 2p - k) / d) + 1, one less when padded and the
-- last window would start past the image (Torch7's rule); padding never wins.
local SpatialMaxPooling, parent = torch.class('nn.SpatialMaxPooling', 'nn.Module')
local C = torch.C
local check = torch._check

function SpatialMaxPooling:__init(kW, kH, dW, dH, padW, padH)
   parent.__init(self)
   dW = dW or kW
   dH = dH or kH
   self.kW = kW
   self.kH = kH
   self.dW = dW
   self.dH = dH
   self.padW = padW or 0
   self.padH = padH or 0
   self.ceil_mode = false
   self.indices = torch.LongTensor()
end

function SpatialMaxPooling:ceil()
   self.ceil_mode = true
   return self
end

function SpatialMaxPooling:floor()
   self.ceil_mode = false
   return self
end

local function fixLegacy(self, input)
   -- files from before padding / ceil mode existed
   self.ceil_mode = self.ceil_mode or false
   self.padW = self.padW or 0
   self.padH = self.padH or 0
   self.indices = nn.utils.indicesFor(input, self.indices)
end

function SpatialMaxPooling:updateOutput(input)
   fixLegacy(self, input)
   -- the input size, for an associated nn.SpatialMaxUnpooling
   self.iheight = input:size(input:dim() - 1)
   self.iwidth = input:size(input:dim())
   check(C.lt_nn_SpatialMaxPooling_updateOutput(input._c, self.output._c, self.indices._c, self.kW, self.kH,
         self.dW, self.dH, self.padW, self.padH, self.ceil_mode and 1 or 0), 2)
   return self.output
end

function SpatialMaxPooling:updateGradInput(input, gradOutput)
   if self.gradInput then
      check(C.lt_nn_SpatialMaxPooling_updateGradInput(input._c, gradOutput._c, self.gradInput._c,
            self.indices._c, self.kW, self.kH, self.dW, self.dH, self.padW, self.padH,
            self.ceil_mode and 1 or 0), 2)
      return self.gradInput
   end
end

function SpatialMaxPooling:__tostring__()
   local s = string.format('%s(%dx%d, %d,%d', torch.type(self), self.kW, self.kH, self.dW, self.dH)
   if (self.padW or self.padH) and (self.padW ~= 0 or self.padH ~= 0) then
      s = s .. ', ' .. self.padW .. ',' .. self.padH
   end
   return s .. ')'
end

function SpatialMaxPooling:clearState()
   if self.indices then self.indices:set() end
   return parent.clearState(self)
end
