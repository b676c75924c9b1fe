-- nn.CReLU(nInputDims, inplace=false): concatenated ReLU, [relu(x), relu(-x)]
-- along the feature dim (Shang et al. 2016); a Sequential of
-- ConcatTable(Identity, MulConstant(-1)), JoinTable(2), ReLU, on the input
-- flattened to (batch, features); the output doubles the first non-batch dim.
local CReLU, parent = torch.class('nn.CReLU', 'nn.Sequential')

function CReLU:__init(nInputDims, inplace)
   parent.__init(self)
   self.nInputDims = nInputDims
   self.inplace = inplace or false
   local branches = nn.ConcatTable()
   branches:add(nn.Identity())
   branches:add(nn.MulConstant(-1))
   self:add(branches)
   self:add(nn.JoinTable(2))
   self:add(nn.ReLU(self.inplace))
end

local function flat(self, t, input)
   t = t:contiguous()
   if input:dim() == self.nInputDims + 1 then return t:view(input:size(1), -1), true end
   return t:view(1, -1), false
end

function CReLU:updateOutput(input)
   local x, batched = flat(self, input, input)
   parent.updateOutput(self, x)
   local osize = input:size()
   local d = batched and 2 or 1
   osize[d] = osize[d] * 2
   self.output:resize(osize)
   return self.output
end

function CReLU:updateGradInput(input, gradOutput)
   local x = flat(self, input, input)
   parent.updateGradInput(self, x, (flat(self, gradOutput, input)))
   self.gradInput:resizeAs(input)
   return self.gradInput
end

-- No parameters: backward is updateGradInput.
function CReLU:backward(input, gradOutput)
   return self:updateGradInput(input, gradOutput)
end

function CReLU:__tostring__()
   return 'CReLU()'
end
