"""optim: every Torch7 optimizer, Logger and ConfusionMatrix against independent oracles.

Where PyTorch has the same method (torch.optim: SGD, SGD with nesterov for nag, Adagrad, Adadelta, Adam,
Adamax, RMSprop, Rprop, ASGD, LBFGS with and without strong_wolfe), optim.X takes the same steps as PyTorch
configured to match, in float64, on a random convex quadratic and on Rosenbrock's function, for several
parameter shapes. Where Torch7's formula differs from PyTorch's (Adam's epsilon, learningRateDecay of nag and
adam, rmsprop's initialMean) the oracle is a NumPy transcription of Torch7's documented update written here.
cg, cmaes, de, FistaLS, lswolfe, polyinterp and checkgrad are checked against what they are documented to do
(convergence on convex problems, the Wolfe conditions, NumPy's polynomial roots). Logger's file is compared
with the text Torch7's Logger writes for the same calls; its SVG plot must parse as XML. ConfusionMatrix's
counts and rates are compared with NumPy.
"""
import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest

torch = pytest.importorskip("torch")

REL = 1e-9          # float64 trajectories: same operations, different summation orders


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(1e-300, np.max(np.abs(b))))


# ----------------------------------------------------------------------------- objectives

def random_quadratic(rng, n, cond=30.0):
    """f(x) = 1/2 x'Ax - b'x with A symmetric positive definite of the given condition number."""
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    a = q @ np.diag(np.geomspace(1.0, cond, n)) @ q.T
    return (a + a.T) / 2, rng.standard_normal(n)


def quad_f(a, b, x):
    x = x.ravel()
    return 0.5 * x @ a @ x - b @ x


def quad_g(a, b, x):
    return (a @ x.ravel() - b).reshape(x.shape)


def rosen_f(x):
    x = x.ravel()
    return float(np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))


def rosen_g(x):
    shape, x = x.shape, x.ravel()
    g = np.zeros_like(x)
    g[:-1] = -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    return g.reshape(shape)


LUA_OBJECTIVES = r"""
local O = {}
-- 1/2 x'Ax - b'x on x of any shape; a fresh gradient tensor per call (optimizers may change it in place)
function O.quadratic(A, b)
   return function(x)
      local v = x:contiguous():view(-1)
      local Av = torch.mv(A, v)
      return 0.5 * v:dot(Av) - b:dot(v), (Av - b):viewAs(x)
   end
end
function O.rosenbrock()
   return function(x)
      local v = x:contiguous():view(-1)
      local n = v:size(1)
      local f, g = 0, torch.zeros(n)
      for i = 1, n - 1 do
         local a, c = v[i], v[i + 1]
         f = f + 100 * (c - a * a) ^ 2 + (1 - a) ^ 2
         g[i] = g[i] - 400 * a * (c - a * a) - 2 * (1 - a)
         g[i + 1] = g[i + 1] + 200 * (c - a * a)
      end
      return f, g:viewAs(x)
   end
end
-- run optim[method] `steps` times; the x after each call (flattened), the first f of each call, and state
function O.run(method, opfunc, x, config, state, steps)
   local traj = torch.DoubleTensor(steps, x:nElement())
   local fs = torch.DoubleTensor(steps)
   for i = 1, steps do
      local xn, f = optim[method](opfunc, x, config, state)
      assert(xn == x, 'optim.' .. method .. ' must return x itself')
      traj[i]:copy(x:contiguous():view(-1))
      fs[i] = f[1]
   end
   return traj, fs
end
return O
"""


@pytest.fixture
def lua(rt):
    rt.require("optim")
    rt.execute("torch.setdefaulttensortype('torch.DoubleTensor')")
    return rt.execute(LUA_OBJECTIVES)


def lua_table(rt, d):
    t = rt.eval("{}")
    for k, v in d.items():
        t[k] = v
    return t


def run_ours(rt, lua, method, objective, x0, config, steps, state=None):
    """(trajectory [steps x n], f values, config table, state table) of optim.<method>."""
    if objective == "rosenbrock":
        op = lua.rosenbrock()
    else:
        a, b = objective
        op = lua.quadratic(rt.from_numpy(a.copy()), rt.from_numpy(b.copy()))
    x = rt.from_numpy(x0.copy())
    cfg = lua_table(rt, config)
    st = lua_table(rt, state) if state is not None else None
    traj, fs = lua.run(method, op, x, cfg, st, steps)
    return rt.to_numpy(traj).copy(), rt.to_numpy(fs).copy(), cfg, st if st is not None else cfg


def run_torch(opt_cls, kwargs, objective, x0, steps, after_step=None):
    """PyTorch's optimizer on the same objective (gradients given, not autograd): trajectory, f values."""
    if objective == "rosenbrock":
        f_fn, g_fn = rosen_f, rosen_g
    else:
        a, b = objective
        f_fn, g_fn = (lambda x: quad_f(a, b, x)), (lambda x: quad_g(a, b, x))
    p = torch.tensor(x0.copy(), dtype=torch.float64, requires_grad=True)
    # some optimizers (ASGD) keep scalars as tensors of the default dtype: make that float64 too
    saved_dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        opt = opt_cls([p], **kwargs)
        return _torch_steps(opt, p, f_fn, g_fn, steps, after_step)
    finally:
        torch.set_default_dtype(saved_dtype)


def _torch_steps(opt, p, f_fn, g_fn, steps, after_step):
    traj, fs = [], []

    def closure():
        x = p.detach().numpy()
        p.grad = torch.from_numpy(np.ascontiguousarray(g_fn(x)))
        return torch.tensor(f_fn(x), dtype=torch.float64)

    for _ in range(steps):
        fs.append(float(opt.step(closure)))
        traj.append(p.detach().numpy().ravel().copy())
        if after_step:
            after_step(opt, p, traj)
    return np.array(traj), np.array(fs)


SHAPES = [(1,), (7,), (3, 4)]


def start_point(rng, shape, objective):
    if objective == "rosenbrock":
        return rng.uniform(-1.2, 1.2, shape)
    return rng.standard_normal(shape)


def problem(rng, shape, kind):
    if kind == "rosenbrock":
        return "rosenbrock"
    return random_quadratic(rng, int(np.prod(shape)))


# ----------------------------------------------------------------------------- vs torch.optim

