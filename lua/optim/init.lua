-- luatorch's Torch7-compatible `optim` package: every optimizer of Torch7's optim, its line search and
-- helpers, Logger and ConfusionMatrix, one file each (loaded in this order).
require 'torch'

optim = optim or {}

local files = {
   -- first-order methods
   'sgd', 'asgd', 'nag', 'adagrad', 'adadelta', 'adam', 'adamax', 'rmsprop', 'rprop',
   -- batch methods, their line search and interpolation helper
   'cg', 'polyinterp', 'lswolfe', 'lbfgs', 'fista',
   -- derivative-free methods
   'cmaes', 'de',
   -- tools
   'checkgrad', 'Logger', 'ConfusionMatrix',
}
for _, name in ipairs(files) do
   dofile(assert(package.searchpath('optim.' .. name, package.path), 'optim: missing file optim/' .. name .. '.lua'))
end

return optim
