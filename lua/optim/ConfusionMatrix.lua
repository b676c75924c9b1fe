-- optim.ConfusionMatrix(nclasses or classes, classes): counts of (target, prediction) pairs.
--
-- mat[t][p] counts the samples of target class t predicted as p (a LongTensor); targets <= 0 are missing and
-- ignored. updateValids() fills valids[t] (row accuracy), unionvalids[t] (mat[t][t] over row + column,
-- the VOC measure), totalValid (trace / total) and averageValid, averageUnionValid (means over the classes
-- whose value is not NaN). print(cm) shows the matrix in Torch7's layout.
local ConfusionMatrix = torch.class('optim.ConfusionMatrix')

function ConfusionMatrix:__init(nclasses, classes)
   if type(nclasses) == 'table' then
      classes = nclasses
      nclasses = #classes
   end
   assert(type(nclasses) == 'number' and nclasses >= 1,
      'optim.ConfusionMatrix: give the number of classes or a table of class names')
   self.mat = torch.LongTensor(nclasses, nclasses):zero()
   self.valids = torch.FloatTensor(nclasses):zero()
   self.unionvalids = torch.FloatTensor(nclasses):zero()
   self.nclasses = nclasses
   self.totalValid = 0
   self.averageValid = 0
   self.classes = classes or {}
end

local function checkClass(self, c, what)
   if c ~= math.floor(c) or c < 1 or c > self.nclasses then
      error('optim.ConfusionMatrix: ' .. what .. ' ' .. tostring(c) .. ' is not a class in 1..' .. self.nclasses, 3)
   end
end

-- one pair of class numbers
function ConfusionMatrix:_add(p, t)
   assert(type(p) == 'number' and type(t) == 'number', 'optim.ConfusionMatrix: classes must be numbers')
   if t > 0 then
      checkClass(self, t, 'target')
      checkClass(self, p, 'prediction')
      self.mat[t][p] = self.mat[t][p] + 1
   end
end

-- the index of the largest element of a 1-D tensor (the first one on ties)
local function argmax(v)
   local best, at = -math.huge, 1
   for i = 1, v:size(1) do
      local x = v[i]
      if x > best then best, at = x, i end
   end
   return at
end

-- add(prediction, target): each a class number, or a 1-D tensor of scores (its argmax is the class)
function ConfusionMatrix:add(prediction, target)
   if type(prediction) ~= 'number' then
      assert(prediction:dim() == 1, 'optim.ConfusionMatrix:add: a prediction tensor must be 1-D (class scores)')
      prediction = argmax(prediction)
   end
   if type(target) ~= 'number' then
      assert(target:dim() == 1, 'optim.ConfusionMatrix:add: a target tensor must be 1-D (one-hot or scores)')
      target = argmax(target)
   end
   self:_add(prediction, target)
end

-- the class of each row: a 1-D tensor of classes, an N x 1 one, or N x K scores (argmax per row)
local function classesOf(t, what)
   if t:dim() == 1 then
      return t:double()
   elseif t:dim() == 2 then
      if t:size(2) == 1 then return t:select(2, 1):double() end
      local _, idx = torch.max(t:double(), 2)
      return idx:select(2, 1):double()
   end
   error('optim.ConfusionMatrix:batchAdd: ' .. what .. ' must be 1-D or 2-D (got ' .. t:dim() .. '-D)', 3)
end

function ConfusionMatrix:batchAdd(predictions, targets)
   local preds = classesOf(predictions, 'predictions')
   local targs = classesOf(targets, 'targets')
   assert(preds:size(1) == targs:size(1), 'optim.ConfusionMatrix:batchAdd: predictions and targets differ in length')
   local n = self.nclasses
   local counts = self.mat:isContiguous() and self.mat:view(-1) or nil
   for i = 1, targs:size(1) do
      local t, p = targs[i], preds[i]
      if t > 0 then
         checkClass(self, t, 'target')
         checkClass(self, p, 'prediction')
         if counts then
            local at = (t - 1) * n + p
            counts[at] = counts[at] + 1
         else
            self.mat[t][p] = self.mat[t][p] + 1
         end
      end
   end
end

function ConfusionMatrix:zero()
   self.mat:zero()
   self.valids:zero()
   self.unionvalids:zero()
   self.totalValid = 0
   self.averageValid = 0
end

