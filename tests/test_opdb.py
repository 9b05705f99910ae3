"""Generic checks driven by the op database (reference/opdb.py), one parametrized test per check:

(a) forward and random-cotangent gradient vs torch (``reference.testing.check_parity``: float64 to
    1e-10, float32 against torch float32's own error w.r.t. a float64 oracle); forward only, exact,
    for integer/bool dtypes and ops without a derivative; the graph is made of the Functions the
    entry names;
(b) gradient of gradient vs torch (``check_double_parity``);
(c) the in-place variant vs torch: on a computed tensor, through an integer-indexed and a
    transposed view (the base must see the write, and the gradient flow through it), and the
    version error when backward needs the value it overwrote;
(d) movement ops write through as torch's do: an in-place edit of the result reaches the base and
    an edit of the base reaches the result exactly when torch's does, and ``view`` says whether
    torch returns a view;
(e) ``tinygrad_tx.compile``: three calls with changing values replay the one recording and equal
    eager bit for bit (forward, backward and the leaves' .grad);
(f) ``tinygrad-tx explain`` knows every op;
(g) every public op (top-level function or Tensor method) has an entry or a reasoned exclusion.
"""
from __future__ import annotations

import gc
import importlib
import inspect
import warnings

import numpy as np
import pytest
import torch

from reference import opdb
import tinygrad_tx as tt
from tinygrad_tx.compile import CompileWarning
from reference.testing import F32_FLOOR, check_double_parity, check_parity, rel_err, to_numpy, to_torch

explain = importlib.import_module("tinygrad_tx.viz.explain")

FLOATS = ("float64", "float32")
F32_SAMPLES = 3      # float32 samples per op (each runs a float64 oracle besides): the first non-empty ones
GRADGRAD_SAMPLES = 3
INPLACE_SAMPLES = 2


def params(check, ops, with_dtypes=None):
    out = []
    for op in ops:
        marks = [pytest.mark.xfail(strict=True, reason=op.xfail[check])] if check in op.xfail else []
        for dt in (with_dtypes(op) if with_dtypes else [None]):
            ident = op.name if dt is None else f"{op.name}-{dt}"
            args = (op,) if dt is None else (op, dt)
            out.append(pytest.param(*args, id=ident, marks=marks))
    return out


def lay(args, layouts):
    return [opdb.apply_layout(a, lo) if lo else a for a, lo in zip(args, layouts + ("",) * len(args))]


def ours_of(op, s):
    return lambda *ts: op.run(tt, *lay(ts, s.layouts), **s.kwargs)


def theirs_of(op, s):
    return lambda *ts: op.run(torch, *lay(ts, s.layouts), **s.kwargs)


def nonempty(samples):
    return [s for s in samples if not s.empty]


