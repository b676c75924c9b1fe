"""The graph and nngraph packages (lua/graph, lua/nngraph).

Oracles: equivalent nn.Sequential/ConcatTable compositions of the same modules, PyTorch autograd
re-implementations of the same computations (float64, 1e-10), hand-computed graph orders, the
Torch7-written fixtures in ../shared/testdata/t7 (their layout read with the pure-Python reader
pytorch_bridge.t7), and real `luatorch th` processes."""
import os
import subprocess
import sys

import numpy as np
import pytest

from pytorch_bridge import LuaError, t7

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOL = 1e-10


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(1e-30, np.max(np.abs(b)))) if b.size else 0.0


def th(script, cwd):
    return subprocess.run([sys.executable, "-m", "run.cli", "th", str(script)], capture_output=True, text=True,
                          cwd=str(cwd), timeout=300)


@pytest.fixture
def ng(rt):
    rt.require("nngraph")
    return rt


def lua_list(rt, lua_table):
    return [lua_table[i + 1] for i in range(len(lua_table))]


def np_list(rt, lua_table):
    """A Lua list of tensors (or of lists of tensors) as copied numpy arrays."""
    out = []
    for v in lua_list(rt, lua_table):
        out.append(np.array(rt.to_numpy(v)) if rt.eval("torch.isTensor")(v) else np_list(rt, v))
    return out


# ---------------------------------------------------------------- graph


def test_graph_orders_roots_leaves_and_reverse(rt):
    rt.require("graph")
    res = rt.execute("""
        -- a -> b -> d, a -> c -> d, e -> c ; ids follow the order nodes join the graph
        local a, b, c, d, e = graph.Node('a'), graph.Node('b'), graph.Node('c'), graph.Node('d'), graph.Node('e')
        local g = graph.Graph()
        local ab = graph.Edge(a, b)
        g:add{ab, graph.Edge(a, c), graph.Edge(b, d), graph.Edge(c, d), graph.Edge(e, c)}
        g:add(ab)  -- the same edge object twice is one edge
        local function names(list) local s = {} for i, n in ipairs(list) do s[i] = n.data end return table.concat(s) end
        local ids = {a.id, b.id, c.id, d.id, e.id}
        local sorted = names(g:topsort())
        local r = g:reverse()
        local dfs, bfs = {}, {}
        a:dfs(function(n) dfs[#dfs + 1] = n.data end)
        a:bfs(function(n) bfs[#bfs + 1] = n.data end)
        local cyc = graph.Graph()
        local x, y = graph.Node('x'), graph.Node('y')
        cyc:add{graph.Edge(x, y), graph.Edge(y, x)}
        local ok, err = pcall(function() return cyc:topsort() end)
        return {ids = ids, sorted = sorted, roots = names(g:roots()), leaves = names(g:leaves()),
                rroots = names(r:roots()), rleaves = names(r:leaves()), nedges = #g.edges, nnodes = #g.nodes,
                dfs = table.concat(dfs), bfs = table.concat(bfs), cycle = g:hasCycle(), cycle2 = cyc:hasCycle(),
                topsortCycle = tostring(err), flags = tostring(a.visited or a.marked or d.visited or d.marked),
                rshares = r.nodes[1].data .. r.nodes[2].data, rnew = r.nodes[2] ~= a, bchildren = #b.children}
    """)
    assert [res["ids"][i] for i in range(1, 6)] == [1, 2, 3, 4, 5]
    assert res["nedges"] == 5 and res["nnodes"] == 5
    # post-order dfs of the reversed graph from its roots (d): d's inputs b (via a) first
    assert res["sorted"] == "abecd"
    assert res["roots"] == "ae" and res["leaves"] == "d"
    assert res["rroots"] == "d" and res["rleaves"] == "ae"
    assert res["dfs"] == "dbca" and res["bfs"] == "abcd"
    assert res["cycle"] is False and res["cycle2"] is True
    assert "cycle" in res["topsortCycle"]
    assert res["flags"] == "false"  # dfs/bfs clear their marks
    assert res["rshares"] == "ba" and res["rnew"] is True and res["bchildren"] == 1


def test_graph_dot_text_and_rendering_message(rt, tmp_path):
    rt.require("graph")
    res = rt.execute("""
        local g = graph.Graph()
        local a, b = graph.Node('in'), graph.Node('out')
        g:add(graph.Edge(a, b))
        local text = g:todot('T')
        local ok, err = pcall(graph.dot, g, 'T', %r)
        return text, ok, tostring(err), graph.haveGraphviz(),
               graph._dotEscape('red'), graph._dotEscape('My label'), graph._dotEscape('a\\nb "c"')
    """ % str(tmp_path / "pic"))
    text, ok, err, have_dot, e1, e2, e3 = res
    assert text.startswith("digraph G {") and 'label="T"' in text
    assert 'n1[label="Node1\\nin"];' in text and "n1 -> n2;" in text
    assert (e1, e2, e3) == ("red", '"My label"', '"a\\nb \\"c\\""')
    assert (tmp_path / "pic.dot").read_text().startswith("digraph G {")
    if have_dot:
        assert ok and (tmp_path / "pic.svg").exists()
    else:
        # one clear line: what is missing, what was still written, what to install
        assert not ok and "`dot` command was not found" in err and "pic.dot" in err and "install graphviz" in err