# (optim method, its config, the torch.optim class and its matching arguments, steps)
MATCHING = {
    "sgd_nesterov": ("sgd", dict(learningRate=0.01, momentum=0.9, dampening=0, nesterov=True, weightDecay=0.01),
                     torch.optim.SGD, dict(lr=0.01, momentum=0.9, dampening=0, nesterov=True, weight_decay=0.01), 40),
    "adagrad": ("adagrad", dict(learningRate=0.1, learningRateDecay=0.01, weightDecay=0.02),
                torch.optim.Adagrad, dict(lr=0.1, lr_decay=0.01, weight_decay=0.02, eps=1e-10), 40),
    "adadelta": ("adadelta", dict(rho=0.95, eps=1e-6, weightDecay=0.01),
                 torch.optim.Adadelta, dict(lr=1.0, rho=0.95, eps=1e-6, weight_decay=0.01), 40),
    # epsilon sits before the bias correction in Torch7 and after it in PyTorch: equal when it is 0
    "adam": ("adam", dict(learningRate=0.01, beta1=0.8, beta2=0.99, epsilon=0, weightDecay=0.01),
             torch.optim.Adam, dict(lr=0.01, betas=(0.8, 0.99), eps=0, weight_decay=0.01), 40),
    "adamax": ("adamax", dict(learningRate=0.01, beta1=0.85, beta2=0.995, epsilon=1e-8, weightDecay=0.01),
               torch.optim.Adamax, dict(lr=0.01, betas=(0.85, 0.995), eps=1e-8, weight_decay=0.01), 40),
    "rmsprop": ("rmsprop", dict(learningRate=0.005, alpha=0.9, epsilon=1e-6, weightDecay=0.01),
                torch.optim.RMSprop, dict(lr=0.005, alpha=0.9, eps=1e-6, weight_decay=0.01), 40),
    "rprop": ("rprop", dict(stepsize=0.05, etaplus=1.3, etaminus=0.4, stepsizemax=2, stepsizemin=1e-5),
              torch.optim.Rprop, dict(lr=0.05, etas=(0.4, 1.3), step_sizes=(1e-5, 2)), 40),
    # t0 = 10: the averaging starts within the run
    "asgd": ("asgd", dict(eta0=0.01, **{"lambda": 0.001}, alpha=0.75, t0=10),
             torch.optim.ASGD, dict(lr=0.01, lambd=0.001, alpha=0.75, t0=10), 40),
}


# Rosenbrock's function needs two or more variables
PROBLEMS = [(shape, kind) for kind in ("quadratic", "rosenbrock") for shape in SHAPES
            if not (kind == "rosenbrock" and shape == (1,))]


@pytest.mark.parametrize("shape,kind", PROBLEMS, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else v)
@pytest.mark.parametrize("name", sorted(MATCHING))
def test_steps_match_torch_optim(rt, lua, rng, name, shape, kind):
    method, config, cls, kwargs, steps = MATCHING[name]
    if kind == "rosenbrock":
        # its curvature reaches ~1.6e3 on the start box: smaller steps for the methods with a learning rate
        config = {k: v * 0.03 if k in ("learningRate", "eta0") else v for k, v in config.items()}
        kwargs = {k: v * 0.03 if k == "lr" and name not in ("adadelta", "rprop") else v for k, v in kwargs.items()}
    obj = problem(rng, shape, kind)
    x0 = start_point(rng, shape, kind)
    ours, fs, _, state = run_ours(rt, lua, method, obj, x0, config, steps)
    extra = []
    ref, ref_fs = run_torch(cls, kwargs, obj, x0, steps,
                            after_step=(lambda o, p, _: extra.append(o.state[p]["ax"].numpy().ravel().copy()))
                            if name == "asgd" else None)
    assert np.isfinite(ref).all()
    assert rel_err(ours, ref) <= REL, name
    assert rel_err(fs, ref_fs) <= REL
    if name == "asgd":
        # the averaged iterate too
        assert rel_err(rt.to_numpy(state.ax).ravel(), extra[-1]) <= REL


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_nag_is_pytorch_nesterov_at_the_look_ahead_point(rt, lua, rng, shape):
    """Torch7's nag keeps x without the look-ahead: it moves x by momentum * v, evaluates there, then steps
    x and v by -lr * g. With v = -lr * buf that is PyTorch's SGD(nesterov=True, dampening=0) on the
    look-ahead point y = x + momentum * v: the point PyTorch holds after step k equals Torch7's x + mom * v
    after call k, and the f Torch7 returns for call k is f at the point PyTorch held before step k."""
    obj = random_quadratic(rng, int(np.prod(shape)))
    x0 = rng.standard_normal(shape)
    mom, lr, wd = 0.85, 0.02, 0.01
    cfg = rt.eval("{learningRate = %r, momentum = %r, weightDecay = %r}" % (lr, mom, wd))
    op = lua.quadratic(rt.from_numpy(obj[0].copy()), rt.from_numpy(obj[1].copy()))
    x = rt.from_numpy(x0.copy())
    step = rt.eval("function(op, x, cfg) local _, f = optim.nag(op, x, cfg); "
                   "return (x + cfg.momentum * cfg.dfdx):view(-1), f[1] end")
    ref, ref_fs = run_torch(torch.optim.SGD, dict(lr=lr, momentum=mom, nesterov=True, weight_decay=wd),
                            obj, x0, 30)
    for k in range(30):
        y, f = step(op, x, cfg)
        assert rel_err(rt.to_numpy(y), ref[k]) <= REL, k
        assert abs(f - ref_fs[k]) <= REL * max(1.0, abs(ref_fs[k]))


def nag_numpy(x, g_fn, lr, lrd, mom, wd, lrs, steps):
    """Torch7's nag as documented, transcribed: look ahead, gradient, decay, velocity, step."""
    v = None
    out = []
    for n in range(steps):
        if v is not None:
            x = x + mom * v
        g = g_fn(x) + wd * x
        clr = lr / (1 + n * lrd)
        step = lrs * g if lrs is not None else g
        v = np.zeros_like(x) if v is None else mom * v
        x = x - clr * step
        v = v - clr * step
        out.append(x.ravel().copy())
    return np.array(out)


def test_nag_learning_rate_decay_and_per_parameter_rates_vs_numpy(rt, lua, rng):
    a, b = random_quadratic(rng, 6)
    x0 = rng.standard_normal(6)
    lrs = rng.uniform(0.5, 1.5, 6)
    cfg = dict(learningRate=0.03, learningRateDecay=0.05, momentum=0.7, weightDecay=0.02,
               learningRates=rt.from_numpy(lrs.copy()))
    ours, _, _, state = run_ours(rt, lua, "nag", (a, b), x0, cfg, 25)
    ref = nag_numpy(x0, lambda x: quad_g(a, b, x), 0.03, 0.05, 0.7, 0.02, lrs, 25)
    assert rel_err(ours, ref) <= REL
    assert state.evalCounter == 25


