-- nn.UpSampling(scale | {[odepth=], oheight=, owidth=}, mode='nearest'|'linear'): upsampling of a 4-D
-- (N, C, H, W) or 5-D (N, C, D, H, W) input. 'nearest' needs an integer scale; 'linear' ('bilinear',
-- 'trilinear') interpolates with aligned corners to size * scale or to the given size.
local UpSampling, parent = torch.class('nn.UpSampling', 'nn.Module')
local C = torch.C
local check = torch._check

function UpSampling:__init(params, mode)
   parent.__init(self)
   if mode == 'linear' or mode == 'bilinear' or mode == 'trilinear' then
      self.mode = 'linear'
   else
      self.mode = 'nearest'  -- anything else, as Torch7
   end
   if torch.type(params) == 'table' then
      if self.mode == 'nearest' then error('Nearest neighbour upsampling requires a scale_factor', 2) end
      self.odepth, self.owidth, self.oheight = params.odepth, params.owidth, params.oheight
      if self.owidth == nil or self.oheight == nil then
         error('Output height and width parameters are required', 2)
      end
   else
      nn._checkUpsamplingScale(params)
      self.scale_factor = params
   end
   self.inputSize = torch.LongStorage(5):fill(0)
   self.outputSize = torch.LongStorage(5):fill(0)
end

function UpSampling:setSize(input)
   local n = input:dim()
   for i = 1, n do
      self.inputSize[i] = input:size(i)
      self.outputSize[i] = input:size(i)
   end
   if self.scale_factor ~= nil then
      for i = 3, n do self.outputSize[i] = self.outputSize[i] * self.scale_factor end
   else
      if n == 5 then
         if self.odepth == nil then error('No output depth dimension was supplied for volumetric upsampling', 3) end
         self.outputSize[3] = self.odepth
      end
      self.outputSize[n - 1] = self.oheight
      self.outputSize[n] = self.owidth
   end
end

local function checkDim(input)
   if input:dim() < 4 or input:dim() > 5 then error('UpSampling only supports 4D or 5D tensors', 3) end
end

-- Output depth, height, width handed to the linear kernel (depth unused for 4-D).
local function outSizes(self, n)
   return n == 5 and self.outputSize[3] or 1, self.outputSize[n - 1], self.outputSize[n]
end

function UpSampling:updateOutput(input)
   checkDim(input)
   self:setSize(input)
   local n = input:dim()
   if self.mode == 'nearest' then
      check(C.lt_nn_UpSamplingNearest_updateOutput(input._c, self.output._c, n - 2, self.scale_factor), 2)
   else
      check(C.lt_nn_UpSamplingLinear_updateOutput(input._c, self.output._c, n - 2, outSizes(self, n)), 2)
   end
   return self.output
end

function UpSampling:updateGradInput(input, gradOutput)
   checkDim(input)
   if input:dim() ~= gradOutput:dim() then error('Input and gradOutput should be of same dimension', 2) end
   self:setSize(input)
   local n = input:dim()
   if self.mode == 'nearest' then
      check(C.lt_nn_UpSamplingNearest_updateGradInput(input._c, gradOutput._c, self.gradInput._c, n - 2,
            self.scale_factor), 2)
   else
      check(C.lt_nn_UpSamplingLinear_updateGradInput(input._c, gradOutput._c, self.gradInput._c, n - 2,
            outSizes(self, n)), 2)
   end
   return self.gradInput
end

function UpSampling:__tostring__()
   if self.scale_factor ~= nil then
      return string.format('%s(%dx, %s)', torch.type(self), self.scale_factor, self.mode)
   elseif self.odepth ~= nil then
      return string.format('%s(%dx%dx%d, %s)', torch.type(self), self.odepth, self.oheight, self.owidth, self.mode)
   end
   return string.format('%s(%dx%d, %s)', torch.type(self), self.oheight, self.owidth, self.mode)
end
