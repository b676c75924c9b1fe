-- cudnn.ReLU(inplace=false): y = max(x, 0), nn.ReLU's kernels.
local ReLU, parent = torch.class('cudnn.ReLU', 'nn.ReLU')

function ReLU:__init(inplace)
   parent.__init(self, inplace)
end

-- cudnn.torch's ReLU had no threshold/val fields: supply them for files it wrote.
local function fillFields(self)
   self.threshold, self.val = self.threshold or 0, self.val or 0
   self.inplace = self.inplace or false
end

function ReLU:updateOutput(input)
   fillFields(self)
   return parent.updateOutput(self, input)
end

function ReLU:updateGradInput(input, gradOutput)
   fillFields(self)
   return parent.updateGradInput(self, input, gradOutput)
end

ReLU.__tostring__ = cudnn._plainName
cudnn._withoutDescriptors(ReLU, parent)