def adam_numpy(x, g_fn, lr, lrd, b1, b2, eps, wd, steps):
    """Torch7's adam as documented: epsilon added to sqrt(v), the bias corrections folded into the step."""
    m = np.zeros_like(x)
    v = np.zeros_like(x)
    out = []
    for t in range(steps):
        g = g_fn(x) + wd * x
        clr = lr / (1 + t * lrd)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        step = clr * math.sqrt(1 - b2 ** (t + 1)) / (1 - b1 ** (t + 1))
        x = x - step * m / (np.sqrt(v) + eps)
        out.append(x.ravel().copy())
    return np.array(out)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_adam_epsilon_and_decay_vs_numpy(rt, lua, rng, shape):
    a, b = random_quadratic(rng, int(np.prod(shape)))
    x0 = rng.standard_normal(shape)
    cfg = dict(learningRate=0.05, learningRateDecay=0.02, beta1=0.9, beta2=0.999, epsilon=1e-3, weightDecay=0.01)
    ours, _, _, state = run_ours(rt, lua, "adam", (a, b), x0, cfg, 30)
    ref = adam_numpy(x0, lambda x: quad_g(a, b, x), 0.05, 0.02, 0.9, 0.999, 1e-3, 0.01, 30)
    assert rel_err(ours, ref) <= REL
    # the state fields Torch7 programs save: t, m, v, denom
    assert state.t == 30
    for k in ("m", "v", "denom"):
        assert tuple(rt.to_numpy(state[k]).shape) == shape


def test_rmsprop_initial_mean_vs_numpy(rt, lua, rng):
    a, b = random_quadratic(rng, 5)
    x0 = rng.standard_normal(5)
    ours, _, _, _ = run_ours(rt, lua, "rmsprop", (a, b), x0,
                             dict(learningRate=0.01, alpha=0.95, epsilon=1e-8, initialMean=0.5), 30)
    x, m, ref = x0.copy(), np.full(5, 0.5), []
    for _ in range(30):
        g = quad_g(a, b, x)
        m = 0.95 * m + 0.05 * g * g
        x = x - 0.01 * g / (np.sqrt(m) + 1e-8)
        ref.append(x.copy())
    assert rel_err(ours, np.array(ref)) <= REL


def test_rprop_niter_evaluates_several_times_per_call(rt, lua, rng):
    a, b = random_quadratic(rng, 4)
    x0 = rng.standard_normal(4)
    cfg = rt.eval("{niter = 5, stepsize = 0.05}")
    op = lua.quadratic(rt.from_numpy(a.copy()), rt.from_numpy(b.copy()))
    x = rt.from_numpy(x0.copy())
    _, fs = rt.eval("function(op, x, cfg) return optim.rprop(op, x, cfg) end")(op, x, cfg)
    ref, ref_fs = run_torch(torch.optim.Rprop, dict(lr=0.05), (a, b), x0, 5)
    assert len(fs) == 5
    assert rel_err([fs[i + 1] for i in range(5)], ref_fs) <= REL
    assert rel_err(rt.to_numpy(x), ref[-1]) <= REL
    assert rt.eval("torch.type")(cfg.stepsize) == "torch.DoubleTensor"   # Torch7 keeps the per-element sizes there


def test_float_tensors_keep_their_type(rt, lua, rng):
    a, b = random_quadratic(rng, 5)
    op = lua.quadratic(rt.from_numpy(a.astype(np.float32)), rt.from_numpy(b.astype(np.float32)))
    check = rt.eval("""function(op)
        for _, m in ipairs{'sgd', 'asgd', 'nag', 'adagrad', 'adadelta', 'adam', 'adamax', 'rmsprop', 'rprop'} do
           local x = torch.FloatTensor(5):fill(0.5)
           local state = {}
           for _ = 1, 3 do optim[m](op, x, {}, state) end
           assert(torch.type(x) == 'torch.FloatTensor', m)
           for k, v in pairs(state) do
              if torch.isTensor(v) and v:nElement() == 5 and torch.type(v) ~= 'torch.ByteTensor' then
                 assert(torch.type(v) == 'torch.FloatTensor', m .. '.' .. k .. ' is ' .. torch.type(v))
              end
           end
        end
    end""")
    check(op)


# ----------------------------------------------------------------------------- saved state resumes

STATE_FIELDS = {
    "sgd": ({"learningRate": 0.01, "momentum": 0.9}, ["evalCounter", "dfdx"]),
    "asgd": ({"eta0": 0.01, "t0": 2}, ["eta_t", "mu_t", "t", "ax", "tmp"]),
    "nag": ({"learningRate": 0.01}, ["evalCounter", "dfdx"]),
    "adagrad": ({"learningRate": 0.1}, ["evalCounter", "paramVariance", "paramStd"]),
    "adadelta": ({}, ["evalCounter", "paramVariance", "paramStd", "delta", "accDelta"]),
    "adam": ({"learningRate": 0.01}, ["t", "m", "v", "denom"]),
    "adamax": ({}, ["t", "m", "u", "max"]),
    "rmsprop": ({}, ["m", "tmp"]),
    "rprop": ({}, ["delta", "stepsize", "sign", "psign", "nsign", "zsign", "dminmax"]),
    "lbfgs": ({"maxIter": 2}, ["funcEval", "nIter", "d", "t", "old_dirs", "old_stps", "Hdiag", "g_old",
                               "f_old", "dir_bufs", "stp_bufs"]),
}


@pytest.mark.parametrize("method", sorted(STATE_FIELDS))
def test_state_fields_and_resume_after_save_and_load(rt, lua, rng, method, tmp_path):
    """The state table has Torch7's field names, and a state written with torch.save and read back
    continues exactly like the uninterrupted run (programs checkpoint optimState this way)."""
    config, fields = STATE_FIELDS[method]
    a, b = random_quadratic(rng, 6)
    x0 = rng.standard_normal(6)
    whole, _, _, _ = run_ours(rt, lua, method, (a, b), x0, config, 8, state={})
    first, _, _, state = run_ours(rt, lua, method, (a, b), x0, config, 4, state={})
    for f in fields:
        assert state[f] is not None, "state.%s missing after optim.%s" % (f, method)
    path = str(tmp_path / "state.t7")
    rt.eval("torch.save")(path, state)
    loaded = rt.eval("torch.load")(path)
    rest, _, _, _ = run_ours(rt, lua, method, (a, b), first[-1].copy(), config, 4, state=dict(loaded.items()))
    assert rel_err(rest, whole[4:]) <= REL


# ----------------------------------------------------------------------------- L-BFGS

