-- graph.Edge: a directed edge; it only records its two ends (and an optional weight).
local Edge = torch.class('graph.Edge')

function Edge:__init(from, to, weight)
   self.from = from
   self.to = to
   self.weight = weight
end
