-- luatorch's Torch7-compatible `optim` package.
require 'torch'

optim = optim or {}
local path = package.searchpath('optim.sgd', package.path)
dofile(path)

return optim