function ConfusionMatrix:updateValids()
   local n = self.nclasses
   local rows = self.mat:sum(2)
   local cols = self.mat:sum(1)
   local trace = 0
   for t = 1, n do
      local hit = self.mat[t][t]
      self.valids[t] = hit / rows[t][1]
      self.unionvalids[t] = hit / (rows[t][1] + cols[1][t] - hit)
      trace = trace + hit
   end
   self.totalValid = trace / self.mat:sum()
   local sumValid, nValid, sumUnion, nUnion = 0, 0, 0, 0
   for t = 1, n do
      local v, u = self.valids[t], self.unionvalids[t]
      if v == v then
         sumValid, nValid = sumValid + v, nValid + 1
         if u == u then sumUnion, nUnion = sumUnion + u, nUnion + 1 end
      end
   end
   self.averageValid = sumValid / nValid
   self.averageUnionValid = sumUnion / nUnion
end

-- farFrr(): false rejection and false acceptance rates per class. FRR of class i = 1 - mat[i][i] / row i;
-- FAR of class i = the mean over the other classes j with samples of mat[j][i] / row j.
-- Returns classFrrs, classFars (one per class, -1 for a class without samples) and frrs, fars (only the
-- classes with samples).
function ConfusionMatrix:farFrr()
   local m = self.mat:double()
   local n = m:size(1)
   local rows = m:sum(2)
   local classFrrs = torch.DoubleTensor(n):fill(-1)
   local classFars = torch.DoubleTensor(n):fill(-1)
   local frrs, fars = {}, {}
   for i = 1, n do
      local count = rows[i][1]
      if count ~= 0 then
         local frr = 1 - m[i][i] / count
         local acc, others = 0, 0
         for j = 1, n do
            if j ~= i and rows[j][1] ~= 0 then
               acc = acc + m[j][i] / rows[j][1]
               others = others + 1
            end
         end
         local far = acc / others
         classFrrs[i], classFars[i] = frr, far
         frrs[#frrs + 1], fars[#fars + 1] = frr, far
      end
   end
   self._classFrrs, self._classFars = classFrrs, classFars
   local function tensor(list) return #list > 0 and torch.DoubleTensor(list) or torch.DoubleTensor() end
   return classFrrs, classFars, tensor(frrs), tensor(fars)
end

function ConfusionMatrix:__tostring__()
   self:updateValids()
   local n = self.nclasses
   local width = math.max(8, 1 + math.ceil(math.log10(self.mat:max())))
   local named = self.classes and self.classes[1] ~= nil and self.classes[1] ~= false
   local out = {'ConfusionMatrix:\n', '['}
   for t = 1, n do
      out[#out + 1] = t == 1 and '[' or ' ['
      for p = 1, n do
         out[#out + 1] = string.format('%' .. width .. 'd', self.mat[t][p])
      end
      local close = t == n and ']]  ' or ']   '
      local accuracy = string.format('%2.3f', self.valids[t] * 100)
      if named then
         out[#out + 1] = close .. accuracy .. '% \t[class: ' .. tostring(self.classes[t] or '') .. ']\n'
      else
         out[#out + 1] = close .. accuracy .. '% \n'
      end
   end
   out[#out + 1] = ' + average row correct: ' .. (self.averageValid * 100) .. '% \n'
   out[#out + 1] = ' + average rowUcol correct (VOC measure): ' .. (self.averageUnionValid * 100) .. '% \n'
   out[#out + 1] = ' + global correct: ' .. (self.totalValid * 100) .. '%'
   return table.concat(out)
end

-- render(sortmode, display, block): the row-normalised matrix as an image tensor (DoubleTensor,
-- nclasses*block square, values in [0, 1]) with the classes ordered by accuracy ('score', the default) or by
-- frequency ('occurrence'), and grid lines of 0.1. Torch7 also drew a text legend with Qt; there is no
-- legend here, and display is ignored.
function ConfusionMatrix:render(sortmode, display, block)
   sortmode = sortmode or 'score'
   block = block or 25
   local n = self.nclasses
   local m = self.mat:double()
   local normalized = m:clone()
   local diag = torch.DoubleTensor(n)
   local freqs = torch.DoubleTensor(n)
   for t = 1, n do
      freqs[t] = m[t]:sum()
      normalized[t]:div(math.max(freqs[t], 1))
      diag[t] = normalized[t][t]
   end
   local _, order
   if sortmode == 'score' then
      _, order = torch.sort(diag, 1, true)
   elseif sortmode == 'occurrence' then
      _, order = torch.sort(freqs, 1, true)
   else
      error("optim.ConfusionMatrix:render: sortmode must be 'score' or 'occurrence' (got " .. tostring(sortmode) .. ')', 2)
   end
   local img = torch.DoubleTensor(n * block, n * block)
   for r = 1, n do
      for c = 1, n do
         img:narrow(1, (r - 1) * block + 1, block):narrow(2, (c - 1) * block + 1, block)
            :fill(normalized[order[r]][order[c]])
      end
   end
   for k = 1, n do
      img:select(1, k * block):fill(0.1)
      img:select(2, k * block):fill(0.1)
   end
   return img
end
