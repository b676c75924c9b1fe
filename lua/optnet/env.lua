-- The one table every file of the optnet package adds its functions to, so that
-- `require 'optnet'` and the files loaded by it (or by a program that requires a
-- single file, as optnet's own tests do) all see the same package table.
return {}
