-- nn.PReLU(nOutputPlane=0): y = x > 0 ? x : w*x with a learned slope per channel
-- (nOutputPlane 0: one slope shared by all elements); slopes start at 0.25.
local PReLU, parent = torch.class('nn.PReLU', 'nn.Module')
local C = torch.C
local check = torch._check

function PReLU:__init(nOutputPlane)
   parent.__init(self)
   self.nOutputPlane = nOutputPlane or 0
   self.weight = torch.Tensor(nOutputPlane or 1):fill(0.25)
   self.gradWeight = torch.Tensor(nOutputPlane or 1)
end

function PReLU:updateOutput(input)
   check(C.lt_nn_PReLU_updateOutput(input._c, self.output._c, self.weight._c, self.nOutputPlane), 2)
   return self.output
end

function PReLU:updateGradInput(input, gradOutput)
   check(C.lt_nn_PReLU_updateGradInput(input._c, gradOutput._c, self.gradInput._c, self.weight._c,
                                       self.nOutputPlane), 2)
   return self.gradInput
end

function PReLU:accGradParameters(input, gradOutput, scale)
   check(C.lt_nn_PReLU_accGradParameters(input._c, gradOutput._c, self.gradWeight._c, self.nOutputPlane,
                                         scale or 1), 2)
   return self.gradWeight
end

-- Torch7 kept two scratch buffers; files saved there may carry them.
function PReLU:clearState()
   nn.utils.clear(self, 'gradWeightBuf', 'gradWeightBuf2')
   return parent.clearState(self)
end
