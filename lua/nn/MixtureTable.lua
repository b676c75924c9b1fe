-- nn.MixtureTable(dim): input {gater, experts} -> sum_i gater[i] * expert_i.
-- experts is a table of tensors, or one tensor whose dimension `dim` indexes the experts
-- (default 2, or 1 without a batch dimension); gater is (batch x n) or (n).
local MixtureTable, parent = torch.class('nn.MixtureTable', 'nn.Module')

function MixtureTable:__init(dim)
   parent.__init(self)
   self.dim = dim
   self.size = torch.LongStorage()
   self.batchSize = 0
   self.size2 = torch.LongStorage()
   self.backwardSetup = false
   self.gradInput = {}
end

-- Sets dimG (the gater's expert dim), dim and the view size of the gater (ones except batch
-- and expert dims), for experts with `nd` dimensions including the expert dim.
local function setup(self, gater, nd)
   self.dimG = gater:dim() < 2 and 1 or 2
   self.batchSize = self.dimG == 1 and 1 or gater:size(1)
   self.dim = self.dim or (self.dimG == 1 and 1 or 2)
   self.size:resize(nd):fill(1)
   if self.dimG > 1 then self.size[1] = gater:size(1) end
   self.size[self.dim] = gater:size(self.dimG)
   self._gaterView = self._gaterView or gater.new()
   self._gaterView:view(gater:contiguous(), self.size)
end

function MixtureTable:updateOutput(input)
   local gater, experts = input[1], input[2]
   self._expert = self._expert or gater.new()
   if self.table or torch.type(experts) == 'table' then
      self.table = true
      if gater:size(gater:dim() < 2 and 1 or 2) ~= #experts then
         error('nn.MixtureTable: the gater has to have one output per expert')
      end
      setup(self, gater, experts[1]:dim() + 1)
      self.output:resizeAs(experts[1]):zero()
      for i, e in ipairs(experts) do
         self.output:addcmul(e, self._gaterView:select(self.dim, i):expandAs(e))
      end
   else
      setup(self, gater, experts:dim())
      self._expert:cmul(self._gaterView:expandAs(experts), experts)
      self.output:sum(self._expert, self.dim)
      self.output:resizeAs(experts:select(self.dim, 1))
   end
   return self.output
end

function MixtureTable:updateGradInput(input, gradOutput)
   local gater, experts = input[1], input[2]
   nn.utils.recursiveResizeAs(self.gradInput, input)
   local gGater, gExperts = self.gradInput[1], self.gradInput[2]
   self._sum = self._sum or gater.new()
   gGater:resizeAs(gater)
   local B = self.batchSize
   if self.table then
      for i, e in ipairs(experts) do
         -- d/dgate_i = sum over the sample's elements of gradOutput * expert_i
         self._expert:cmul(gradOutput, e)
         self._sum:sum(self._expert:view(B, -1), 2)
         if self.dimG == 1 then
            gGater[i] = self._sum[1][1]
         else
            gGater:select(2, i):copy(self._sum:select(2, 1))
         end
         gExperts[i]:cmul(self._gaterView:select(self.dim, i):expandAs(e), gradOutput)
      end
   else
      -- gradOutput with the expert dim put back (size 1), broadcast over the experts
      self.size2:resize(experts:dim()):copy(experts:size())
      self.size2[self.dim] = 1
      local g = gradOutput:contiguous():view(self.size2):expandAs(experts)
      self._expert:cmul(g, experts)
      -- sum everything but the batch and expert dims: move the expert dim next to the batch
      local n = gater:size(self.dimG)
      local moved = self._expert:transpose(self.dim, self.dimG):contiguous()
      if self.dimG == 1 then
         self._sum:sum(moved:view(n, -1), 2)
      else
         self._sum:sum(moved:view(B, n, -1), 3)
      end
      gGater:copy(self._sum:viewAs(gater))
      gExperts:cmul(self._gaterView:expandAs(experts), g)
   end
   return self.gradInput
end

function MixtureTable:type(type, tensorCache)
   self._gaterView, self._expert, self._sum = nil, nil, nil
   self._expert2, self._expertView, self._expertView2 = nil, nil, nil
   return parent.type(self, type, tensorCache)
end

function MixtureTable:clearState()
   nn.utils.clear(self, {'_gaterView', '_expert', '_expertView', '_sum', '_expert2', '_expertView2'})
   return parent.clearState(self)
end
