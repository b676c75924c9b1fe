"""`#` on nn objects. Torch7's LuaJIT honoured `__len` on tables (LUAJIT_ENABLE_LUA52COMPAT): `#seq` counted an
nn.Sequential's modules and `#criterion` gave a weighted criterion's weights' size (a LongStorage, `#tensor`). The
`__len` methods are checked directly on any LuaJIT build; `#` itself against them where the build honours `__len`
(a lupa built from source with the flag, README), and as 0 where it does not (PyPI's wheels)."""
import pytest


def honours_len(rt):
    return rt.eval("#setmetatable({}, {__len = function() return 3 end}) == 3")


@pytest.mark.parametrize("n", [0, 1, 4])
def test_sequential_len_counts_its_modules(rt, n):
    rt.execute("require 'nn'; seq = nn.Sequential(); for i = 1, %d do seq:add(nn.Linear(2, 2)) end" % n)
    assert rt.eval("seq:__len()") == n == rt.eval("seq:size()")
    assert rt.eval("#seq") == (n if honours_len(rt) else 0)
    # the loop neural-style runs over a loaded network
    assert rt.eval("(function() local k = 0; for i = 1, #seq do k = k + 1 end; return k end)()") == \
        (n if honours_len(rt) else 0)


@pytest.mark.parametrize("cls", ["ClassNLLCriterion", "BCECriterion", "SpatialClassNLLCriterion"])
def test_weighted_criterions_len_is_their_weights_size(rt, cls):
    rt.execute("require 'nn'; plain = nn.%s(); weighted = nn.%s(torch.ones(7))" % (cls, cls))
    assert rt.eval("plain:__len()") == 0
    assert rt.eval("torch.type(weighted:__len()) == 'torch.LongStorage' and weighted:__len()[1]") == 7
    if honours_len(rt):
        assert rt.eval("#plain") == 0 and rt.eval("(#weighted)[1]") == 7
    else:
        assert rt.eval("#plain") == 0 and rt.eval("#weighted") == 0