def torch7_bounded_cubic(original):
    """PyTorch's strong-Wolfe cubic step, except where Torch7's lswolfe differs: when extrapolating (bounds
    given) Torch7's polyinterp takes, of the two bounds, the two points and the cubic's real critical
    points inside the bounds, the one where the cubic is lowest; PyTorch takes the cubic's minimiser
    clipped to the bounds, or their middle if there is none. Without bounds the two agree."""
    def interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
        if bounds is None:
            return original(x1, f1, g1, x2, f2, g2)
        lo, hi = (float(v) for v in bounds)
        c = poly_fit_numpy([[float(x1), float(f1), float(g1)], [float(x2), float(f2), float(g2)]])
        c[np.abs(c) <= 1e-12] = 0
        cands = [lo, hi, float(x1), float(x2)]
        if np.any(c[:-1] != 0):
            cands += [r.real for r in np.roots(np.polyder(c)) if r.imag == 0]
        inside = [v for v in cands if lo <= v <= hi]
        return min(inside, key=lambda v: np.polyval(c, v)) if inside else (lo + hi) / 2
    return interpolate


@pytest.mark.parametrize("line_search", [False, True], ids=["fixed-step", "strong-wolfe"])
@pytest.mark.parametrize("kind", ["quadratic", "rosenbrock"])
def test_lbfgs_matches_torch_lbfgs(rt, lua, rng, line_search, kind, monkeypatch):
    """Calls of optim.lbfgs (state kept across calls) against LBFGS.step with the same budgets. Torch7's
    stopping tests use sums of |.| where PyTorch uses maxima: switched off on both sides (tolerance -1 and
    0), so both run every iteration; the evaluation budget is given (PyTorch's default is
    max_iter * 5 // 4 rounded down, Torch7's 1.25 * maxIter is not). optim.lswolfe's maxIter is set to
    PyTorch's 25 line-search steps, and PyTorch's extrapolation step is Torch7's (torch7_bounded_cubic)."""
    import torch.optim.lbfgs as torch_lbfgs
    monkeypatch.setattr(torch_lbfgs, "_cubic_interpolate", torch7_bounded_cubic(torch_lbfgs._cubic_interpolate))
    n = 8 if kind == "quadratic" else 4
    obj = random_quadratic(rng, n, cond=50.0) if kind == "quadratic" else "rosenbrock"
    x0 = start_point(rng, (n,), kind)
    calls, per_call = 4, 3
    lr = 1.0 if line_search else 0.1
    cfg = dict(maxIter=per_call, maxEval=100, learningRate=lr, tolFun=-1, tolX=0, nCorrection=5)
    if line_search:
        cfg["lineSearch"] = rt.eval("optim.lswolfe")
        cfg["lineSearchOptions"] = rt.eval("{maxIter = 25}")
    ours, _, _, state = run_ours(rt, lua, "lbfgs", obj, x0, cfg, calls)
    ref, _ = run_torch(torch.optim.LBFGS,
                       dict(lr=lr, max_iter=per_call, max_eval=100, tolerance_grad=-1, tolerance_change=0, history_size=5,
                            line_search_fn="strong_wolfe" if line_search else None), obj, x0, calls)
    assert rel_err(ours, ref) <= 1e-8
    assert state.nIter == calls * per_call
    if kind == "quadratic" and line_search:
        # and it gets somewhere: closer to A^-1 b than the start
        opt = np.linalg.solve(*obj)
        assert np.linalg.norm(ours[-1] - opt) < 0.1 * np.linalg.norm(x0 - opt)


def test_lbfgs_batch_run_converges_and_counts_evaluations(rt, lua, rng):
    a, b = random_quadratic(rng, 10, cond=100.0)
    op = lua.quadratic(rt.from_numpy(a.copy()), rt.from_numpy(b.copy()))
    x = rt.from_numpy(np.zeros(10))
    counted = rt.eval("""function(op, x)
        local n = 0
        local function counting(v) n = n + 1; return op(v) end
        local _, fs, evals = optim.lbfgs(counting, x, {maxIter = 200, lineSearch = optim.lswolfe,
                                                       tolFun = 1e-10, tolX = 1e-16})
        return fs, evals, n
    end""")
    fs, evals, n = counted(op, x)
    assert evals == n
    opt = np.linalg.solve(a, b)
    assert rel_err(rt.to_numpy(x), opt) <= 1e-7
    values = [fs[i + 1] for i in range(len(fs))]
    assert all(v2 <= v1 + 1e-12 for v1, v2 in zip(values, values[1:]))     # a line search never goes up
    assert abs(values[-1] - quad_f(a, b, opt)) <= 1e-8 * abs(quad_f(a, b, opt))


def test_lbfgs_stops_at_once_on_an_optimal_start(rt, lua, rng):
    a, b = random_quadratic(rng, 4)
    op = lua.quadratic(rt.from_numpy(a.copy()), rt.from_numpy(b.copy()))
    x = rt.from_numpy(np.linalg.solve(a, b))
    fs, evals = rt.eval("function(op, x) local _, fs, n = optim.lbfgs(op, x); return fs, n end")(op, x)
    assert len(fs) == 1 and evals == 1


# ----------------------------------------------------------------------------- line search and polyinterp

def test_lswolfe_returns_a_strong_wolfe_step(rt, lua, rng):
    for _ in range(5):
        n = 5
        x0 = rng.uniform(-1.5, 1.5, n)
        g0 = rosen_g(x0)
        d = -g0 / np.linalg.norm(g0)
        t0 = float(rng.choice([1e-3, 0.1, 1.0, 3.0]))
        res = rt.eval("""function(O, x, t, d)
            local op = O.rosenbrock()
            local f, g = op(x)
            local x0 = x:clone()
            local fn, gn, xn, tn, evals = optim.lswolfe(op, x, t, d, f, g:clone(), g:dot(d))
            return fn, gn, xn, tn, evals, (xn - x0 - d * tn):abs():max()
        end""")(lua, rt.from_numpy(x0.copy()), t0, rt.from_numpy(d.copy()))
        f, g, _, t, evals, moved_err = res
        f0, gtd = rosen_f(x0), g0 @ d
        assert moved_err <= 1e-12                       # x was moved to x0 + t d
        assert abs(f - rosen_f(x0 + t * d)) <= 1e-9 * max(1, abs(f))
        assert rel_err(rt.to_numpy(g), rosen_g(x0 + t * d)) <= 1e-9
        assert f <= f0 + 1e-4 * t * gtd                 # sufficient decrease
        assert abs(rosen_g(x0 + t * d) @ d) <= -0.9 * gtd + 1e-12   # curvature
        assert 1 <= evals <= 21


