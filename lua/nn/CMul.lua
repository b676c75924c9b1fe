-- nn.CMul(size...): y = x .* w with a learned tensor w of the given size (or a
-- LongStorage), broadcast over its size-1 dims, or over the batch dim when the
-- input has one dim more / a multiple of w's elements.
local CMul, parent = torch.class('nn.CMul', 'nn.Module')

local function size_of(...)
   local arg = {...}
   local size = torch.LongStorage()
   if #arg == 1 and torch.type(arg[1]) == 'torch.LongStorage' then
      size:resize(#arg[1]):copy(arg[1])
   else
      size:resize(#arg)
      for i = 1, #arg do size[i] = arg[i] end
   end
   return size
end
nn._pointwise_size_of = size_of -- shared with CAdd

function CMul:__init(...)
   parent.__init(self)
   self.size = size_of(...)
   self.weight = torch.Tensor(self.size)
   self.gradWeight = torch.Tensor(self.size)
   self.output:resize(self.size)
   self:reset()
end

function CMul:reset(stdv)
   if stdv then
      stdv = stdv * math.sqrt(3)
   else
      stdv = 1 / math.sqrt(self.weight:nElement())
   end
   self.weight:uniform(-stdv, stdv)
end

-- (view of t, view of the parameter p expanded to it) for the broadcast case.
local function broadcast(t, p, input)
   if p:dim() == input:dim() then return t, p:expandAs(t) end
   local tv = t:view(input:size(1), -1)
   return tv, p:view(1, -1):expandAs(tv)
end

function CMul:updateOutput(input)
   self.output:resizeAs(input):copy(input)
   if input:nElement() == self.weight:nElement() then
      self.output:view(-1):cmul(self.weight:view(-1))
   else
      local out, w = broadcast(self.output, self.weight, input)
      out:cmul(w)
   end
   return self.output
end

function CMul:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   self.gradInput:resizeAs(input)
   if self.weight:nElement() == gradOutput:nElement() then
      self.gradInput:view(-1):cmul(gradOutput:contiguous():view(-1), self.weight:view(-1))
   else
      local go = gradOutput:contiguous()
      local gi, w = broadcast(self.gradInput, self.weight, input)
      gi:cmul(go:viewAs(gi), w)
   end
   return self.gradInput
end

function CMul:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   if self.weight:nElement() == gradOutput:nElement() then
      self.gradWeight:view(-1):addcmul(scale, input:contiguous():view(-1), gradOutput:contiguous():view(-1))
      return
   end
   self._repeat = self._repeat or input.new()
   self._repeat:resizeAs(input):cmul(input, gradOutput)
   local prod = self._repeat
   if self.weight:dim() == input:dim() then
      for i = 1, self.weight:dim() do
         if self.weight:size(i) ~= input:size(i) then prod = prod:sum(i) end
      end
      self.gradWeight:add(scale, prod)
   else
      self.gradWeight:view(1, -1):add(scale, prod:view(input:size(1), -1):sum(1))
   end
end

function CMul:type(type, tensorCache)
   if type then self:clearState() end
   return parent.type(self, type, tensorCache)
end

function CMul:clearState()
   nn.utils.clear(self, {'_input', '_output', '_weight', '_gradWeight', '_expand', '_repeat', '_sum'})
   return parent.clearState(self)
end
