-- nn.StochasticGradient(module, criterion): plain SGD over a dataset (dataset:size(), dataset[i] =
-- {input, target}), one accUpdateGradParameters step per example. Fields: learningRate (0.01),
-- learningRateDecay (0; the rate at iteration k is learningRate / (1 + k * decay)), maxIteration
-- (25; 0 = forever), shuffleIndices (true), verbose (true), optional hookExample(self, example)
-- and hookIteration(self, iteration, error).
local StochasticGradient = torch.class('nn.StochasticGradient')

function StochasticGradient:__init(module, criterion)
   self.learningRate = 0.01
   self.learningRateDecay = 0
   self.maxIteration = 25
   self.shuffleIndices = true
   self.module = module
   self.criterion = criterion
   self.verbose = true
end

function StochasticGradient:train(dataset)
   local module, criterion = self.module, self.criterion
   local n = dataset:size()
   local order = torch.randperm(n, 'torch.LongTensor')
   if not self.shuffleIndices then order = torch.range(1, n):long() end
   local rate = self.learningRate
   local iteration = 1
   print('# StochasticGradient: training')
   while true do
      local total = 0
      for t = 1, n do
         local example = dataset[order[t]]
         local input, target = example[1], example[2]
         total = total + criterion:forward(module:forward(input), target)
         module:updateGradInput(input, criterion:updateGradInput(module.output, target))
         module:accUpdateGradParameters(input, criterion.gradInput, rate)
         if self.hookExample then self.hookExample(self, example) end
      end
      local err = total / n
      if self.hookIteration then self.hookIteration(self, iteration, err) end
      if self.verbose then print('# current error = ' .. err) end
      iteration = iteration + 1
      rate = self.learningRate / (1 + iteration * self.learningRateDecay)
      if self.maxIteration > 0 and iteration > self.maxIteration then
         print('# StochasticGradient: you have reached the maximum number of iterations')
         print('# training error = ' .. err)
         break
      end
   end
end
