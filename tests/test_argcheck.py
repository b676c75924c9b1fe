"""argcheck: Torch7's argument checker, as Torch7 programs (imagenet-multiGPU.torch's dataset.lua) use it.

Each test builds a checker with `argcheck{...}` in a fresh Runtime and calls it the ways programs do:
arguments in order (optional ones left out or passed as nil), one table of named fields, a method's self
followed by such a table; defaults of the three kinds; types by Lua name, torch class (subclasses fit) and
pattern; the options pack, call, quiet, nonamed, noordered, overload/force; and the usage text a wrong call
raises, which must name the caller's line.
"""
import pytest

from pytorch_bridge import LuaError

PRELUDE = "local argcheck = require 'argcheck'\n"


def run(rt, code):
    return rt.execute(PRELUDE + code, "=case")


def lua_error(rt, code):
    with pytest.raises(LuaError) as e:
        run(rt, code)
    return e.value.lua_message


def test_ordered_arguments_are_returned_in_rule_order(rt):
    assert run(rt, """
        local check = argcheck{{name='n', type='number'}, {name='s', type='string'}}
        local n, s = check(4, 'four')
        return n .. '/' .. s
    """) == "4/four"


def test_a_wrong_type_raises_the_usage_text_at_the_callers_line(rt):
    message = lua_error(rt, """
        local check = argcheck{
           help = 'Adds a suffix to a count.',
           {name='count', type='number', help='how many'},
           {name='suffix', type='string', default='x', help='what to append'},
        }
        check('seven')
    """)
    assert message.startswith("case:8: "), message   # the line that made the bad call
    assert "Adds a suffix to a count." in message
    assert "count" in message and "number" in message and "how many" in message
    assert "[suffix]" in message and "default: x" in message     # optional ones are bracketed
    assert "invalid arguments (string)" in message               # what the call passed


def test_help_can_place_the_argument_list_and_signature(rt):
    message = lua_error(rt, """
        local check = argcheck{help = 'resize(@ARGP)\\n@ARGT\\nthat is all',
                               {name='img', type='table'}, {name='size', type='number', default=4}}
        check(1)
    """)
    assert "resize(img, [size])\n  img    : table\n  [size] : number  -- default: 4\nthat is all" in message
    assert "arguments (in this order" not in message      # placed by @ARGT, not appended


def test_missing_and_extra_arguments_are_refused(rt):
    assert "invalid arguments ()" in lua_error(rt, "argcheck{{name='n', type='number'}}()")
    assert "invalid arguments (number, number)" in lua_error(rt, "argcheck{{name='n', type='number'}}(1, 2)")
    # a rule without a type takes anything but nil
    assert run(rt, "return argcheck{{name='v'}}(true)") is True
    assert "invalid arguments (nil)" in lua_error(rt, "argcheck{{name='v'}}(nil)")


def test_default_defaulta_defaultf_and_opt_fill_missing_arguments(rt):
    assert run(rt, """
        local calls = 0
        local check = argcheck{
           {name='a', type='number'},
           {name='b', type='number', defaulta='a'},
           {name='c', type='number', defaultf=function() calls = calls + 1 return 100 + calls end},
           {name='d', type='boolean', default=false},
           {name='e', type='string', opt=true},
        }
        local out = {}
        local function show(...)
           local a, b, c, d, e = check(...)
           out[#out + 1] = table.concat({a, b, c, tostring(d), tostring(e)}, ',')
        end
        show(1)                     -- everything defaulted, defaultf run once per call
        show(1)
        show(1, 2, 3, true, 'z')
        show(1, 'z')                -- optional ones in between may be left out
        show(1, nil, nil, true)     -- or passed as nil
        return table.concat(out, ' ')
    """) == "1,1,101,false,nil 1,1,102,false,nil 1,2,3,true,z 1,1,103,false,z 1,1,104,true,nil"


def test_a_table_of_named_fields_is_the_other_call_form(rt):
    assert run(rt, """
        local check = argcheck{{name='x', type='number', default=0}, {name='msg', type='string'}}
        local x, msg = check{msg='hi'}
        local y, msg2 = check{x=3, msg='yo'}
        return table.concat({x, msg, y, msg2}, ',')
    """) == "0,hi,3,yo"
    # a field no rule names, or a required one missing, is refused
    assert "invalid arguments" in lua_error(rt, """
        argcheck{{name='x', type='number'}}{x=1, y=2}""")
    assert "invalid arguments" in lua_error(rt, """
        argcheck{{name='x', type='number'}, {name='y', type='number'}}{x=1}""")


def test_nonamed_and_noordered_restrict_the_call_forms(rt):
    assert "invalid arguments" in lua_error(rt, """
        argcheck{nonamed=true, {name='msg', type='string'}}{msg='a'}""")
    assert "invalid arguments" in lua_error(rt, """
        argcheck{noordered=true, {name='msg', type='string'}}('a')""")
    assert run(rt, "return argcheck{noordered=true, {name='msg', type='string'}}{msg='a'}") == "a"
    # with nonamed, a table is just an ordered argument
    assert run(rt, "return argcheck{nonamed=true, {name='t', type='table'}}{5}[1]") == 5


def test_pack_returns_one_table_and_call_receives_the_values(rt):
    # the constructor form of imagenet-multiGPU.torch's dataLoader{...}
    assert run(rt, """
        local check = argcheck{pack=true, {name='paths', type='table'}, {name='size', type='table'},
                               {name='split', type='number', default=90},
                               {name='hook', type='function', opt=true}}
        local args = check{paths={'/a'}, size={3, 8}}
        local ordered = check({'/b'}, {1}, 10)
        return table.concat({args.paths[1], args.size[2], args.split, tostring(args.hook),
                             ordered.paths[1], ordered.split}, ',')
    """) == "/a,8,90,nil,/b,10"
    # one table that also fits the ordered form is taken as the first argument, as in Torch7
    assert run(rt, """
        local t = {paths={'/a'}}
        return argcheck{{name='paths', type='table'}, {name='split', type='number', default=90}}(t) == t
    """) is True
    assert run(rt, """
        local add = argcheck{{name='x', type='number'}, {name='y', type='number', default=5},
                             call=function(x, y) return x + y, 'done' end}
        local sum, word = add(1)
        return sum .. word
    """) == "6done"