@pytest.mark.parametrize("kind", ["quadratic", "rosenbrock"])
def test_lswolfe_takes_pytorch_strong_wolfe_steps(rt, lua, rng, kind, monkeypatch):
    """From steps far too small (extrapolation), about right and far too large (zoom), optim.lswolfe picks the
    step PyTorch's strong-Wolfe search picks, with the same number of evaluations (PyTorch's extrapolation
    replaced by Torch7's rule, torch7_bounded_cubic; maxIter = PyTorch's 25)."""
    import torch.optim.lbfgs as torch_lbfgs
    monkeypatch.setattr(torch_lbfgs, "_cubic_interpolate", torch7_bounded_cubic(torch_lbfgs._cubic_interpolate))
    n = 6
    if kind == "quadratic":
        a, b = random_quadratic(rng, n, cond=20.0)
        f_fn, g_fn = (lambda x: quad_f(a, b, x)), (lambda x: quad_g(a, b, x))
        op = lua.quadratic(rt.from_numpy(a.copy()), rt.from_numpy(b.copy()))
    else:
        f_fn, g_fn, op = rosen_f, rosen_g, lua.rosenbrock()
    search = rt.eval("""function(op, x, t, d)
        local f, g = op(x)
        local fn, gn, xn, tn, evals = optim.lswolfe(op, x, t, d, f, g:clone(), g:dot(d), {maxIter = 25})
        return fn, tn, evals
    end""")
    for t0 in (1e-5, 1e-2, 1.0, 30.0):
        x0 = rng.uniform(-1, 1, n)
        g0 = g_fn(x0)
        d = -g0
        f, t, evals = search(op, rt.from_numpy(x0.copy()), t0, rt.from_numpy(d.copy()))

        def obj(x, step, direction):
            xt = x + float(step) * direction.numpy()
            return f_fn(xt), torch.from_numpy(g_fn(xt))

        ref_f, _, ref_t, ref_evals = torch_lbfgs._strong_wolfe(
            obj, x0, t0, torch.from_numpy(d), f_fn(x0), torch.from_numpy(g0), float(g0 @ d), max_ls=25)
        assert abs(t - float(ref_t)) <= 1e-9 * abs(float(ref_t)), t0
        assert abs(f - float(ref_f)) <= 1e-9 * max(1.0, abs(float(ref_f)))
        assert evals == ref_evals


def poly_fit_numpy(points):
    """The polynomial of degree 2N-1 matching N values and N derivatives, highest degree first."""
    n = len(points)
    order = 2 * n - 1
    rows, rhs = [], []
    for x, f, _ in points:
        rows.append([x ** j for j in range(order, -1, -1)])
        rhs.append(f)
    for x, _, g in points:
        rows.append([(j * x ** (j - 1) if j > 0 else 0.0) for j in range(order, -1, -1)])
        rhs.append(g)
    return np.linalg.lstsq(np.array(rows), np.array(rhs), rcond=None)[0]


def test_polyinterp_against_numpy_polynomials(rt, rng):
    rt.require("optim")
    polyinterp = rt.eval("optim.polyinterp")
    interp = lambda pts, *bounds: polyinterp(rt.from_numpy(np.array(pts, np.float64)), *bounds)
    for _ in range(20):
        # two points, no bounds: the minimiser of the Hermite cubic, clipped to the two points
        x1, x2 = -1 + rng.uniform(-0.3, 0.3), 1 + rng.uniform(-0.3, 0.3)
        pts = [[x1, rng.normal(), rng.normal()], [x2, rng.normal(), rng.normal()]]
        c = poly_fit_numpy(pts)
        t = interp([pts[1], pts[0]])                   # the order of the rows does not matter
        crit = [r.real for r in np.roots(np.polyder(c)) if abs(r.imag) < 1e-12 and x1 <= r.real <= x2]
        minima = [r for r in crit if np.polyval(np.polyder(c, 2), r) > 0]
        if minima:
            assert abs(t - minima[0]) <= 1e-8
        else:
            assert x1 <= t <= x2

        # three points with bounds: the lowest of the bounds, the points and the real critical points
        pts = [[x + rng.uniform(-0.3, 0.3), rng.normal(), rng.normal()] for x in (-1, 0, 1)]
        lo, hi = pts[0][0] - 0.5, pts[2][0] + 0.5
        c = poly_fit_numpy(pts)
        cands = [lo, hi] + [p[0] for p in pts] + [r.real for r in np.roots(np.polyder(c))
                                                   if abs(r.imag) < 1e-9 and lo <= r.real <= hi]
        best = min(cands, key=lambda v: np.polyval(c, v))
        t, fmin = interp(pts, lo, hi)
        scale = max(1, np.abs(c).max())
        assert abs(np.polyval(c, t) - np.polyval(c, best)) <= 1e-9 * scale
        assert abs(fmin - np.polyval(c, best)) <= 1e-9 * scale


# ----------------------------------------------------------------------------- cg, cmaes, de, fista

def test_cg_solves_a_convex_quadratic(rt, lua, rng):
    a, b = random_quadratic(rng, 12, cond=100.0)
    op = lua.quadratic(rt.from_numpy(a.copy()), rt.from_numpy(b.copy()))
    x = rt.from_numpy(np.zeros(12))
    state = rt.eval("{maxIter = 40, maxEval = 400}")
    fs, evals = rt.eval("function(op, x, s) local _, fs, n = optim.cg(op, x, s); return fs, n end")(op, x, state)
    opt = np.linalg.solve(a, b)
    assert rel_err(rt.to_numpy(x), opt) <= 1e-6
    values = [fs[i + 1] for i in range(len(fs))]
    assert values[0] == 0.0 and all(v2 <= v1 + 1e-12 * abs(v1) for v1, v2 in zip(values, values[1:]))
    assert values[-1] < values[0]
    assert evals <= 400
    for k in ("df0", "df1", "df2", "df3", "x0", "s"):
        assert rt.to_numpy(state[k]).shape == (12,)


def test_cg_rosenbrock_within_its_budget(rt, lua):
    x = rt.from_numpy(np.zeros(2))
    fs, evals = rt.eval("function(O, x) local _, fs, n = optim.cg(O.rosenbrock(), x, {maxIter = 100}); "
                        "return fs, n end")(lua, x)
    assert evals <= 125
    assert np.allclose(rt.to_numpy(x), [1, 1], atol=1e-4)
    assert fs[len(fs)] < 1e-8


def test_cmaes_converges_and_reports(rt, lua, rng):
    a, b = random_quadratic(rng, 5, cond=10.0)
    op = lua.quadratic(rt.from_numpy(a.copy()), rt.from_numpy(b.copy()))
    fmin = quad_f(a, b, np.linalg.solve(a, b))
    res = rt.eval("""function(op)
        torch.manualSeed(3)
        local x = torch.zeros(5)
        local best, fs, evals = optim.cmaes(op, x, {sigma = 0.5, maxEval = 4000, verb_disp = 0})
        torch.manualSeed(3)
        local again = optim.cmaes(op, torch.zeros(5), {sigma = 0.5, maxEval = 4000, verb_disp = 0})
        return best, fs, evals, x:abs():max(), (best - again):abs():max()
    end""")(op)
    best, fs, evals, x_moved, diff = res
    assert x_moved == 0                                  # x itself is left alone
    assert diff == 0                                     # same seed, same run
    assert fs[1] == 0.0                                  # f at the start
    assert fs[len(fs)] - fmin < 1e-9
    assert rel_err(rt.to_numpy(best), np.linalg.solve(a, b)) < 1e-3
    popsize = 4 + int(3 * math.log(5))
    assert evals % popsize == 0 and evals <= 4000 + popsize
    assert len(fs) == evals // popsize + 2               # start, each generation's best, the best of all