# ---------------------------------------------------------------- gModule vs nn containers


def test_gmodule_matches_sequential_concattable(ng, rng):
    """x -> Linear -> Tanh -> {Linear, Linear} -> CAddTable, as a graph and as containers of the same modules."""
    res = ng.execute("""
        local l1, la, lb = nn.Linear(5, 4), nn.Linear(4, 3), nn.Linear(4, 3)
        local seq = nn.Sequential():add(l1):add(nn.Tanh())
           :add(nn.ConcatTable():add(la):add(lb)):add(nn.CAddTable())
        local g1, ga, gb = l1:clone(), la:clone(), lb:clone()
        local x = nn.Identity()()
        local h = nn.Tanh()(g1(x))
        local out = nn.CAddTable()({ga(h), gb(h)})   -- h fans out to two modules
        local net = nn.gModule({x}, {out})
        return seq, net
    """)
    seq, net = res
    x = rng.standard_normal((6, 5))
    go = rng.standard_normal((6, 3))
    run = ng.eval("""function(m, x, go)
        m:zeroGradParameters()
        local y = m:forward(x):clone()
        local gi = m:backward(x, go):clone()
        local _, gp = m:parameters()
        local grads = {}
        for i, g in ipairs(gp) do grads[i] = g:clone() end
        return y, gi, grads
    end""")
    ys, gis, gs = ng.call(run, seq, ng.from_numpy(x), ng.from_numpy(go))
    yg, gig, gg = ng.call(run, net, ng.from_numpy(x), ng.from_numpy(go))
    assert rel_err(ng.to_numpy(yg), ng.to_numpy(ys)) < 1e-14
    assert rel_err(ng.to_numpy(gig), ng.to_numpy(gis)) < 1e-14
    gs, gg = np_list(ng, gs), np_list(ng, gg)
    assert len(gs) == len(gg) == 6
    for a, b in zip(gg, gs):
        assert rel_err(a, b) < 1e-14


