-- nn.LayerNormalization(nOutput, bias=0, eps=1e-10, affine=true): a (1, nOutput)
-- input centred and scaled to norm sqrt(nOutput), then
-- (affine) multiplied by a gain (CMul, 1) and shifted (Add, `bias`).
-- Built as Torch7 builds it -- the same Sequential of children, so .t7 files match:
-- ConcatTable(Identity, Mean + Replicate), CSubTable, Normalize(2, eps),
-- MulConstant(sqrt(nOutput)) [, CMul, Add]. As in Torch7, Replicate(nOutput, 1, 1)
-- stacks the means along dimension 1, so only a batch of one is normalized per sample.
local LayerNormalization, parent = torch.class('nn.LayerNormalization', 'nn.Sequential')

function LayerNormalization:__init(nOutput, bias, eps, affine)
   parent.__init(self)
   eps = eps or 1e-10
   if affine == nil then affine = true end
   bias = bias or 0
   local mean = nn.Sequential():add(nn.Mean(1, 1)):add(nn.Replicate(nOutput, 1, 1))
   self:add(nn.ConcatTable():add(nn.Identity()):add(mean))
   self:add(nn.CSubTable())
   self:add(nn.Normalize(2, eps))
   self:add(nn.MulConstant(math.sqrt(nOutput)))
   if affine then
      local gain = nn.CMul(nOutput)
      gain.weight:fill(1)
      local shift = nn.Add(nOutput, false)
      shift.bias:fill(bias)
      self:add(gain)
      self:add(shift)
   end
end