def test_de_converges_and_is_reproducible(rt, lua):
    res = rt.eval("""function(O)
        local sphere = function(v) return v:dot(v) end
        local cfg = {popsize = 20, scaleFactor = 0.5, crossoverRate = 0.9, maxFEs = 2000}
        torch.manualSeed(1)
        local best, fx = optim.de(sphere, torch.zeros(3), cfg)
        torch.manualSeed(99)
        local best2 = optim.de(sphere, torch.zeros(3), cfg)
        return best, fx, (best - best2):abs():max()
    end""")(lua)
    best, fx, diff = res
    fx = rt.to_numpy(fx)
    assert fx.shape == (2000,)
    assert diff == 0                                     # its own generator, seeded with 1
    assert float(np.sum(rt.to_numpy(best) ** 2)) < 1e-8
    assert fx.min() == pytest.approx(float(np.sum(rt.to_numpy(best) ** 2)))


def test_de_without_a_budget_says_what_is_missing(rt, lua):
    err = rt.eval("function() local ok, e = pcall(optim.de, function(v) return 0 end, torch.zeros(2), "
                  "{scaleFactor = 0.5, crossoverRate = 0.9}); return e end")()
    assert "config.maxFEs is required" in err


def lasso_numpy(d, x, lam, iters=20000):
    """min ||D c - x||^2 + lam |c|_1 by plain proximal gradient with the exact Lipschitz step."""
    lip = 2 * np.linalg.norm(d, 2) ** 2
    c = np.zeros(d.shape[1])
    for _ in range(iters):
        v = c - 2 * d.T @ (d @ c - x) / lip
        c = np.sign(v) * np.maximum(np.abs(v) - lam / lip, 0)
    return c


def fista_numpy(f, grad, prox, g, n, L, Lstep, maxiter, maxline, errthres, momentum):
    """Beck & Teboulle's FISTA with backtracking as optim.FistaLS documents it: the iterates start at 0; a trial
    p = prox(y - grad(y) / L) is accepted when f(p) <= f(y) + <grad(y), p - y> + L/2 |p - y|^2, else L grows
    by Lstep (after maxline + 1 failures the previous FISTA iterate is kept); y moves on with the momentum
    (t_k - 1) / t_k+1 (FISTA) or is the new iterate (ISTA); stop when F = f + g changes by <= errthres."""
    x_prev, y, tk = np.zeros(n), np.zeros(n), 1.0
    hist = []
    for it in range(maxiter):
        fy, gy = f(y), grad(y)
        nline = 0
        while True:
            p = prox(y - gy / L, L)
            xk = p
            step = p - y
            q = fy + gy @ step + L / 2 * step @ step
            nline += 1
            if f(p) <= q:
                break
            if nline > maxline:
                xk = x_prev
                break
            L *= Lstep
        if momentum:
            tnext = (1 + math.sqrt(1 + 4 * tk * tk)) / 2
            y = xk + (tk - 1) / tnext * (xk - x_prev)
            tk = tnext
            x_prev = xk.copy()
        else:
            y = xk.copy()      # (ISTA leaves the "previous iterate" at the zero start, as Torch7 does)
        hist.append(dict(F=f(y) + g(y), L=L, nline=nline))
        if (it > 0 and abs(hist[-1]["F"] - hist[-2]["F"]) <= errthres) or it + 1 >= maxiter:
            return y, hist


@pytest.mark.parametrize("fista", [True, False], ids=["fista", "ista"])
def test_fista_takes_the_documented_steps(rt, rng, fista):
    rt.require("optim")
    d = rng.standard_normal((12, 20))
    x = rng.standard_normal(12)
    lam = 0.3
    f = lambda c: float(np.sum((d @ c - x) ** 2))
    grad = lambda c: 2 * d.T @ (d @ c - x)
    prox = lambda v, L: np.sign(v) * np.maximum(np.abs(v) - lam / L, 0)
    g = lambda c: lam * float(np.abs(c).sum())
    ref, ref_hist = fista_numpy(f, grad, prox, g, 20, 0.1, 1.5, 60, 20, 1e-9, fista)
    run = rt.eval("""function(D, x, lam, fista)
        local f = function(c, mode)
           local r = torch.mv(D, c) - x
           if mode == 'dx' then return r:dot(r), torch.mv(D:t(), r) * 2 end
           return r:dot(r)
        end
        local pl = function(v, L)
           local s = lam / L
           v:apply(function(e) if e > s then return e - s elseif e < -s then return e + s else return 0 end end)
        end
        return optim.FistaLS(f, function(c) return lam * c:norm(1) end, pl, torch.zeros(D:size(2)),
                             {doFistaUpdate = fista, maxiter = 60, errthres = 1e-9})
    end""")
    sol, hist = run(rt.from_numpy(d), rt.from_numpy(x), lam, fista)
    h = [hist[i + 1] for i in range(len(hist))]
    assert len(h) == len(ref_hist)
    for ours, theirs in zip(h, ref_hist):
        assert ours["nline"] == theirs["nline"] and ours["L"] == pytest.approx(theirs["L"], rel=1e-12)
        assert ours["F"] == pytest.approx(theirs["F"], rel=1e-9)
    assert rel_err(rt.to_numpy(sol), ref) <= 1e-8


@pytest.mark.parametrize("fista", [True, False], ids=["fista", "ista"])
def test_fista_solves_a_lasso(rt, rng, fista):
    rt.require("optim")
    d = rng.standard_normal((40, 25))            # more rows than columns: strongly convex, ISTA converges fast
    code = np.zeros(25)
    code[rng.choice(25, 3, replace=False)] = rng.uniform(0.5, 1.5, 3)
    x = d @ code
    lam = 0.5
    ref = lasso_numpy(d, x, lam)
    run = rt.eval("""function(D, x, lam, fista)
        local f = function(c, mode)
           local r = torch.mv(D, c) - x
           if mode == 'dx' then return r:dot(r), torch.mv(D:t(), r) * 2 end
           return r:dot(r)
        end
        local g = function(c) return lam * c:norm(1) end
        local pl = function(v, L)
           local s = lam / L
           v:apply(function(e) if e > s then return e - s elseif e < -s then return e + s else return 0 end end)
        end
        local c0 = torch.zeros(D:size(2))
        local params = {doFistaUpdate = fista, maxiter = 3000, errthres = 1e-13}
        local sol, hist = optim.FistaLS(f, g, pl, c0, params)
        return sol, hist, c0, params.L
    end""")
    sol, hist, c0, last_l = run(rt.from_numpy(d), rt.from_numpy(x), lam, fista)
    assert rel_err(rt.to_numpy(sol), ref) <= 1e-4
    assert rel_err(rt.to_numpy(c0), rt.to_numpy(sol)) == 0      # the answer is copied into xinit
    assert last_l >= 0.1
    h = [hist[i + 1] for i in range(len(hist))]
    assert all(set(("nline", "L", "F", "Fply", "Gply", "Q")) <= set(r.keys()) for r in h)
    assert abs(h[-1]["F"] - (np.sum((d @ ref - x) ** 2) + lam * np.abs(ref).sum())) <= 1e-6
    if not fista:
        assert all(b["F"] <= a["F"] + 1e-9 for a, b in zip(h, h[1:]))    # ISTA never goes up


