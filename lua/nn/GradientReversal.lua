-- nn.GradientReversal(lambda=1): identity forward, gradInput = -lambda * gradOutput
-- (Ganin & Lempitsky 2015). Files from before version 2 had no lambda: 1.
local GradientReversal, parent = torch.class('nn.GradientReversal', 'nn.Module')
GradientReversal.__version = 2

function GradientReversal:__init(lambda)
   parent.__init(self)
   self.lambda = lambda or 1
end

function GradientReversal:setLambda(lambda)
   self.lambda = lambda
end

function GradientReversal:updateOutput(input)
   self.output:set(input)
   return self.output
end

function GradientReversal:updateGradInput(input, gradOutput)
   self.gradInput:resizeAs(gradOutput):copy(gradOutput):mul(-self.lambda)
   return self.gradInput
end

function GradientReversal:read(file, version)
   parent.read(self, file, version)
   if (version or 0) < 2 then self.lambda = 1 end
end