def test_fan_out_gradients_sum_against_pytorch(ng, rng):
    torch = pytest.importorskip("torch")
    res = ng.execute("""
        local lin = nn.Linear(4, 4)
        local x = nn.Identity()()
        local h = lin(x)
        -- h feeds three consumers, and x two (a skip connection)
        local out = nn.CAddTable()({nn.Tanh()(h), nn.Sigmoid()(h), nn.CMulTable()({h, x})})
        return nn.gModule({x}, {out}), lin
    """)
    net, lin = res
    x = rng.standard_normal((3, 4))
    go = rng.standard_normal((3, 4))
    y, gi = ng.call(ng.eval("function(m, x, go) m:zeroGradParameters(); local y = m:forward(x):clone(); "
                            "return y, m:backward(x, go):clone() end"), net, ng.from_numpy(x), ng.from_numpy(go))
    W = torch.tensor(ng.to_numpy(lin.weight).copy(), requires_grad=True)
    b = torch.tensor(ng.to_numpy(lin.bias).copy(), requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    h = xt @ W.T + b
    out = torch.tanh(h) + torch.sigmoid(h) + h * xt
    out.backward(torch.tensor(go))
    assert rel_err(ng.to_numpy(y), out.detach().numpy()) < TOL
    assert rel_err(ng.to_numpy(gi), xt.grad.numpy()) < TOL
    assert rel_err(ng.to_numpy(lin.gradWeight), W.grad.numpy()) < TOL
    assert rel_err(ng.to_numpy(lin.gradBias), b.grad.numpy()) < TOL


def test_nested_table_inputs_and_outputs(ng, rng):
    """Inputs {x, {h, c}} split with :split(2), outputs {y, {h', c'}} made with nngraph.nest."""
    net = ng.execute("""
        local x, state = nn.Identity()(), nn.Identity()()
        local h, c = state:split(2)
        local h2 = nn.CAddTable()({x, h})
        local c2 = nn.CMulTable()({c, h2})
        local y = nn.Tanh()(c2)
        return nn.gModule({x, state}, {y, nngraph.nest({h2, c2})})
    """)
    x, h, c = (rng.standard_normal(5) for _ in range(3))
    gy, gh2, gc2 = (rng.standard_normal(5) for _ in range(3))
    T = ng.from_numpy
    inp = ng.table(T(x), ng.table(T(h), T(c)))
    gout = ng.table(T(gy), ng.table(T(gh2), T(gc2)))
    out, gin = ng.call(ng.eval("""function(m, inp, go)
        local o = m:forward(inp)
        local oc = {o[1]:clone(), {o[2][1]:clone(), o[2][2]:clone()}}
        local g = m:backward(inp, go)
        return oc, {g[1]:clone(), {g[2][1]:clone(), g[2][2]:clone()}}
    end"""), net, inp, gout)
    (y, (h2, c2)), (gx, (gh, gc)) = np_list(ng, out), np_list(ng, gin)
    e_h2 = x + h
    e_c2 = c * e_h2
    e_y = np.tanh(e_c2)
    assert rel_err(h2, e_h2) < TOL and rel_err(c2, e_c2) < TOL and rel_err(y, e_y) < TOL
    g_c2 = gc2 + gy * (1 - e_y ** 2)
    g_h2 = gh2 + g_c2 * c
    assert rel_err(gx, g_h2) < TOL and rel_err(gh, g_h2) < TOL and rel_err(gc, g_c2 * e_h2) < TOL


def test_gmodule_inside_gmodule_matches_flat_graph(ng, rng):
    """A two-input, two-output gModule used as one node of another, against the same graph built flat."""
    res = ng.execute("""
        local la, lb, lc = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 3)
        local function cellOn(u, v, a, b)   -- {u, v} -> {tanh(a u + b v), u * v}
           return nn.Tanh()(nn.CAddTable()({a(u), b(v)})), nn.CMulTable()({u, v})
        end
        local u, v = nn.Identity()(), nn.Identity()()
        local p, q = cellOn(u, v, la, lb)
        local inner = nn.gModule({u, v}, {p, q})
        local x = nn.Identity()()
        local y1, y2 = inner({x, nn.Sigmoid()(x)}):split(2)
        local nested = nn.gModule({x}, {lc(y1), y2})
        local fx = nn.Identity()()
        local f1, f2 = cellOn(fx, nn.Sigmoid()(fx), la:clone(), lb:clone())
        local flat = nn.gModule({fx}, {lc:clone()(f1), f2})
        local run = function(m, input, g1, g2)
           m:zeroGradParameters()
           local o = m:forward(input)
           local out = {o[1]:clone(), o[2]:clone()}
           local gi = m:backward(input, {g1, g2}):clone()
           local _, gp = m:parameters()
           local grads = {}
           for i, g in ipairs(gp) do grads[i] = g:clone() end
           return {out, gi, grads}
        end
        return nested, flat, run
    """)
    nested, flat, run = res
    x, g1, g2 = rng.standard_normal((2, 4)), rng.standard_normal((2, 3)), rng.standard_normal((2, 4))
    args = [ng.from_numpy(a) for a in (x, g1, g2)]
    a, b = ng.call(run, nested, *args), ng.call(run, flat, *args)
    (oa, gia, ga), (ob, gib, gb) = np_list(ng, a), np_list(ng, b)
    for p, q in zip(oa + [gia] + ga, ob + [gib] + gb):
        assert rel_err(p, q) < 1e-14
    assert len(ga) == len(gb) == 6


def test_container_methods(ng):
    res = ng.execute("""
        local x = nn.Identity()()
        local d = nn.Dropout(0.5)(nn.Linear(3, 3)(x))
        local net = nn.gModule({x}, {nn.Linear(3, 2)(d)})
        local p, gp = net:parameters()
        local kinds = {}
        net:apply(function(m) kinds[#kinds + 1] = torch.type(m) end)
        net:evaluate()
        local evalTrain = net.modules[3].train
        net:training()
        local trainTrain = net.modules[3].train
        -- a clone sharing weights follows the original's weights
        local tied = net:clone('weight', 'bias')
        net.modules[2].weight:fill(0.25)
        local sharedOk = tied.modules[2].weight[1][1] == 0.25
        local copy = net:clone()
        net.modules[2].weight:fill(0.5)
        local copyOk = copy.modules[2].weight[1][1] == 0.25
        net:forward(torch.randn(3)); net:backward(torch.randn(3), torch.randn(2))
        net:clearState()
        local cleared = true
        for _, n in ipairs(net.forwardnodes) do cleared = cleared and n.data.input == nil end
        for _, n in ipairs(net.backwardnodes) do cleared = cleared and n.data.gradOutput == nil end
        net:evaluate()
        local after = net:forward(torch.ones(3)):clone()   -- runs again after clearState
        net:double()
        return #p, #gp, table.concat(kinds, ','), evalTrain, trainTrain, sharedOk, copyOk, cleared,
               after:nElement(), tostring(net), net:type()
    """)
    assert res[0] == 4 and res[1] == 4
    assert res[2] == "nn.gModule,nn.Identity,nn.Linear,nn.Dropout,nn.Linear"
    assert res[3] is False and res[4] is True
    assert res[5] is True and res[6] is True and res[7] is True
    assert res[8] == 2 and res[9] == "nn.gModule" and res[10] == "torch.DoubleTensor"


def test_type_converts_the_graph(ng):
    res = ng.execute("""
        local x = nn.Identity()()
        local net = nn.gModule({x}, {nn.Tanh()(nn.Linear(4, 2)(x)), nn.Sigmoid()(x)})
        net:forward(torch.randn(4)); net:backward(torch.randn(4), {torch.randn(2), torch.randn(4)})
        net:float()
        local kinds = {torch.type(net.output[1]), torch.type(net.gradInput), torch.type(net.modules[2].weight),
                       torch.type(net.innode.data.input[1]), torch.type(net.backwardnodes[2].data.gradOutput[1])}
        local y = net:forward(torch.randn(4):float())
        kinds[#kinds + 1] = torch.type(y[1])
        kinds[#kinds + 1] = torch.type(net:backward(torch.randn(4):float(), {torch.randn(2):float(),
                                                                             torch.randn(4):float()}))
        return table.concat(kinds, ',')
    """)
    assert res == ",".join(["torch.FloatTensor"] * 7)


def test_replace_and_map(ng):
    res = ng.execute("""
        local x = nn.Identity()()
        local net = nn.gModule({x}, {nn.Linear(2, 5)(nn.Sigmoid()(nn.Linear(5, 2)(x)))})
        net:replace(function(m) if torch.type(m) == 'nn.Sigmoid' then return nn.Tanh() end return m end)
        local other = net:clone()
        local pairsSeen = 0
        net:map(other, function(a, b) if torch.type(a) == torch.type(b) then pairsSeen = pairsSeen + 1 end end)
        return torch.type(net.modules[3]), net:forward(torch.randn(3, 5)):size(2), pairsSeen
    """)
    assert res == ("nn.Tanh", 5, 4)


def test_criterion_node_and_operators(ng, rng):
    res = ng.execute("""
        local pred, target = nn.Identity()(), nn.Identity()()
        local loss = nn.MSECriterion()({pred, target})
        local net = nn.gModule({pred, target}, {loss})
        local p, t = torch.randn(3, 4), torch.randn(3, 4)
        local crit = nn.MSECriterion()
        local y = net:forward({p, t})[1]
        local g = net:backward({p, t}, torch.Tensor{2})
        local expect = crit:backward(p, t):clone():mul(2)
        -- operator shorthand: -module is module(), a - b is b(a)
        local a = -nn.Identity()
        local b = a - nn.Tanh() - nn.MulConstant(3)
        local net2 = nn.gModule({a}, {b})
        local x = torch.randn(4)
        return y - crit:forward(p, t), (g[1] - expect):abs():max(), g[2]:abs():max(),
               (net2:forward(x) - torch.tanh(x):mul(3)):abs():max(), torch.type(net.modules[3])
    """)
    assert abs(res[0]) < 1e-14 and res[1] < 1e-14 and res[2] == 0 and res[3] < 1e-14
    assert res[4] == "nn.ModuleFromCriterion"


def test_annotations_labels_and_debug_picture(ng, tmp_path):
    fn = ng.eval("""function(dir)
        local x = nn.Identity()()
        local hidden = nn.Linear(3, 3)(x):annotate{name = 'hid', description = 'the hidden layer',
                                                   graphAttributes = {color = 'blue'}}
        local broken = nn.Linear(7, 2)(hidden)   -- wrong size: fails at forward
        nngraph.annotateNodes()
        local net = nn.gModule({x}, {broken})
        net.name = dir .. '/failed'
        local dot = net.fg:todot('t')
        nngraph.setDebug(true)
        local ok, err = pcall(net.forward, net, torch.randn(3))
        nngraph.setDebug(false)
        local ok2 = pcall(net.forward, net, torch.randn(3))
        return x.data.annotations.name, hidden.data.annotations.name, broken.data.annotations.name,
               dot, ok, tostring(err), hidden:label(), ok2
    end""")
    xname, hname, bname, dot, ok, err, label, ok2 = ng.call(fn, str(tmp_path))
    assert (xname, hname, bname) == ("x", "hid", "broken")
    assert 'color=blue' in dot and 'label="hid (' in dot and "the hidden layer" in dot
    assert "desc = the hidden layer" in label and "module = nn.Linear" in label
    assert not ok and not ok2
    picture = (tmp_path / "failed.dot").read_text()
    # the failing node (the Linear(7, 2)) is drawn red
    red = [line for line in picture.splitlines() if "fillcolor=red" in line]
    assert len(red) == 1
    node_id = red[0].split("[")[0]
    assert any(line.startswith(node_id + "[") and "broken" in line for line in picture.splitlines())


def test_debug_labels_name_the_users_line(ng):
    fn = ng.execute("""
        return function()
           local a = nn.Identity()()
           local p, q = a:split(2)
           return a.data.annotations._debugLabel, p.data.annotations._debugLabel,
                  debug.getinfo(1, 'S').short_src, debug.getinfo(1, 'l').currentline
        end
    """, "=mychunk")
    la, lp, src, line = ng.call(fn)
    assert la == "[%s]:%d_" % (src, line - 3)
    assert lp == "[%s]:%d_-1" % (src, line - 3)


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("code, message", [
    ("local a = nn.Identity()(); nn.CAddTable()({a, a})", "inputs[2] is the same node as inputs[1]"),
    ("local a = nn.Identity()(); nn.CAddTable()({a, nn.Identity()})",
     "inputs[2] is an nn.Module, specifically a nn.Identity, but the only valid thing to pass is an instance of "
     "nngraph.Node"),
    ("nn.Tanh()(nil)", "inputs[1] is nil (typo / bad index?)"),
    ("nn.Tanh()({})", "cannot pass an empty table of inputs"),
    ("nn.Tanh()(torch.Tensor(3))", "inputs[1] should be an nngraph.Node but is of type torch.DoubleTensor"),
    ("local a = nn.Identity()(); nn.gModule({a}, {nn.Tanh()(a), nil, nn.Tanh()(a)})",
     "outputs[2] is nil (typo / bad index?)"),
    ("local a, b = nn.Identity()(), nn.Identity()(); nn.gModule({a, b}, {nn.Tanh()(a)})",
     "1 of split(2) outputs from the node declared at"),
    ("local a = nn.Identity()(); local l = nn.Linear(2, 2)(a); local d = nn.Tanh()(l); "
     "nn.gModule({a}, {nn.Sigmoid()(l)})", "does not connect to gmodule output"),
    ("local a = nn.Identity()(); nn.gModule({}, {a})", "at least one input node is needed"),
    ("local a = nn.Identity()(); local t = nn.Tanh()(a); nn.gModule({a}, {t, t})",
     "outputs[2] is the same node as outputs[1]"),
    ("local a = nn.Identity()(); local free = nn.Identity()(); nn.gModule({a}, {nn.CAddTable()({a, free})})",
     "has no inputs but is not among the gModule inputs"),
    ("local a = nn.Identity()(); local b = nn.Tanh()(a); nn.gModule({a, b}, {b})",
     "is computed from other nodes; an input must be a node made with no inputs"),
])
def test_clear_errors_when_building(ng, code, message):
    with pytest.raises(LuaError) as e:
        ng.execute(code, "=build")
    assert message in e.value.lua_message
    assert e.value.lua_message.startswith("build:1: ")  # it names the user's line


def test_a_rejected_call_leaves_the_graph_as_it_was(ng):
    # failed calls connect nothing, so the gModule built afterwards has no dangling nodes
    res = ng.execute("""
        local a = nn.Identity()()
        local t = nn.Tanh()(a)
        assert(not pcall(function() return nn.CAddTable()({a, a}) end))
        assert(not pcall(function() return nn.CAddTable()({t, nn.Linear(2, 2)}) end))
        assert(not pcall(function() return nn.gModule({a}, {t, t}) end))
        -- rejected after connecting its nodes (s does not reach the output): disconnected again
        local s = nn.Sigmoid()(t)
        local ok, err = pcall(nn.gModule, {a}, {t})
        assert(not ok and err:find('does not connect to gmodule output'), err)
        local m = nn.gModule({a}, {t, s})
        local y = m:forward(torch.Tensor{0.5})
        return y[1][1], y[2][1], #a.children
    """)
    assert abs(res[0] - np.tanh(0.5)) < 1e-15
    assert abs(res[1] - 1 / (1 + np.exp(-np.tanh(0.5)))) < 1e-15
    assert res[2] == 1  # the gModule's input node only, none of the rejected one's


def test_clear_errors_when_running(ng):
    net = ng.execute("""
        local a, b = nn.Identity()(), nn.Identity()()
        local p, q = nn.SplitTable(1)(b):split(2)
        return nn.gModule({a, b}, {nn.CAddTable()({a, p, q})})
    """)
    run = ng.eval("function(m, x) return m:forward(x) end")
    with pytest.raises(LuaError) as e:  # a missing input
        ng.call(run, net, ng.execute("return {torch.randn(2)}"))
    assert "got 1 inputs instead of 2" in e.value.lua_message
    with pytest.raises(LuaError) as e:  # not a table at all
        ng.call(run, net, ng.execute("return torch.randn(2)"))
    assert "expected a table of 2 inputs, got torch.DoubleTensor" in e.value.lua_message
    with pytest.raises(LuaError) as e:  # the split gets three parts
        ng.call(run, net, ng.execute("return {torch.randn(2), torch.randn(3, 2)}"))
    assert "split(2) cannot split 3 outputs" in e.value.lua_message
    ok = ng.call(run, net, ng.execute("return {torch.ones(2), torch.ones(2, 2)}"))
    assert list(ng.to_numpy(ok)) == [3.0, 3.0]
    with pytest.raises(LuaError) as e:  # wrong number of gradOutputs for a two-output graph
        ng.execute("""local x = nn.Identity()()
            local m = nn.gModule({x}, {nn.Tanh()(x), nn.Sigmoid()(x)})
            m:forward(torch.randn(2)); m:backward(torch.randn(2), {torch.randn(2)})""")
    assert "got 1 gradOutputs instead of 2" in e.value.lua_message


# ---------------------------------------------------------------- Torch7 files


def test_torch7_gmodule_fixture_runs_forward_and_backward(ng, t7_dir, rng):
    """gmodule_with_linear_identity.t7: gModule({a, b}, {CAddTable{b, Linear(1, 2)(a)}})."""
    path = os.path.join(t7_dir, "gmodule_with_linear_identity.t7")
    in_file = t7.load(path)
    lin = next(m for m in in_file.modules if m.typename == "nn.Linear")
    W, b = np.asarray(lin.weight), np.asarray(lin.bias)
    a, bb = rng.standard_normal((3, 1)), rng.standard_normal((3, 2))
    go = rng.standard_normal((3, 2))
    res = ng.call(ng.eval("""function(p, a, b, go)
        local m = torch.load(p)
        local y = m:forward({a, b}):clone()
        m:zeroGradParameters()
        local g = m:backward({a, b}, go)
        local lin
        for _, mod in ipairs(m.modules) do if torch.type(mod) == 'nn.Linear' then lin = mod end end
        return y, g[1]:clone(), g[2]:clone(), lin.gradWeight:clone(), lin.gradBias:clone(),
               torch.type(m), torch.type(m.innode), torch.type(m.fg), torch.type(m.fg.edges[1]), #m.forwardnodes
    end"""), path, ng.from_numpy(a), ng.from_numpy(bb), ng.from_numpy(go))
    y, ga, gb, gW, gbias = (np.array(ng.to_numpy(v)) for v in res[:5])
    assert rel_err(y, a @ W.T + b + bb) < TOL
    assert rel_err(ga, go @ W) < TOL and rel_err(gb, go) < TOL
    assert rel_err(gW, go.T @ a) < TOL and rel_err(gbias, go.sum(0)) < TOL
    assert res[5:] == ("nn.gModule", "nngraph.Node", "graph.Graph", "graph.Edge", 9)


def test_torch7_node_fixture_loads_as_a_node(ng, t7_dir):
    path = os.path.join(t7_dir, "nngraph_node.t7")
    in_file = t7.load(path)
    res = ng.call(ng.eval("""function(p)
        local n = torch.load(p)
        local keys = {}
        for k in pairs(n.data) do keys[#keys + 1] = k end
        table.sort(keys)
        return torch.type(n), torch.isTypeOf(n, 'graph.Node'), table.concat(keys, ','), n.id, #n.children,
               type(n.split), n:graphNodeName()
    end"""), path)
    assert res[0] == "nngraph.Node" and res[1] is True
    assert res[2] == ",".join(sorted(in_file.data.keys()))
    assert res[3] == in_file.id and res[4] == len([k for k in in_file.children if isinstance(k, int)])
    assert res[5] == "function" and res[6] == "Node%d" % in_file.id


def test_torch7_gmodule_loads_in_th_without_require(t7_dir, tmp_path):
    """A real `luatorch th` process: torch.load of the Torch7 gModule without require 'nngraph'."""
    script = tmp_path / "load.lua"
    script.write_text(
        "local m = torch.load(%r)\n"
        "local y = m:forward({torch.Tensor{2}, torch.Tensor{10, 20}})\n"
        "local g = m:backward({torch.Tensor{2}, torch.Tensor{10, 20}}, torch.Tensor{1, 1})\n"
        "print(torch.type(m), torch.type(nngraph), y:size(1), g[2][1], g[2][2])\n"
        % os.path.join(t7_dir, "gmodule_with_linear_identity.t7"))
    r = th(script, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["nn.gModule", "table", "2", "1", "1"]


def test_saved_gmodule_has_torch7s_layout_and_round_trips(ng, t7_dir, tmp_path, rng):
    out = tmp_path / "net.t7"
    fn = ng.eval("""function(path, x)
        local a, b = nn.Identity()(), nn.Identity()()
        local c = nn.Linear(1, 2)(a)
        local net = nn.gModule({a, b}, {nn.CAddTable()({b, c})})
        torch.save(path, net)   -- as built, like the Torch7 file
        local back = torch.load(path)
        return net:forward({x, torch.ones(2)}):clone(), back:forward({x, torch.ones(2)}):clone()
    end""")
    y, y2 = ng.call(fn, str(out), ng.from_numpy(rng.standard_normal(1)))
    assert np.array_equal(ng.to_numpy(y), ng.to_numpy(y2))
    ours, theirs = t7.load(str(out)), t7.load(os.path.join(t7_dir, "gmodule_with_linear_identity.t7"))
    assert ours.typename == theirs.typename == "nn.gModule"
    assert set(theirs.fields) <= set(ours.fields)
    for f in ("fg", "bg"):
        assert ours[f].typename == "graph.Graph" and set(ours[f].fields) == set(theirs[f].fields)
        assert set(ours[f].edges[1].fields) == set(theirs[f].edges[1].fields)
        assert len([k for k in ours[f].nodes if isinstance(k, int)]) == 9
    for f in ("forwardnodes", "backwardnodes"):
        for n_ours, n_theirs in zip(ours[f], theirs[f]):
            assert n_ours.typename == n_theirs.typename == "nngraph.Node"
            assert set(n_ours.fields) == set(n_theirs.fields)
            # the same data fields at the same places (ours also records reverseMap, as newer nngraph)
            assert set(n_ours.data) - {"reverseMap"} == set(n_theirs.data)
            assert n_ours.id == n_theirs.id
            assert n_ours.data.get("forwardNodeId") == n_theirs.data.get("forwardNodeId")
    assert [m.typename for m in ours.modules] == [m.typename for m in theirs.modules]
    assert ours.nInputs == theirs.nInputs == 2 and ours.verbose is False
    assert ours.innode is ours.forwardnodes[0] and ours.outnode is ours.backwardnodes[0]


# ---------------------------------------------------------------- char-rnn style LSTM and GRU

CELLS = r"""
local cells = {}

-- An LSTM of nLayers as char-rnn builds it: inputs {x, c_1, h_1, ..., c_n, h_n}, outputs
-- {c_1', h_1', ..., c_n', h_n', log-probabilities}. Each layer sums Linear(x) and Linear(h)
-- into the four gate pre-activations, cuts them apart with Reshape + SplitTable, and
-- combines sigmoid and tanh gates with CMulTable/CAddTable.
function cells.lstm(vocab, size, nLayers)
   local inputs, outputs, linears = {nn.Identity()()}, {}, {}
   for _ = 1, nLayers do
      inputs[#inputs + 1] = nn.Identity()()
      inputs[#inputs + 1] = nn.Identity()()
   end
   local below, belowSize = inputs[1], vocab
   for layer = 1, nLayers do
      local prevC, prevH = inputs[2 * layer], inputs[2 * layer + 1]
      local fromX, fromH = nn.Linear(belowSize, 4 * size), nn.Linear(size, 4 * size)
      linears[#linears + 1] = fromX
      linears[#linears + 1] = fromH
      local preact = nn.CAddTable()({fromX(below), fromH(prevH)})
      local i, f, o, g = nn.SplitTable(2)(nn.Reshape(4, size)(preact)):split(4)
      local nextC = nn.CAddTable()({nn.CMulTable()({nn.Sigmoid()(f), prevC}),
                                    nn.CMulTable()({nn.Sigmoid()(i), nn.Tanh()(g)})})
      local nextH = nn.CMulTable()({nn.Sigmoid()(o), nn.Tanh()(nextC)})
      outputs[#outputs + 1] = nextC
      outputs[#outputs + 1] = nextH
      below, belowSize = nextH, size
   end
   local decoder = nn.Linear(size, vocab)
   linears[#linears + 1] = decoder
   outputs[#outputs + 1] = nn.LogSoftMax()(decoder(below))
   return nn.gModule(inputs, outputs), linears
end

-- A GRU layer as char-rnn builds it: inputs {x, h}, outputs {h', log-probabilities}.
function cells.gru(vocab, size)
   local x, prevH = nn.Identity()(), nn.Identity()()
   local linears = {}
   local function gateSum(a, aSize, b)
      local la, lb = nn.Linear(aSize, size), nn.Linear(size, size)
      linears[#linears + 1] = la
      linears[#linears + 1] = lb
      return nn.CAddTable()({la(a), lb(b)})
   end
   local update = nn.Sigmoid()(gateSum(x, vocab, prevH))
   local reset = nn.Sigmoid()(gateSum(x, vocab, prevH))
   local candidate = nn.Tanh()(gateSum(x, vocab, nn.CMulTable()({reset, prevH})))
   local keep = nn.CMulTable()({nn.AddConstant(1, false)(nn.MulConstant(-1, false)(update)), prevH})
   local nextH = nn.CAddTable()({nn.CMulTable()({update, candidate}), keep})
   local decoder = nn.Linear(size, vocab)
   linears[#linears + 1] = decoder
   return nn.gModule({x, prevH}, {nextH, nn.LogSoftMax()(decoder(nextH))}), linears
end

-- One forward and backward: outputs, gradInputs and every Linear's gradients, copied.
function cells.step(net, linears, inputs, gradOutputs)
   net:zeroGradParameters()
   local outs = {}
   for i, o in ipairs(net:forward(inputs)) do outs[i] = o:clone() end
   local gins = {}
   for i, g in ipairs(net:backward(inputs, gradOutputs)) do gins[i] = g:clone() end
   local params = {}
   for _, l in ipairs(linears) do
      params[#params + 1] = {l.weight:clone(), l.bias:clone(), l.gradWeight:clone(), l.gradBias:clone()}
   end
   return outs, gins, params
end

-- Train a tiny character model on `text` for `steps` steps of truncated backpropagation
-- through time (clones of the cell sharing its parameters, one per time step, as
-- char-rnn does) with plain SGD; returns the mean loss of the first and of the last 20 steps.
function cells.train(kind, text, size, seqLength, steps, lr)
   torch.manualSeed(7)
   local chars, index = {}, {}
   for ch in text:gmatch('.') do
      if not index[ch] then chars[#chars + 1] = ch; index[ch] = #chars end
   end
   local vocab = #chars
   local cell = kind == 'lstm' and cells.lstm(vocab, size, 1) or cells.gru(vocab, size)
   local params, grads = cell:getParameters()
   params:uniform(-0.08, 0.08)
   local clones = {}
   for t = 1, seqLength do clones[t] = cell:clone('weight', 'bias', 'gradWeight', 'gradBias') end
   local crit = nn.ClassNLLCriterion()
   local nState = kind == 'lstm' and 2 or 1
   local function zeroState() local s = {} for i = 1, nState do s[i] = torch.zeros(1, size) end return s end
   local losses = {}
   local pos = 1
   for step = 1, steps do
      if pos + seqLength > #text then pos = 1 end
      grads:zero()
      local states, inputs, outs = {[0] = zeroState()}, {}, {}
      local loss = 0
      for t = 1, seqLength do
         local x = torch.zeros(1, vocab)
         x[1][index[text:sub(pos + t - 1, pos + t - 1)]] = 1
         inputs[t] = {x, unpack(states[t - 1])}
         outs[t] = clones[t]:forward(inputs[t])
         states[t] = {}
         for i = 1, nState do states[t][i] = outs[t][i] end
         local target = torch.LongTensor{index[text:sub(pos + t, pos + t)]}
         loss = loss + crit:forward(outs[t][nState + 1], target)
      end
      local dState = zeroState()
      for t = seqLength, 1, -1 do
         local target = torch.LongTensor{index[text:sub(pos + t, pos + t)]}
         local gradOut = {}
         for i = 1, nState do gradOut[i] = dState[i] end
         gradOut[nState + 1] = crit:backward(outs[t][nState + 1], target)
         local gin = clones[t]:backward(inputs[t], gradOut)
         dState = {}
         for i = 1, nState do dState[i] = gin[i + 1] end
      end
      grads:clamp(-5, 5)
      params:add(-lr, grads)
      losses[step] = loss / seqLength
      pos = pos + seqLength
   end
   local function mean(a, b) local s = 0 for i = a, b do s = s + losses[i] end return s / (b - a + 1) end
   return mean(1, 20), mean(steps - 19, steps), vocab
end

return cells
"""


@pytest.fixture
def cells(ng):
    return ng.execute(CELLS, "=cells")


def torch_lstm(torch, params, inputs, n_layers):
    x, states = inputs[0], inputs[1:]
    outs, k = [], 0
    below = x
    for layer in range(n_layers):
        c, h = states[2 * layer], states[2 * layer + 1]
        (Wx, bx), (Wh, bh) = params[k], params[k + 1]
        k += 2
        pre = (below @ Wx.T + bx + h @ Wh.T + bh).reshape(h.shape[0], 4, -1)
        i, f, o, g = torch.sigmoid(pre[:, 0]), torch.sigmoid(pre[:, 1]), torch.sigmoid(pre[:, 2]), torch.tanh(pre[:, 3])
        c2 = f * c + i * g
        h2 = o * torch.tanh(c2)
        outs += [c2, h2]
        below = h2
    Wd, bd = params[k]
    outs.append(torch.log_softmax(below @ Wd.T + bd, dim=1))
    return outs


def torch_gru(torch, params, inputs):
    x, h = inputs
    (Wz, bz), (Uz, cz), (Wr, br), (Ur, cr), (Wc, bc), (Uc, cc), (Wd, bd) = params
    z = torch.sigmoid(x @ Wz.T + bz + h @ Uz.T + cz)
    r = torch.sigmoid(x @ Wr.T + br + h @ Ur.T + cr)
    cand = torch.tanh(x @ Wc.T + bc + (r * h) @ Uc.T + cc)
    h2 = z * cand + (1 - z) * h
    return [h2, torch.log_softmax(h2 @ Wd.T + bd, dim=1)]


@pytest.mark.parametrize("kind, n_layers", [("lstm", 1), ("lstm", 2), ("gru", 1)])
def test_char_rnn_cells_match_pytorch(ng, cells, rng, kind, n_layers):
    torch = pytest.importorskip("torch")
    vocab, size, batch = 7, 5, 3
    ng.execute("torch.manualSeed(%d)" % int(rng.integers(1 << 30)))
    if kind == "lstm":
        net, linears = ng.call(cells.lstm, vocab, size, n_layers)
        shapes = [(batch, vocab)] + [(batch, size)] * (2 * n_layers)
        out_shapes = [(batch, size)] * (2 * n_layers) + [(batch, vocab)]
    else:
        net, linears = ng.call(cells.gru, vocab, size)
        shapes = [(batch, vocab), (batch, size)]
        out_shapes = [(batch, size), (batch, vocab)]
    inputs = [rng.standard_normal(s) for s in shapes]
    grad_outs = [rng.standard_normal(s) for s in out_shapes]
    outs, gins, params = ng.call(cells.step, net, linears, ng.table(*[ng.from_numpy(a) for a in inputs]),
                                 ng.table(*[ng.from_numpy(a) for a in grad_outs]))
    outs, gins, params = np_list(ng, outs), np_list(ng, gins), np_list(ng, params)

    tp = [(torch.tensor(p[0], requires_grad=True), torch.tensor(p[1], requires_grad=True)) for p in params]
    tin = [torch.tensor(a, requires_grad=True) for a in inputs]
    touts = torch_lstm(torch, tp, tin, n_layers) if kind == "lstm" else torch_gru(torch, tp, tin)
    torch.autograd.backward(touts, [torch.tensor(g) for g in grad_outs])
    assert len(outs) == len(touts) and len(gins) == len(tin)
    for ours, theirs in zip(outs, touts):
        assert rel_err(ours, theirs.detach().numpy()) < TOL
    for ours, theirs in zip(gins, tin):
        assert rel_err(ours, theirs.grad.numpy()) < TOL
    for p, (W, b) in zip(params, tp):
        assert rel_err(p[2], W.grad.numpy()) < TOL and rel_err(p[3], b.grad.numpy()) < TOL


TEXT = ("the quick brown fox jumps over the lazy dog. " * 6
        + "a cat sat on the mat and the dog sat on the log. " * 6)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_char_rnn_trains(cells, ng, kind):
    first, last, vocab = ng.call(cells.train, kind, TEXT, 32, 10, 300, 0.2)
    assert vocab > 20
    # starts near uniform guessing (log vocab) and learns the text's regularities
    assert abs(first - np.log(vocab)) < 0.5
    assert last < 0.6 * first, (first, last)
