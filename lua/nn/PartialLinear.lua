-- nn.PartialLinear(inputsize, outputsize, bias=true): a Linear whose forward and
-- backward can be restricted to a subset of its output units
-- (setPartition(indices)); resetPartition() uses them all again. The weight
-- lives in a LookupTable (rows = output units) so only the selected rows
-- are read and receive gradient; bias is (1, outputsize), zero at start.
local PartialLinear, Module = torch.class('nn.PartialLinear', 'nn.Module')

function PartialLinear:__init(inputsize, outputsize, bias)
   bias = (bias == nil) and true or bias
   Module.__init(self)
   -- {x, partition} -> x * W[partition]^T
   local pt = nn.ParallelTable()
   pt:add(nn.Identity()):add(nn.LookupTable(outputsize, inputsize))
   self.network = nn.Sequential():add(pt):add(nn.MM(false, true))
   if bias then
      self.bias = torch.Tensor(1, outputsize):zero()
      self.gradBias = torch.Tensor(1, outputsize):zero()
   end
   self.inputsize = inputsize
   self.outputsize = outputsize
   self.allcolumns = torch.range(1, self.outputsize)
   self:resetPartition()
end

function PartialLinear:setPartition(indices)
   self.partition = indices:type(self.allcolumns:type())
end

function PartialLinear:resetPartition()
   self.partition = self.allcolumns
end

function PartialLinear:_lookup()
   return self.network:get(1):get(2)
end

function PartialLinear:parameters()
   local lut = self:_lookup()
   return {lut.weight, self.bias}, {lut.gradWeight, self.gradBias}
end

function PartialLinear:updateOutput(input)
   self.output:set(self.network:forward {input, self.partition})
   if self.bias then
      self.output:add(self.bias:index(2, self.partition:long()):expandAs(self.output))
      self.addBuffer = self.addBuffer or input.new()
      if self.addBuffer:nElement() ~= input:size(1) then self.addBuffer:resize(input:size(1)):fill(1) end
   end
   return self.output
end

function PartialLinear:updateGradInput(input, gradOutput)
   if self.gradInput then
      self.network:updateGradInput({input, self.partition}, gradOutput)
      self.gradInput:set(self.network.gradInput[1])
   end
   return self.gradInput
end

function PartialLinear:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   self.network:accGradParameters({input, self.partition}, gradOutput, scale)
   if self.bias then
      -- column sums of gradOutput go to the partition's bias entries
      self.buffer = self.buffer or input.new()
      self.buffer:resize(gradOutput:size(2)):mv(gradOutput:t(), self.addBuffer):mul(scale)
      self.gradBias:indexAdd(2, self.partition:long(), self.buffer:view(1, self.buffer:nElement()))
   end
end

function PartialLinear:accUpdateGradParameters(input, gradOutput, lr)
   local lut = self:_lookup()
   local gradWeight, gradBias = lut.gradWeight, self.gradBias
   lut.gradWeight, self.gradBias = lut.weight, self.bias
   self:accGradParameters(input, gradOutput, -lr)
   lut.gradWeight, self.gradBias = gradWeight, gradBias
end

function PartialLinear:zeroGradParameters()
   self.network:zeroGradParameters()
   if self.gradBias then self.gradBias:zero() end
end

function PartialLinear:updateParameters(learningRate)
   self.network:updateParameters(learningRate)
   if self.bias then self.bias:add(-learningRate, self.gradBias) end
end

PartialLinear.sharedAccUpdateGradParameters = PartialLinear.accUpdateGradParameters

function PartialLinear:__tostring__()
   return torch.type(self) .. string.format('(%d -> %d)', self.inputsize, self.outputsize) ..
          (self.bias == nil and ' without bias' or '')
end