# ----------------------------------------------------------------------------- checkgrad

def test_checkgrad_tells_a_right_gradient_from_a_wrong_one(rt, lua, rng):
    x0 = rng.uniform(-1, 1, 6)
    res = rt.eval("""function(O, x)
        local op = O.rosenbrock()
        local good = optim.checkgrad(op, x:clone(), 1e-6)
        local bad = optim.checkgrad(function(v) local f, g = op(v); return f, g * 1.1 end, x:clone(), 1e-6)
        local _, dC, est = optim.checkgrad(op, x, 1e-6)
        return good, bad, dC, est
    end""")(lua, rt.from_numpy(x0.copy()))
    good, bad, dc, est = res
    assert good < 1e-7
    assert bad == pytest.approx(0.1 / 2.1, rel=1e-4)          # |0.1 g| / |2.1 g| = 0.0476...
    assert rel_err(rt.to_numpy(dc), rosen_g(x0)) <= 1e-12
    assert rel_err(rt.to_numpy(est), rosen_g(x0)) <= 1e-6


# ----------------------------------------------------------------------------- Logger

def torch7_logger_text(names, rows):
    """What Torch7's Logger writes after setNames(names) and add(row) for each row: every name then every
    value followed by a tab, numbers as %11.4e, one line each."""
    out = "".join(n + "\t" for n in names) + "\n"
    for row in rows:
        out += "".join(("%11.4e" % v if not isinstance(v, str) else v) + "\t" for v in row) + "\n"
    return out


def test_logger_file_matches_torch7_format(rt, tmp_path):
    rt.require("optim")
    path = tmp_path / "sub" / "dir" / "train.log"          # the folder is created
    names = ["train error", "test error", "note"]
    rows = [[1.0, 0.5, "a"], [0.123456789, -2.5e-7, "b"], [12345.678, 0.0, "c"], [-1e10, 3.0, "d"]]
    write = rt.eval("""function(path, names, rows)
        local logger = optim.Logger(path)
        logger:setNames(names)
        for i = 1, #rows do logger:add(rows[i]) end
        return logger
    end""")
    to_lua = rt.eval("function(...) return {...} end")
    logger = write(str(path), to_lua(*names), to_lua(*[to_lua(*r) for r in rows]))
    assert path.read_text() == torch7_logger_text(names, rows)
    assert logger.name == str(path)


def test_logger_keyed_adds_keep_the_header_order(rt, tmp_path):
    rt.require("optim")
    path = tmp_path / "keyed.log"
    rt.eval("""function(path)
        local logger = optim.Logger(path)
        for i = 1, 5 do logger:add{['loss'] = 1 / i, ['acc'] = 0.1 * i, ['lr'] = 0.01} end
    end""")(str(path))
    lines = path.read_text().split("\n")
    header = lines[0].split("\t")
    assert header[-1] == "" and sorted(header[:-1]) == ["acc", "loss", "lr"]
    for i, line in enumerate(lines[1:6], start=1):
        cells = line.split("\t")
        assert cells[-1] == ""
        vals = dict(zip(header[:-1], map(float, cells[:-1])))
        assert vals == {"loss": float("%11.4e" % (1 / i)), "acc": float("%11.4e" % (0.1 * i)), "lr": 0.01}
    assert lines[6:] == [""]


def test_logger_plot_writes_valid_svg(rt, tmp_path):
    rt.require("optim")
    path = tmp_path / "acc.log"
    rt.eval("""function(path)
        local logger = optim.Logger(path)
        logger:setNames{'channel <1>', 'channel & 2', 'one value'}
        for i = 1, 20 do logger:add{1 + i, 0.1 * i, 'x'} end
        logger:style{'-', {'+', '|'}, '.'}
        logger:setlogscale(true)
        logger:plot()
        logger:plot('channel & 2')
    end""")(str(path))
    svg = path.with_name("acc.log.svg")
    root = ET.parse(svg).getroot()                          # well-formed XML
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "channel & 2" in texts                             # the last plot: that column alone, in two styles
    assert "channel <1>" not in texts
    assert texts.count("channel & 2") == 2
    bars = [ln for ln in root.iter("{http://www.w3.org/2000/svg}line") if ln.get("stroke-width") == "3"]
    assert len(bars) >= 20


def test_logger_plot_all_series_and_errors(rt, tmp_path):
    rt.require("optim")
    path = tmp_path / "all.log"
    res = rt.eval("""function(path)
        local logger = optim.Logger(path)
        logger:setNames{'a', 'b'}
        for i = 1, 5 do logger:add{i, i * i} end
        logger:style{'-', '-'}
        logger:plot()
        local ok, err = pcall(logger.add, logger, {1, {}})
        local ok2, err2 = pcall(logger.plot, logger, 'nope')
        return err, err2
    end""")(str(path))
    root = ET.parse(str(path) + ".svg").getroot()
    assert len(list(root.iter("{http://www.w3.org/2000/svg}polyline"))) == 2
    assert "only numbers and strings can be logged" in res[0]
    assert "no column named nope" in res[1]


def test_logger_timestamp_and_stdout(rt, tmp_path):
    rt.require("optim")
    base = tmp_path / "stamp.log"
    name = rt.eval("function(p) local l = optim.Logger(p, true); l:add{v = 1}; l.file:close(); return l.name end")(
        str(base))
    files = [p.name for p in tmp_path.iterdir()]
    assert name == str(base)
    assert len(files) == 1 and files[0].startswith("stamp.log-") and len(files[0]) == len("stamp.log-") + 19
    assert rt.eval("function() return optim.Logger().name end")() == "stdout"


# ----------------------------------------------------------------------------- ConfusionMatrix

