-- nn.Profile(module, print_interval=100, name=torch.type(module)): a Decorator
-- that times the module's forward and backward passes and prints the summed
-- time every print_interval calls.
local Profile, parent = torch.class('nn.Profile', 'nn.Decorator')

function Profile:__init(module, print_interval, name)
   parent.__init(self, module)
   self.print_interval = print_interval or 100
   self.name = name or torch.type(module)
   self.module = module
   self.numFwds = 0
   self.numBwds = 0
   self.summedFwdTime = 0
   self.summedBwdTime = 0
   self.timer = torch.Timer()
end

-- count: field prefix ('Fwd' / 'Bwd'); what: the word printed.
function Profile:_record(count, what)
   local n, t = 'num' .. count .. 's', 'summed' .. count .. 'Time'
   self[t] = self[t] + self.timer:time().real
   self[n] = self[n] + 1
   if self[n] % self.print_interval == 0 then
      print(string.format('%s took %.3f seconds for %d %s passes', self.name, self[t], self.print_interval, what))
      self[n], self[t] = 0, 0
   end
end

function Profile:updateOutput(input)
   self.timer:reset()
   self.output = self.module:updateOutput(input)
   self:_record('Fwd', 'forward')
   return self.output
end

function Profile:updateGradInput(input, gradOutput)
   self.timer:reset()
   self.gradInput = self.module:updateGradInput(input, gradOutput)
   self:_record('Bwd', 'backward')
   return self.gradInput
end

-- Files: as in Torch7, where loading nn's Profile does this, a torch.Timer is written as its
-- class name alone and read back as a new running timer, so a file holding nn.Profile has
-- Torch7's layout (and one written by Torch7 reads here).
local Timer = torch.getmetatable('torch.Timer')
rawset(Timer, '__factory', function() return torch.Timer() end)
function Timer:write(file) end
function Timer:read(file, version) end
