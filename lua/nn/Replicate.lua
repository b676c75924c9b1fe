-- nn.Replicate(nfeature, dim, ndim): nfeature copies of the input stacked along a new
-- dimension `dim` (default 1), without copying (a stride-0 view). With ndim, an input of
-- ndim+1 dimensions has a batch dimension in front.
local Replicate, parent = torch.class('nn.Replicate', 'nn.Module')

function Replicate:__init(nf, dim, ndim)
   parent.__init(self)
   self.nfeatures = nf
   self.dim = dim or 1
   self.ndim = ndim
   assert(self.dim > 0, 'Can only replicate across positive integer dimensions.')
end

function Replicate:_dim(input)
   local rdim = self.dim
   if self.ndim and input:dim() == self.ndim + 1 then rdim = rdim + 1 end
   assert(input:dim() + 1 >= rdim, 'Not enough input dimensions to replicate along dimension ' .. tostring(rdim) .. '.')
   return rdim
end

function Replicate:updateOutput(input)
   local rdim = self:_dim(input)
   local sz = torch.LongStorage(input:dim() + 1)
   local st = torch.LongStorage(input:dim() + 1)
   sz[rdim] = self.nfeatures
   st[rdim] = 0
   for i = 1, input:dim() do
      local j = i < rdim and i or i + 1
      sz[j] = input:size(i)
      st[j] = input:stride(i)
   end
   self.output:set(input:storage(), input:storageOffset(), sz, st)
   return self.output
end

function Replicate:updateGradInput(input, gradOutput)
   local rdim = self:_dim(input)
   self.gradInput:sum(gradOutput, rdim)  -- keeps a size-1 dim at rdim
   self.gradInput:resize(input:size())
   return self.gradInput
end