def test_confusion_matrix_counts_and_rates_vs_numpy(rt, rng):
    rt.require("optim")
    k, n = 5, 200
    scores = rng.standard_normal((n, k))
    targets = rng.integers(0, k + 1, n)                    # 0: a missing label, ignored
    onehot = np.zeros((n, k))
    onehot[np.arange(n), np.maximum(targets, 1) - 1] = 1
    cm = rt.eval("function(k) return optim.ConfusionMatrix(k) end")(k)
    fill = rt.eval("""function(cm, scores, targets, onehot)
        -- the first 50 one at a time (score vector + class number), then batches in every accepted form
        for i = 1, 50 do cm:add(scores[i], targets[i]) end
        cm:batchAdd(scores:narrow(1, 51, 50), targets:narrow(1, 51, 50))
        local _, cls = scores:narrow(1, 101, 50):max(2)
        cm:batchAdd(cls:double(), targets:narrow(1, 101, 50):view(50, 1))
        cm:batchAdd(scores:narrow(1, 151, 50), targets:narrow(1, 151, 50))
        cm:updateValids()
    end""")
    fill(cm, rt.from_numpy(scores), rt.from_numpy(targets.astype(np.float64)), rt.from_numpy(onehot))
    pred = scores.argmax(1)
    keep = targets > 0
    mat = np.zeros((k, k), np.int64)
    np.add.at(mat, (targets[keep] - 1, pred[keep]), 1)
    assert (rt.to_numpy(cm.mat) == mat).all()
    rows, cols, diag = mat.sum(1), mat.sum(0), np.diag(mat)
    with np.errstate(invalid="ignore", divide="ignore"):
        valids = (diag / rows).astype(np.float32)
        union = (diag / (rows + cols - diag)).astype(np.float32)
    assert np.allclose(rt.to_numpy(cm.valids), valids, equal_nan=True)
    assert np.allclose(rt.to_numpy(cm.unionvalids), union, equal_nan=True)
    assert cm.totalValid == pytest.approx(diag.sum() / mat.sum())
    assert cm.averageValid == pytest.approx(np.nanmean(valids.astype(np.float64)), rel=1e-6)
    assert cm.averageUnionValid == pytest.approx(np.nanmean(union.astype(np.float64)), rel=1e-6)

    # farFrr: FRR = 1 - recall; FAR of class i = mean over the other classes j of mat[j, i] / row j
    crf, caf, frrs, fars = rt.eval("function(cm) return cm:farFrr() end")(cm)
    frr = 1 - diag / rows
    far = np.array([np.mean([mat[j, i] / rows[j] for j in range(k) if j != i]) for i in range(k)])
    assert np.allclose(rt.to_numpy(crf), frr) and np.allclose(rt.to_numpy(frrs), frr)
    assert np.allclose(rt.to_numpy(caf), far) and np.allclose(rt.to_numpy(fars), far)

    # one-hot targets give the same counts
    cm2 = rt.eval("function(k) return optim.ConfusionMatrix(k) end")(k)
    rt.eval("function(cm, s, t) cm:batchAdd(s, t) end")(cm2, rt.from_numpy(scores[keep]), rt.from_numpy(onehot[keep]))
    assert (rt.to_numpy(cm2.mat) == mat).all()


def torch7_confusion_text(mat, classes):
    """Torch7's ConfusionMatrix __tostring__ layout, transcribed (numbers formatted as Lua's %.14g)."""
    k = mat.shape[0]
    rows, cols, diag = mat.sum(1), mat.sum(0), np.diag(mat)
    with np.errstate(invalid="ignore", divide="ignore"):
        valids = (diag / rows).astype(np.float32).astype(np.float64)
        union = (diag / (rows + cols - diag)).astype(np.float32).astype(np.float64)
    width = max(8, 1 + math.ceil(math.log10(mat.max()))) if mat.max() > 0 else 8
    out = "ConfusionMatrix:\n["
    for t in range(k):
        out += "[" if t == 0 else " ["
        out += "".join("%*d" % (width, v) for v in mat[t])
        close = "]]  " if t == k - 1 else "]   "
        out += close + "%2.3f" % (valids[t] * 100) + "% "
        out += ("\t[class: %s]\n" % classes[t]) if classes else "\n"
    lua_g = lambda v: "%.14g" % v
    ok = ~np.isnan(valids)
    avg = valids[ok].sum() / ok.sum()
    ok_u = ok & ~np.isnan(union)
    avg_u = union[ok_u].sum() / ok_u.sum()
    out += " + average row correct: " + lua_g(avg * 100) + "% \n"
    out += " + average rowUcol correct (VOC measure): " + lua_g(avg_u * 100) + "% \n"
    out += " + global correct: " + lua_g(diag.sum() / mat.sum() * 100) + "%"
    return out


@pytest.mark.parametrize("named", [True, False])
def test_confusion_matrix_text_matches_torch7_layout(rt, rng, named):
    rt.require("optim")
    k = 4
    mat = rng.integers(0, 40, (k, k))
    mat[1, 1] = 123456789                                    # a wide count widens every column
    classes = ["cat", "dog", "bird", "fish"] if named else None
    make = rt.eval("""function(k, classes, t, p)
        local cm = classes and optim.ConfusionMatrix(classes) or optim.ConfusionMatrix(k)
        cm:batchAdd(p, t)
        return tostring(cm), cm
    end""")
    targets, preds = [], []                                  # the small counts by batchAdd, the big one set
    for i in range(k):
        for j in range(k):
            if (i, j) != (1, 1):
                targets += [i + 1] * int(mat[i, j])
                preds += [j + 1] * int(mat[i, j])
    to_lua = rt.eval("function(...) return {...} end")
    _, cm = make(k, to_lua(*classes) if classes else None,
                    rt.from_numpy(np.array(targets, np.float64)), rt.from_numpy(np.array(preds, np.float64)))
    rt.eval("function(cm, v) cm.mat[2][2] = v end")(cm, 123456789)
    text = rt.eval("tostring")(cm)
    assert text == torch7_confusion_text(mat, classes)


def test_confusion_matrix_render_and_bad_input(rt):
    rt.require("optim")
    res = rt.eval("""function()
        local cm = optim.ConfusionMatrix({'a', 'b', 'c'})
        cm:add(1, 1); cm:add(1, 1); cm:add(2, 2); cm:add(3, 2); cm:add(1, 3)
        local img = cm:render('score', false, 10)
        local ok, err = pcall(cm.add, cm, 4, 1)
        cm:zero()
        return img, err, cm.mat:sum()
    end""")()
    img, err, total = res
    img = rt.to_numpy(img)
    assert img.shape == (30, 30)
    assert img[0, 0] == 1.0                  # class 'a' (accuracy 1) sorts first
    assert img[9, 0] == pytest.approx(0.1) and img[0, 9] == pytest.approx(0.1)   # grid lines
    assert "prediction 4 is not a class in 1..3" in err
    assert total == 0