def _float_idx(s):
    return [i for i, a in enumerate(s.args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]


def _grad_idx(op, s):
    idx = _float_idx(s)
    return tuple(i for i in idx if op.grad_args is None or i in op.grad_args)


def _tensors(lib, args, dt=None, requires_grad=()):
    out = []
    for i, a in enumerate(args):
        if not isinstance(a, np.ndarray):
            out.append(a)
        elif lib is tt:
            out.append(tt.from_numpy(a.copy()).requires_grad_(i in requires_grad))
        else:
            out.append(to_torch(a, requires_grad=i in requires_grad))
    return out


def _np(t):
    return t.detach().numpy() if isinstance(t, tt.Tensor) else to_numpy(t)


def compare_forward(name, ours, ref, exact):
    ours, ref = _np(ours), _np(ref)
    assert ours.shape == ref.shape, f"{name}: shape {ours.shape} vs torch {ref.shape}"
    assert ours.dtype == ref.dtype, f"{name}: dtype {ours.dtype} vs torch {ref.dtype}"
    if exact or ref.dtype.kind in "biu":
        assert np.array_equal(ours, ref, equal_nan=ref.dtype.kind == "f"), f"{name}: values differ from torch's"
    else:
        tol = 1e-10 if ref.dtype == np.float64 else 8 * float(np.finfo(np.float32).eps)
        assert rel_err(ours, ref) <= tol, f"{name}: relative error {rel_err(ours, ref):.3g}"


# ------------------------------------------------------------------------- (a) forward and gradient

def _a_dtypes(op):
    return list(op.dtypes) + list(op.exact_dtypes)


@pytest.mark.parametrize("op, dtype", params("grad", opdb.OPS, _a_dtypes))
def test_forward_and_gradient(op, dtype):
    samples = op.samples(dtype, 0)
    if dtype == "float32":
        samples = nonempty(samples)[:F32_SAMPLES]
    assert samples
    for k, s in enumerate(samples):
        name = f"{op.name}[{s.label}]"
        if dtype in FLOATS and op.grad:
            grad = _grad_idx(op, s)
            allow = grad if (op.zero_grad or s.empty or op.zero_region) else ()
            check_parity(ours_of(op, s), theirs_of(op, s), *s.args, dtype=dtype, name=name, grad=grad,
                         seed=k, allow_zero_grad=allow)
        else:
            ours = ours_of(op, s)(*_tensors(tt, s.args))
            ref = theirs_of(op, s)(*_tensors(torch, s.args))
            compare_forward(f"{name} {dtype}", ours, ref, exact=dtype not in FLOATS)


def graph_functions(result) -> set:
    """The engine Function classes in the graph of ``result`` (a tensor or a tuple of them)."""
    roots = list(result) if isinstance(result, (tuple, list)) else [result]
    seen, names, stack = set(), set(), [getattr(r, "grad_fn", None) for r in roots]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if getattr(node, "fn", None) is not None:
            names.add(node.fn.__name__)
        stack.extend(n for n, _ in getattr(node, "next_functions", ()))
    return names


@pytest.mark.parametrize("op", params("functions", opdb.OPS))
def test_graph_is_made_of_the_named_functions(op):
    """The entry's ``functions`` are what the op's graph holds (the plain layout's first sample)."""
    dt = (op.dtypes or op.exact_dtypes)[0]
    s = next(s for s in op.samples(dt, 0) if not any(s.layouts))
    ts = _tensors(tt, s.args, requires_grad=set(_grad_idx(op, s)) if op.grad and dt in FLOATS else ())
    assert graph_functions(op.call(tt, *ts, **s.kwargs)) == set(op.functions)


# ------------------------------------------------------------------------- (b) second derivative

@pytest.mark.parametrize("op", params("gradgrad", [o for o in opdb.OPS if o.grad and o.gradgrad and o.dtypes]))
def test_gradient_of_gradient(op):
    samples = [s for s in nonempty(op.samples("float64", 0)) if not op.zero_region or np.size(s.args[0]) > 4]
    for k, s in enumerate(samples[:GRADGRAD_SAMPLES]):
        check_double_parity(ours_of(op, s), theirs_of(op, s), *s.args, dtype="float64",
                            name=f"{op.name}[{s.label}]", grad=_grad_idx(op, s), seed=k)
    if "float32" in op.dtypes:      # float32: the first sample, against torch float32's own error
        s = samples[0]
        check_double_parity(ours_of(op, s), theirs_of(op, s), *s.args, dtype="float32",
                            name=f"{op.name}[{s.label}]", grad=_grad_idx(op, s))


# ------------------------------------------------------------------------- (c) in-place variants

def _same_outcome(name, run, grads=True, seed=0):
    """Run ``run(lib)`` -> (tensor, leaves) on both engines: both raise (ours a RuntimeError naming
    the in-place edit when torch's does), or the values (and the leaves' gradients for a random
    cotangent) agree in float64."""
    g = None
    try:
        ref, ref_leaves = run(torch)
        g = np.random.default_rng(seed).standard_normal(tuple(ref.shape))
        if grads and ref.requires_grad:
            ref.backward(to_torch(g, dtype=ref.dtype))
    except RuntimeError as e:
        with pytest.raises((RuntimeError, ValueError)) as ours_err:
            out, leaves = run(tt)
            if grads and out.requires_grad:
                g = np.random.default_rng(seed).standard_normal(out.shape) if g is None else g
                out.backward(tt.from_numpy(g.astype(out.dtype)))
        if "modified by an inplace operation" in str(e):
            assert "modified by an inplace operation" in str(ours_err.value), (name, str(ours_err.value))
        return "raised"
    out, leaves = run(tt)
    compare_forward(name, out, ref, exact=False)
    if grads and ref.requires_grad:
        out.backward(tt.from_numpy(g.astype(np.dtype(out.dtype))))
        for i, (a, b) in enumerate(zip(leaves, ref_leaves)):
            assert a.grad is not None, f"{name}: no gradient reached leaf {i}"
            compare_forward(f"{name} grad {i}", a.grad, b.grad, exact=False)
    return "equal"


def _inplace_dtype(op):
    """float64, or for an integer-only op (bitwise_and_, gcd_) its first exact dtype."""
    return "float64" if "float64" in op.dtypes or not op.exact_dtypes else op.exact_dtypes[0]


def _inplace_samples(op):
    """Samples (:func:`_inplace_dtype`) where the in-place variant is legal in torch: the result has
    the first operand's shape and dtype; a view op's in-place form (``t_``, ``unsqueeze_``) gives
    the tensor itself the result's shape, so any shape does."""
    out = []
    for s in nonempty(op.samples(_inplace_dtype(op), 0)):
        ts = _tensors(torch, s.args)
        try:
            r = op.run(torch, *lay(ts, s.layouts), **s.kwargs)
        except RuntimeError:
            continue
        x = lay(ts, s.layouts)[0]
        if (op.view or tuple(r.shape) == tuple(x.shape)) and (r.dtype == x.dtype or not op.grad):
            out.append(s)
    return out[:INPLACE_SAMPLES]


INPLACE_OPS = [o for o in opdb.OPS if o.inplace]


def _inplace(op, t, lib, rest, kwargs):
    if lib is torch and not op.inplace_torch_grad:     # torch: "derivative for inplace acosh not implemented"
        return t.copy_(op.run(torch, t.clone(), *rest, **kwargs))
    if callable(op.inplace):
        return op.inplace(lib, t, *rest, **kwargs)
    return getattr(t, op.inplace)(*rest, **kwargs)


def _inplace_run(op, s, how):
    def run(lib):
        ts = _tensors(lib, s.args, requires_grad=set(_float_idx(s)))
        args = lay(ts, s.layouts)
        leaves = [t for i, t in enumerate(ts) if i in _float_idx(s)]
        x, rest = args[0], args[1:]
        a, b = (1.5, 2.0) if x.is_floating_point() else (2, 3)   # an integer op's operand stays integer
        if how == "computed":
            y = x * a
            _inplace(op, y, lib, rest, s.kwargs)
            return y, leaves
        if how == "int-view":                    # an integer-indexed element of a stack is a view
            base = lib.stack([x * a, x * b])
            _inplace(op, base[1], lib, rest, s.kwargs)
            return base, leaves
        if how == "transposed-view":
            base = (x * a).transpose(0, -1).contiguous()
            _inplace(op, base.transpose(0, -1), lib, rest, s.kwargs)
            return base, leaves
        if how == "saved":                       # exp saves its result: backward must refuse
            y = x.exp()
            _inplace(op, y, lib, rest, s.kwargs)
            return y * 1.0, leaves
        raise ValueError(how)
    return run


@pytest.mark.parametrize("how", ["computed", "int-view", "transposed-view", "saved"])
@pytest.mark.parametrize("op", params("inplace", INPLACE_OPS))
def test_inplace_variant(op, how):
    samples = _inplace_samples(op)
    if how == "transposed-view":
        samples = [s for s in samples if np.ndim(s.args[0]) >= 2 and not any(s.layouts)]
    if how == "saved" and _inplace_dtype(op) not in FLOATS:
        pytest.skip(f"{op.name} takes integers only: exp's saved float result is no operand of it")
    if not samples:
        pytest.skip(f"no sample of {op.name} where the in-place form is legal for {how}")
    outcomes = [_same_outcome(f"{op.name}[{s.label}] {how}", _inplace_run(op, s, how), grads=op.grad, seed=k)
                for k, s in enumerate(samples)]
    if how == "saved" and op.grad:
        assert set(outcomes) == {"raised"}, f"{op.name}: torch did not refuse the overwritten saved value"
    else:
        assert "equal" in outcomes


# ------------------------------------------------------------------------- (d) views write through

MOVEMENT = [o for o in opdb.OPS if o.family in ("movement", "multi")]


def _view_run(op, s, how):
    def run(lib):
        ts = _tensors(lib, s.args, requires_grad={0})
        args = lay(ts, s.layouts)
        base = args[0] * 1.0
        r = op.call(lib, base, *args[1:], **s.kwargs)
        v = r[0] if isinstance(r, (tuple, list)) else r
        if how == "edit-result":
            v.mul_(2.0)
            return base, ts[:1]
        base.add_(1.0)
        return v * 1.0, ts[:1]
    return run


@pytest.mark.parametrize("how", ["edit-result", "edit-base"])
@pytest.mark.parametrize("op", params("view", MOVEMENT))
def test_view_writes_through_as_torch(op, how):
    for k, s in enumerate(nonempty(op.samples("float64", 0))[:2]):
        _same_outcome(f"{op.name}[{s.label}] {how}", _view_run(op, s, how), seed=k)


@pytest.mark.parametrize("op", params("view", MOVEMENT))
def test_view_flag_says_what_torch_returns(op):
    s = next(s for s in op.samples("float64", 0) if not any(s.layouts) and not s.empty)
    x = to_torch(s.args[0])
    r = op.call(torch, x, *_tensors(torch, s.args[1:]), **s.kwargs)
    r = r[0] if isinstance(r, (tuple, list)) else r
    assert r._is_view() == op.view, f"{op.name}: torch {'returns' if r._is_view() else 'does not return'} a view"


# ------------------------------------------------------------------------- (e) compile

COMPILED = opdb.OPS


@pytest.fixture(scope="module")
def objects_before_frozen():
    """The recorder's escape check (``gc.get_referrers``) scans every object of the process: with
    torch, hypothesis and the suite loaded, 70 ms a call, 80 % of this file's time. Objects made
    before these tests are moved to the permanent generation, which that scan skips, until this
    file's tests end; what each compiled step makes is still scanned."""
    gc.freeze()
    yield
    gc.unfreeze()


@pytest.mark.usefixtures("objects_before_frozen")
@pytest.mark.parametrize("op", params("compile", COMPILED))
def test_compile_replays_equal_eager(op):
    dt = (op.dtypes or op.exact_dtypes)[0]
    k = next(i for i, s in enumerate(op.samples(dt, 0)) if not s.empty)
    differentiate = op.grad and dt in FLOATS
    first = op.samples(dt, 0)[k]
    layouts, kwargs, grad_idx = first.layouts, first.kwargs, _grad_idx(op, first)

    def step(*ts_and_g):
        *ts, g = ts_and_g
        out = op.run(tt, *lay(ts, layouts), **kwargs)
        if differentiate:
            (out * g).sum().backward()
            return (out.detach(),) + tuple(ts[i].grad for i in grad_idx)
        return (out,)

    compiled = tt.compile(step)
    refusals = []        # a refused function is retried once, then warns once and stays eager
    for call in range(3):
        s = op.samples(dt, 100 * call)[k]
        req = set(_grad_idx(op, s)) if differentiate else set()
        shape = op.run(tt, *lay(_tensors(tt, s.args), s.layouts), **s.kwargs).shape
        g = np.random.default_rng(call).standard_normal(shape)
        eager = step(*_tensors(tt, s.args, requires_grad=req), tt.from_numpy(g.astype(dt if dt in FLOATS else "float64")))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            replay = compiled(*_tensors(tt, s.args, requires_grad=req),
                              tt.from_numpy(g.astype(dt if dt in FLOATS else "float64")))
        refusals += [str(w.message) for w in caught if issubclass(w.category, CompileWarning)]
        assert len(replay) == len(eager)
        for j, (a, b) in enumerate(zip(replay, eager)):
            assert np.array_equal(_np(a), _np(b), equal_nan=True), f"{op.name}: call {call} result {j} differs"
    recorded = sum(map(len, compiled.programs.values()))
    assert len(refusals) == (op.compile is False), f"{op.name}: {refusals or 'no refusal'} (database: {op.compile})"
    if op.compile is True:
        assert compiled.eager_reason is None and recorded == 1, f"{op.name}: recorded {recorded} times"
    elif op.compile is False:
        assert compiled.eager_reason is not None and recorded == 0


# ------------------------------------------------------------------------- (f) explain

@pytest.mark.parametrize("op", params("explain", opdb.OPS))
def test_explain_knows_the_op(op):
    """``explain <name>`` finds the op: the page of a Function its graph holds, or, for an op without
    a derivative, the page that says so."""
    kind, found = explain.find_op(op.name)
    if kind == "nondifferentiable":
        assert not op.grad, f"explain says {op.name} is not differentiable"
        return
    classes = {found.function.__name__} if kind == "fused" else {c.__name__ for c in found}
    if not op.functions:      # contiguous of a contiguous tensor, argsort: no graph on our samples
        return
    assert classes & set(op.functions), f"explain {op.name} shows {sorted(classes)}, its graph holds {op.functions}"


# ------------------------------------------------------------------------- out=

OUT_OPS = [o for o in opdb.OPS if getattr(o.call, "top_level", None) and hasattr(tt, o.call.top_level)]


@pytest.mark.parametrize("op", params("out", OUT_OPS))
def test_out_argument_is_refused_not_ignored(op):
    """No op takes ``out=`` yet (``Op.out``): passing one raises a TypeError naming it, where torch
    writes into it; a silently ignored ``out=`` would leave the caller's tensor stale."""
    assert not op.out
    dt = (op.dtypes or op.exact_dtypes)[0]
    s = next(s for s in op.samples(dt, 0) if not any(s.layouts))
    ts = _tensors(tt, s.args)
    target = tt.zeros(1)
    with pytest.raises(TypeError, match="out"):
        op.call(tt, *ts, out=target, **s.kwargs)


# ------------------------------------------------------------------------- (g) coverage

def public_ops() -> set:
    """The public callables of tinygrad_tx's top level and the public methods of Tensor."""
    names = set()
    for n in dir(tt):
        obj = getattr(tt, n)
        if not n.startswith("_") and callable(obj) and not inspect.isclass(obj) and not inspect.ismodule(obj):
            names.add(n)
    for n, obj in inspect.getmembers(tt.Tensor):
        if not n.startswith("_") and callable(obj) and not isinstance(inspect.getattr_static(tt.Tensor, n), property):
            names.add(n)
    return names


def test_every_public_op_has_an_entry_or_a_reasoned_exclusion():
    public = public_ops()
    covered = opdb.covered_names()
    excluded = set(opdb.EXCLUDED)
    missing = sorted(public - covered - excluded)
    assert not missing, f"{len(missing)} public ops have no entry in reference/opdb.py and no exclusion: {missing}"
    both = sorted(covered & excluded)
    assert not both, f"excluded yet covered (drop the exclusion): {both}"
    stale = sorted(n for n in excluded if n not in public)
    assert not stale, f"excluded names that are not public ops: {stale}"
    assert all(len(why) > 10 for why in opdb.EXCLUDED.values())