def test_check_functions_refine_the_type(rt):
    code = """
        local check = argcheck{{name='p', type='number', check=function(v) return v >= 0 and v <= 1 end}}
        return check(%s)
    """
    assert run(rt, code % "0.5") == 0.5
    assert "invalid arguments (number)" in lua_error(rt, code % "2")


def test_torch_types_subclasses_and_patterns(rt):
    assert run(rt, """
        require 'nn'
        local check = argcheck{{name='t', type='torch.*Tensor'}, {name='m', type='nn.Module'},
                               {name='f', type='torch.FloatTensor', opt=true}}
        local t, m, f = check(torch.LongTensor(2), nn.Linear(2, 3), torch.FloatTensor(1))
        return torch.type(t) .. ' ' .. torch.type(m) .. ' ' .. torch.type(f)
    """) == "torch.LongTensor nn.Linear torch.FloatTensor"
    assert "invalid arguments (torch.LongTensor)" in lua_error(rt, """
        argcheck{{name='f', type='torch.FloatTensor'}}(torch.LongTensor())""")
    env = """
        local env = require 'argcheck.env'
        local t = torch.LongTensor()
        return table.concat({tostring(env.istype(t, '.*Long')), tostring(env.istype(t, 'torch.Long')),
                             tostring(env.istype(t, 'torch.IntTensor')), env.type(t), env.type('s')}, ',')
    """
    # a plain name must be the whole class name; a pattern may match part of it
    assert run(rt, env) == "true,false,false,torch.LongTensor,string"


def test_methods_take_self_then_ordered_or_named_arguments(rt):
    assert run(rt, """
        local Box = torch.class('ArgcheckTestBox')
        function Box:__init() self.size = 10 end
        Box.grow = argcheck{
           {name='self', type='ArgcheckTestBox'},
           {name='by', type='number', default=1},
           {name='note', type='string', default='-'},
           call = function(self, by, note) return (self.size + by) .. note end,
        }
        local b = ArgcheckTestBox()
        return table.concat({b:grow(), b:grow(5), b:grow{by=2, note='!'}, b:grow{}, b:grow('n')}, ' ')
    """) == "11- 15- 12! 11- 11n"
    assert "invalid arguments" in lua_error(rt, """
        local grow = argcheck{{name='self', type='torch.FloatTensor'}, {name='by', type='number'}}
        grow({}, 1)""")


def test_quiet_returns_a_status_instead_of_raising(rt):
    assert run(rt, """
        local check = argcheck{quiet=true, {name='x', type='number'}}
        local ok, x = check(3)
        local bad, usage = check('a')
        return tostring(ok) .. x .. tostring(bad) .. ' ' .. tostring(usage:find('x', 1, true) ~= nil)
    """) == "true3false true"


def test_overload_dispatches_on_the_arguments_and_refuses_ambiguity(rt):
    assert run(rt, """
        local f = argcheck{{name='n', type='number'}, call=function(n) return 'number ' .. n end}
        f = argcheck{{name='s', type='string'}, overload=f, call=function(s) return 'string ' .. s end}
        return f(1) .. ', ' .. f('a')
    """) == "number 1, string a"
    # both sets accept (number): refused unless force, and with force the newest set answers
    message = lua_error(rt, """
        local f = argcheck{{name='n', type='number'}, call=function() return 'old' end}
        argcheck{{name='n', type='number'}, {name='m', type='string', default='d'}, overload=f,
                 call=function() return 'new' end}""")
    assert "force=true" in message
    assert run(rt, """
        local f = argcheck{{name='n', type='number'}, call=function() return 'old' end}
        f = argcheck{{name='n', type='number'}, {name='m', type='string', default='d'}, overload=f, force=true,
                     call=function(n, m) return 'new ' .. m end}
        return f(1)
    """) == "new d"
    # the usage of a call no set accepts lists every set
    message = lua_error(rt, """
        local f = argcheck{{name='n', type='number'}, call=print}
        f = argcheck{{name='s', type='string'}, overload=f, call=print}
        f(true)""")
    assert "n" in message and "s" in message and "\nor\n" in message


@pytest.mark.parametrize("code, fragment", [
    ("argcheck{{type='number'}}", "rule 1 must be a table with a string name"),
    ("argcheck{{name='a'}, {name='a'}}", 'two rules are named "a"'),
    ("argcheck{{name='a', defaulta='zz'}}", 'defaulta="zz", which names no rule'),
    ("argcheck{{name='a'}, overload=print}", "overload must be a function made by argcheck"),
    ("argcheck('a')", "expects one table of rules"),
])
def test_bad_rules_are_one_clear_line(rt, code, fragment):
    message = lua_error(rt, code)
    assert fragment in message and "\n" not in message
    assert message.startswith("case:2: "), message


def test_a_checker_survives_torch_serialization(rt):
    assert run(rt, """
        local f = argcheck{{name='word', type='string'}, {name='times', type='number', default=2},
                           call=function(word, times) return string.rep(word, times) end}
        local file = torch.MemoryFile()
        file:writeObject(f)
        file:seek(1)
        local g = file:readObject()
        return g('ab') .. ' ' .. g{word='c', times=3}
    """) == "abab ccc"
