"""The PyTorch side of the testing kit: ``check_parity``, ``check_module_parity`` and the
one-decorator hypothesis property ``parity_property``. The project's own tests use exactly these.

``check_parity(ours, theirs, *inputs, dtype=...)`` runs our function and a PyTorch function on
the same inputs, draws a **random cotangent** ``g`` and compares

* outputs: shape, dtype and values;
* every input gradient: ours from ``out.backward(g)``, torch's from
  ``torch.autograd.grad(out, inputs, g)`` — never through ``.sum()``, whose gradient can be blind
  to a wrong backward (d sum(softmax) = 0);

and asserts that the reference gradient is not all zero (the test would be blind) and that the
inputs were not mutated.

Tolerances (the rule of :mod:`tinygrad_tx.testing.compare`):

* float64: relative error (max |ours − ref| / max |ref|) ≤ 1e-10.
* float32: a float64 torch run on the same (float32-rounded) inputs is the oracle; our float32
  error against it may not exceed ``F32_RATIO`` (4) times torch-float32's own error against it,
  plus a floor of 8 float32 ulps for results torch gets exactly; where the oracle itself moves by
  ``cond`` when every float input (and the cotangent) moves by up to one float32 ulp, the
  yardstick is ``max(torch's error, cond)``: an ill-conditioned result — a one-element sum of
  cancelling terms — that torch gets nearly exactly only by the luck of its summation order
  (measured only where the plain rule fails, and only a smooth response counts: see
  ``_conditioning``). Where both fail, the drawn problem's error is treated as one draw of a
  heavy-tailed variable: the medians over it and ``_NEIGHBOURS`` (8) problems two ulps away,
  ours within 4x torch's (``_neighbourhood_medians``). No hand-picked per-op tolerance.

``TINYGRAD_TX_TORCH_DEVICE=cuda|cpu`` picks torch's device (default: CUDA when available). Every
call records its worst error per (name, dtype) in ``ERROR_REPORT`` (the suite prints it).
"""
from __future__ import annotations

import inspect
import os
from collections import defaultdict

import numpy as np
import torch

import tinygrad_tx as tg
from tinygrad_tx.testing import strategies as _strategies
from tinygrad_tx.testing.compare import (F32_FLOOR, F32_RATIO, F64_RTOL, assert_close, assert_nontrivial,
                                         check_f32, rel_err)
from tinygrad_tx.testing.values import non_contiguous, values

__all__ = ["DEVICE", "ERROR_REPORT", "F32_FLOOR", "F32_RATIO", "F64_RTOL", "assert_close", "check_double_parity",
           "check_module_parity",
           "check_parity", "parity_property", "reference_precision", "rel_err", "to_numpy", "to_torch"]

DEVICE = os.environ.get("TINYGRAD_TX_TORCH_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")

# torch's float32 reference computes in true float32: on CUDA, TF32 matmuls/convolutions (cuDNN's
# default, and what matmul precision "high" allows) carry ~10 mantissa bits and would widen the
# float32 rule's yardstick (4x torch's own error) by up to 2^13. The float64 oracle stays the judge.
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")


def reference_precision() -> dict:
    """How torch's float32 reference computes matmuls now (for the test header and error report)."""
    return {"device": DEVICE, "float32_matmul_precision": torch.get_float32_matmul_precision(),
            "cuda_matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32}

# (name, dtype) -> {"ours": worst error, "torch": torch's error in the same call, "calls": n}
ERROR_REPORT: dict = defaultdict(lambda: {"ours": 0.0, "torch": None, "calls": 0})

_TORCH_DTYPES = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64,
                 np.dtype(np.int64): torch.int64, np.dtype(np.int32): torch.int32,
                 np.dtype(np.bool_): torch.bool}
_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def to_torch(a, requires_grad=False, dtype=None):
    """A torch tensor on ``DEVICE`` with ``a``'s values (a copy), optionally cast and requiring grad."""
    a = np.asarray(a)
    t = torch.tensor(np.ascontiguousarray(a).reshape(a.shape), device=DEVICE)  # ascontiguousarray makes 0-d 1-d
    if dtype is not None:
        t = t.to(dtype)
    return t.requires_grad_(requires_grad)


def to_numpy(t):
    """A NumPy copy of a torch tensor (a ZeroTensor -- torch's gradient of sgn, abs' second
    derivative -- as the zeros it stands for)."""
    if t._is_zerotensor():
        return np.zeros(tuple(t.shape), dtype=str(t.dtype).replace("torch.", ""))
    return t.detach().cpu().numpy()


def _record(name, dtype, ours, torch_err=None):
    r = ERROR_REPORT[(name, dtype)]
    r["calls"] += 1
    if ours > r["ours"]:
        r["ours"] = ours
        r["torch"] = torch_err


def _is_float(a):
    return isinstance(a, np.ndarray) and a.dtype.kind == "f"


def _float_dtype(dtype) -> np.dtype:
    """float32/float64 given as a NumPy, tinygrad_tx or torch dtype (or its name)."""
    if isinstance(dtype, torch.dtype):
        dtype = str(dtype).replace("torch.", "")
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt not in _FLOAT_DTYPES:
        raise ValueError(f"check_parity: dtype must be float32 or float64, got {dtype!r}")
    return dt


def _run_torch(torch_fn, inputs, dtype, diff_mask, g):
    ts = [to_torch(a, requires_grad=d, dtype=_TORCH_DTYPES[np.dtype(dtype)] if d else None)
          if isinstance(a, np.ndarray) else a for a, d in zip(inputs, diff_mask)]
    out = torch_fn(*ts)
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"check_parity: the torch function returned {type(out).__name__}, not a Tensor")
    diff = [t for t, d in zip(ts, diff_mask) if d]
    grads = torch.autograd.grad(out, diff, to_torch(g, dtype=out.dtype), allow_unused=True)
    grads = [np.zeros(t.shape) if gr is None else to_numpy(gr) for t, gr in zip(diff, grads)]
    return to_numpy(out), grads


_F32_EPS = float(np.finfo(np.float32).eps)


def _cotangent_rng(seed):
    """The cotangents' generator: a stream of its own, so that g is never the input itself when a
    test draws its input with ``values(shape, seed)`` and passes the same seed here (a
    normalisation layer's gradient along its own input is ~0: the check would be nearly blind)."""
    return np.random.default_rng([seed, 0x6C07])


def _moved(arrays, directions, ulps):
    """Each float array a moved to a·(1 + ulps·eps32·u), u in [-1, 1] (its ``directions`` entry);
    other values unchanged."""
    return [np.asarray(a * (1.0 + ulps * _F32_EPS * u)) if u is not None else a for a, u in zip(arrays, directions)]


_COND_DRAWS = 4   # one direction can miss the sensitive one (a 3-element LayerNorm gradient moved
                  # 8e-8 in one, 2e-6..8e-6 in five others); the worst of four rarely does


def _conditioning(oracle, arrays64, movable, run_oracle, seed):
    """How far each oracle result moves when its inputs move by up to one float32 ulp: the worst
    over ``_COND_DRAWS`` random directions. A backward-stable float32 algorithm computes the exact
    result of inputs moved about this much, so its error may be this large.

    Only a smooth response counts: the same direction at a quarter of the size must move the
    result about a quarter as far (ratio 2.5..6). A result at a discontinuity — a tie, a floor, a
    sign flip — jumps by the same amount or not at all, and measures nothing. So does a draw
    torch refuses (an input on the edge of its domain: a probability of 1 moved above 1).
    ``movable``: which arrays move — the differentiated inputs and the cotangents; a constant
    float input (a target of ±1, a mask) stays exactly as given."""
    rng = np.random.default_rng(seed + 1)
    conds = [0.0] * len(oracle)
    for _ in range(_COND_DRAWS):
        directions = [rng.uniform(-1.0, 1.0, np.shape(a)) if m and _is_float(a) else None
                      for a, m in zip(arrays64, movable)]
        try:
            full, quarter = (run_oracle(_moved(arrays64, directions, ulps)) for ulps in (1.0, 0.25))
        except (RuntimeError, ValueError):
            continue
        for k, (f, q, orc) in enumerate(zip(full, quarter, oracle)):
            m_full, m_quarter = rel_err(f, orc), rel_err(q, orc)
            if np.isfinite(m_full) and 2.5 * m_quarter <= m_full <= 6.0 * m_quarter:
                conds[k] = max(conds[k], m_full)
    return conds


_NEIGHBOURS = 8   # neighbouring problems besides the drawn one, for the third yardstick


def _neighbourhood_medians(arrays64, movable, run_f32, seed):
    """Median float32 errors, ours and torch's, over the drawn problem and ``_NEIGHBOURS``
    neighbours (every movable float input and the cotangent moved by up to two float32 ulps,
    then rounded to float32, so each neighbour is an exact float32 problem with its own float64
    oracle). ``run_f32(arrays)`` returns (ours, torch float32's, oracle) results for them.

    Why: where a result is a cancellation (two keys of equal score under a random cotangent),
    its float32 error is decided by a handful of roundings and is heavy-tailed. Over 64 such
    neighbours of one attention gradient torch's float32 error ranged from 9.0e-8 to 3.0e-6
    (median 5.8e-7): one draw of it is no yardstick, its median is. A real defect (a lost term,
    a float16 detour, a formula that amplifies one ulp by 10) moves our median, not one draw."""
    rng = np.random.default_rng([seed, 0x4E31])
    errs = []
    for k in range(_NEIGHBOURS + 1):
        arrays = arrays64 if k == 0 else [
            np.asarray((a * (1.0 + 2.0 * _F32_EPS * rng.uniform(-1.0, 1.0, np.shape(a)))).astype(np.float32),
                       np.float64) if m and _is_float(a) else a for a, m in zip(arrays64, movable)]
        ours, torch_f32, oracle = run_f32(arrays)
        errs.append([(rel_err(o, orc), rel_err(t, orc)) for o, t, orc in zip(ours, torch_f32, oracle)])
    errs = np.array(errs)                            # (problem, result, ours/torch)
    return np.median(errs[:, :, 0], axis=0), np.median(errs[:, :, 1], axis=0)


def _judge_f32(name, labels, ours, torch_f32, oracle, arrays64, movable, run_oracle, seed, run_f32=None):
    """The float32 rule for each labelled result (float64 copies of ours, torch-float32's and the
    oracle's). Only where it fails is the conditioning measured (``_conditioning``: ``run_oracle``
    maps ``arrays64``, moved, to results like ``oracle``) and used as a second yardstick; where
    that fails too and ``run_f32`` is given, the medians over neighbouring problems are the third
    (``_neighbourhood_medians``): our median error within 4x torch's median (or the
    conditioning) + the floor. Returns (worst ours, worst torch) of the drawn problem."""
    errs = [(rel_err(o, orc), rel_err(t, orc)) for o, t, orc in zip(ours, torch_f32, oracle)]
    conds = [0.0] * len(errs)
    if any(not e_o <= F32_RATIO * e_t + F32_FLOOR for e_o, e_t in errs):
        conds = _conditioning(oracle, arrays64, movable, run_oracle, seed)
    medians = None
    for k, (lab, (e_o, e_t), c) in enumerate(zip(labels, errs, conds)):
        try:
            check_f32(f"{name} {lab}", e_o, e_t, cond=c)
        except AssertionError as single:
            if run_f32 is None or not np.isfinite(e_o):
                raise
            if medians is None:
                medians = _neighbourhood_medians(arrays64, movable, run_f32, seed)
            try:
                check_f32(f"{name} {lab} (median over the drawn problem and {_NEIGHBOURS} neighbours)",
                          float(medians[0][k]), float(medians[1][k]), cond=c)
            except AssertionError as median:
                raise AssertionError(f"{single}; {median}") from None
    return max((e for e, _ in errs), default=0.0), max((e for _, e in errs), default=0.0)


def _name_of(fn):
    """A label for the error report: ``Softplus`` for ``Softplus.apply``, else the function's name."""
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, type):
        return owner.__name__
    return getattr(fn, "__name__", None) or type(fn).__name__


def _legacy_args(args, dtype):
    """The suite's older spelling ``check_parity(name, ours, theirs, [inputs], dtype)``: the
    arguments after the name, as (ours, theirs, inputs, dtype)."""
    if len(args) not in (3, 4) or not isinstance(args[2], (list, tuple)):
        raise TypeError("check_parity(name, ours, theirs, inputs[, dtype]): after a name, give the two "
                        "functions and the inputs as one list")
    if len(args) == 4:
        if dtype is not None:
            raise TypeError("check_parity: dtype given both by position and by keyword")
        dtype = args[3]
    return args[0], args[1], list(args[2]), dtype


def check_parity(ours, theirs, *inputs, dtype=None, name=None, grad=None, seed=0, allow_zero_grad=(),
                 cotangent=None):
    """Compare ``ours(*tinygrad_tx_tensors)`` with ``theirs(*torch_tensors)``: values and gradients.

    ``inputs``: NumPy arrays (float ones are cast to ``dtype``, default float64, and
    differentiated; other dtypes — indices, masks — pass through unchanged) or plain Python
    values passed as they are. ``name`` labels failures and the error report (default: the
    name of ``ours``); ``check_parity(name, ours, theirs, [inputs], dtype)`` is accepted too.
    ``grad``: indices of the inputs to differentiate (default: every float array).
    ``allow_zero_grad``: indices of inputs whose reference gradient may legitimately be 0.
    ``seed`` draws the cotangent (or pass ``cotangent``). Returns the errors measured:
    ``{"ours": worst}`` in float64, ``{"ours": ..., "torch": ...}`` (both against the float64
    oracle) in float32.
    """
    if isinstance(ours, str):
        if name is not None:
            raise TypeError("check_parity: name given both by position and by keyword")
        name, (ours, theirs, inputs, dtype) = ours, _legacy_args((theirs,) + inputs, dtype)
    for label, fn in (("ours", ours), ("theirs", theirs)):
        if not callable(fn):
            raise TypeError(f"check_parity: {label} must be callable, got {type(fn).__name__}")
    name = name or _name_of(ours)
    dtype = _float_dtype(np.float64 if dtype is None else dtype)
    inputs = [a.astype(dtype) if _is_float(a) else (a.copy(order="K") if isinstance(a, np.ndarray) else a)
              for a in inputs]
    diff_mask = [(_is_float(a) if grad is None else (i in grad)) for i, a in enumerate(inputs)]
    if not any(diff_mask):
        raise ValueError(f"{name}: check_parity needs at least one float array input to differentiate")
    originals = [a.copy() if isinstance(a, np.ndarray) else None for a in inputs]

    # from_numpy shares the arrays (private copies made above, in the caller's memory layout, so a
    # transposed view stays one): an op that writes into its input is caught below
    ours_in = [tg.from_numpy(a).requires_grad_(d) if isinstance(a, np.ndarray) else a
               for a, d in zip(inputs, diff_mask)]
    out = ours(*ours_in)
    assert isinstance(out, tg.Tensor), f"{name}: ours returned {type(out).__name__}, not a Tensor"
    g = _cotangent_rng(seed).standard_normal(out.shape).astype(out.dtype) if cotangent is None else cotangent
    out.backward(g)
    our_grads = [t.grad for t, d in zip(ours_in, diff_mask) if d]

    for a, o in zip(inputs, originals):
        if o is not None:
            assert np.array_equal(a, o, equal_nan=True), f"{name}: an input was mutated"

    ref_out, ref_grads = _run_torch(theirs, inputs, dtype, diff_mask, g)
    assert out.shape == ref_out.shape, f"{name}: output shape {tuple(out.shape)} vs torch {tuple(ref_out.shape)}"
    assert out.dtype == ref_out.dtype, f"{name}: output dtype {np.dtype(out.dtype)} vs torch {ref_out.dtype}"
    diff_positions = [i for i, d in enumerate(diff_mask) if d]
    for i, og, rg in zip(diff_positions, our_grads, ref_grads):
        assert og is not None, f"{name}: no gradient reached input {i}"
        assert og.shape == rg.shape, f"{name}: grad {i} shape {tuple(og.shape)} vs torch {tuple(rg.shape)}"
        assert og.dtype == inputs[i].dtype, f"{name}: grad {i} dtype {np.dtype(og.dtype)} vs input {inputs[i].dtype}"
        if i not in allow_zero_grad:
            assert_nontrivial(rg, f"{name}: grad of input {i}")

    labels = ["output"] + [f"grad[{i}]" for i in diff_positions]
    if dtype == np.float64:
        errs = [assert_close(ours_v, ref_v, rtol=F64_RTOL, name=f"{name} float64 {lab}", check_dtype=False)
                for lab, ours_v, ref_v in zip(labels, [out._data] + our_grads, [ref_out] + ref_grads)]
        worst = max(errs)
        _record(name, "float64", worst)
        return {"ours": worst}

    # float32: judge against torch float32's own error w.r.t. a float64 oracle
    inputs64 = [a.astype(np.float64) if _is_float(a) else a for a in inputs]
    oracle_out, oracle_grads = _run_torch(theirs, inputs64, np.float64, diff_mask, g.astype(np.float64))
    n = len(inputs64)

    def run_oracle(arrays):
        out64, grads64 = _run_torch(theirs, arrays[:n], np.float64, diff_mask, arrays[n])
        return [out64] + grads64

    def run_f32(arrays):
        x32 = [a.astype(dtype) if _is_float(a) else a for a in arrays[:n]]
        g32 = arrays[n].astype(dtype)
        ts = [tg.from_numpy(a).requires_grad_(d) if isinstance(a, np.ndarray) else a for a, d in zip(x32, diff_mask)]
        o = ours(*ts)
        o.backward(g32)
        t_out, t_grads = _run_torch(theirs, x32, dtype, diff_mask, g32)
        return ([o._data] + [t.grad for t, d in zip(ts, diff_mask) if d], [t_out] + t_grads, run_oracle(arrays))

    worst_ours, worst_torch = _judge_f32(name, labels, [out._data] + our_grads, [ref_out] + ref_grads,
                                         [oracle_out] + oracle_grads, inputs64 + [np.asarray(g, np.float64)],
                                         list(diff_mask) + [True], run_oracle, seed, run_f32=run_f32)
    _record(name, "float32", worst_ours, worst_torch)
    return {"ours": worst_ours, "torch": worst_torch}


# ------------------------------------------------------------------------------------ modules

def _build_modules(module):
    """(ours, theirs) from a pair or from a factory called with the tinygrad_tx and torch modules."""
    if isinstance(module, (tuple, list)):
        if len(module) != 2:
            raise ValueError(f"check_module_parity: give (ours, theirs) or a factory, got {len(module)} modules")
        return module
    if not callable(module):
        raise TypeError(f"check_module_parity: module must be a factory or an (ours, theirs) pair, "
                        f"got {type(module).__name__}")
    return module(tg), module(torch)


def check_module_parity(module, *inputs, dtype=None, name=None, seed=0, allow_zero_grad=(),
                        inputs_grad=True):
    """``check_parity`` of a module's forward: output, every float input's gradient and every
    parameter's gradient.

    ``module``: a factory called once with ``tinygrad_tx`` and once with ``torch`` in its place
    (PyTorch-style code such as ``lambda torch: torch.nn.Sequential(torch.nn.Linear(4, 8),
    torch.nn.GELU())`` runs on both engines), or an ``(ours, theirs)`` pair of built modules.
    Our module is cast to ``dtype`` and its weights go to torch's through the state dict
    (strict); the parameters then enter both as extra differentiable inputs (through
    ``nn.functional_call`` / ``torch.func.functional_call``), so their gradients are compared
    with the same rule. ``inputs_grad=False`` differentiates the parameters only.
    """
    ours, theirs = _build_modules(module)
    dt = _float_dtype(np.float64 if dtype is None else dtype)
    name = name or type(ours).__name__
    ours.to(dt)
    theirs.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in ours.state_dict().items()})
    names = [n for n, _ in ours.named_parameters()]
    state = ours.state_dict()
    params = [np.asarray(state[n]) for n in names]
    k = len(inputs)

    def ours_fn(*ts):
        return tg.nn.functional_call(ours, dict(zip(names, ts[k:])), tuple(ts[:k]))

    def torch_fn(*ts):
        theirs.to(device=DEVICE, dtype=_TORCH_DTYPES[np.dtype(dt)] if not ts[k:] else ts[k].dtype)
        return torch.func.functional_call(theirs, dict(zip(names, ts[k:])), tuple(ts[:k]))

    grad = [i for i, a in enumerate(inputs) if inputs_grad and _is_float(np.asarray(a))] + \
        list(range(k, k + len(params)))
    return check_parity(ours_fn, torch_fn, *inputs, *params, dtype=dt, name=name, grad=tuple(grad), seed=seed,
                        allow_zero_grad=allow_zero_grad)


# ------------------------------------------------------------------------------------ property

def _is_shape(x):
    return isinstance(x, tuple) and all(isinstance(s, (int, np.integer)) for s in x)


def parity_property(ours, theirs, *, shapes, dtypes=(np.float64, np.float32), domain="real", scale=1.0,
                    layouts=True, name=None, **check_kwargs):
    """A hypothesis property test of ``check_parity(ours, theirs, ...)``, in one decorator::

        @parity_property(softplus, torch.nn.functional.softplus, shapes=strategies.shapes())
        def test_softplus():
            "softplus: values and gradients equal torch's"

    ``shapes``: a strategy drawing one shape (one input), a strategy drawing a tuple of shapes
    (``strategies.broadcastable_pair()``: one input each), or a list of shape strategies.
    Each example draws a dtype from ``dtypes``, a seed, and for each input values in ``domain``
    (one name or one per input, see :func:`tinygrad_tx.testing.values`) times ``scale``, in C
    order or (``layouts``) as a transposed view. ``check_kwargs`` go to ``check_parity``. The
    decorated function runs after each passing check — with the drawn arrays when it takes
    parameters, room for op-specific assertions; a docstring alone is enough. There is no
    deadline per example. Stack ``@hypothesis.settings(max_examples=..., deadline=None)``
    above it to change the example count (it replaces the kit's settings).
    """
    st = _strategies._require()
    from hypothesis import given
    from hypothesis import settings as _settings

    if isinstance(shapes, (list, tuple)) and all(isinstance(s, st.SearchStrategy) for s in shapes):
        shape_strategy = st.tuples(*shapes)
    elif isinstance(shapes, st.SearchStrategy):
        shape_strategy = shapes
    else:
        raise TypeError(f"parity_property: shapes must be a hypothesis strategy or a list of them, "
                        f"got {type(shapes).__name__}")
    dtypes = [_float_dtype(d) for d in dtypes]
    if not dtypes:
        raise ValueError("parity_property: dtypes is empty")

    def decorate(fn):
        takes_arrays = bool(inspect.signature(fn).parameters)
        label = name or _name_of(ours)

        def property_test(data):
            drawn = data.draw(shape_strategy, label="shapes")
            shape_list = [drawn] if _is_shape(drawn) else [tuple(s) for s in drawn]
            domains = [domain] * len(shape_list) if isinstance(domain, str) else list(domain)
            if len(domains) != len(shape_list):
                raise ValueError(f"parity_property: {len(domains)} domains for {len(shape_list)} inputs")
            dtype = data.draw(st.sampled_from(dtypes), label="dtype")
            seed = data.draw(_strategies.seeds, label="seed")
            arrays = [values(s, (seed + 7919 * i) % 2**32, d, scale) for i, (s, d) in enumerate(zip(shape_list, domains))]
            if layouts:
                arrays = [non_contiguous(a) if data.draw(st.booleans(), label=f"transposed[{i}]") else a
                          for i, a in enumerate(arrays)]
            check_parity(ours, theirs, *arrays, dtype=dtype, name=label, seed=seed, **check_kwargs)
            if takes_arrays:
                fn(*arrays)
            else:
                fn()

        # hypothesis keys its database and derandomized seed on the function: give it the test's name
        for attr in ("__name__", "__qualname__", "__module__", "__doc__"):
            setattr(property_test, attr, getattr(fn, attr))
        test = given(data=st.data())(property_test)
        # no deadline (hypothesis's default is 200 ms per example; the suite's profiles turn it
        # off): one example runs our op, torch's and a float64 oracle, and on a loaded machine the
        # README's block failed on it. Set where @given keeps its settings, not with @settings,
        # so that a @settings stacked above is still accepted (it replaces these: give it
        # deadline=None too).
        test._hypothesis_internal_use_settings = _settings(
            getattr(test, "_hypothesis_internal_use_settings", None), deadline=None)
        return test

    return decorate


# ------------------------------------------------------------------------------ second order

def _double_backward(grad_fn, out, xs, v, ws):
    """∂/∂(xs, v) of ⟨grad(out, xs, v, create_graph=True), ws⟩: Hessian-vector products w.r.t.
    the inputs and, w.r.t. the cotangent v, the Jacobian-vector product J·w (one backward of
    the backward checks both second-order paths)."""
    gs = grad_fn(out, xs, v, create_graph=True, allow_unused=True)
    s = None
    for gi, w in zip(gs, ws):
        if gi is not None:
            term = (gi * w).sum()
            s = term if s is None else s + term
    if s is None or not s.requires_grad:
        return [None] * (len(xs) + 1)
    return list(grad_fn(s, list(xs) + [v], allow_unused=True))


def check_double_parity(ours, theirs, *inputs, dtype=None, name=None, grad=None, seed=0):
    """Second-order parity: ``grad(⟨grad(out, x, v, create_graph=True), w⟩, (x, v))`` for ours
    and torch, with random cotangents ``v`` and ``w`` (never through ``.sum()``), in float64 to
    ``F64_RTOL`` or in float32 against torch's own float32 error (float64 oracle). ``inputs`` as
    in :func:`check_parity`. A second derivative that is zero on both sides (a linear op) must be
    zero or absent on both; the Jacobian-vector product w.r.t. ``v`` must be non-trivial.
    Returns the worst error."""
    name = name or _name_of(ours)
    dtype = _float_dtype(np.float64 if dtype is None else dtype)
    inputs = [a.astype(dtype) if _is_float(a) else a for a in inputs]
    diff_mask = [(_is_float(a) if grad is None else (i in grad)) for i, a in enumerate(inputs)]
    rng = _cotangent_rng(seed)

    def run(lib, grad_fn, arrays, dt):
        if lib is tg:
            ts = [tg.from_numpy(a.copy()).requires_grad_(d) if isinstance(a, np.ndarray) else a
                  for a, d in zip(arrays, diff_mask)]
            out = ours(*ts)
        else:
            ts = [to_torch(a, requires_grad=d, dtype=_TORCH_DTYPES[np.dtype(dt)] if d else None)
                  if isinstance(a, np.ndarray) else a for a, d in zip(arrays, diff_mask)]
            out = theirs(*ts)
        xs = [t for t, d in zip(ts, diff_mask) if d]
        return out, xs

    out, xs = run(tg, tg.autograd.grad, inputs, dtype)
    v_np = rng.standard_normal(out.shape).astype(dtype)
    ws_np = [rng.standard_normal(x.shape).astype(dtype) for x in xs]

    def second(lib, grad_fn, arrays, dt, v_np=v_np, ws_np=ws_np):
        out, xs = run(lib, grad_fn, arrays, dt)
        if lib is tg:
            v = tg.from_numpy(v_np.astype(dt)).requires_grad_()
            ws = [tg.from_numpy(w.astype(dt)) for w in ws_np]
        else:
            v = to_torch(v_np.astype(dt), requires_grad=True, dtype=_TORCH_DTYPES[np.dtype(dt)])
            ws = [to_torch(w.astype(dt), dtype=_TORCH_DTYPES[np.dtype(dt)]) for w in ws_np]
        res = _double_backward(grad_fn, out, xs, v, ws)
        shapes = [tuple(x.shape) for x in xs] + [tuple(out.shape)]
        return [np.zeros(s, dtype=dt) if r is None else
                (r.detach().numpy() if lib is tg else to_numpy(r)).astype(np.float64) for r, s in zip(res, shapes)]

    mine = second(tg, tg.autograd.grad, inputs, dtype)
    ref = second(torch, torch.autograd.grad, inputs, dtype)
    labels = [f"d2/dx{i}" for i in range(len(xs))] + ["d2/dv (J·w)"]
    assert_nontrivial(ref[-1], f"{name}: J·w")
    if dtype == np.float64:
        worst = max(assert_close(m, r, rtol=F64_RTOL, name=f"{name} float64 {lab}", check_dtype=False)
                    for lab, m, r in zip(labels, mine, ref))
        _record(f"{name} (2nd order)", "float64", worst)
        return worst
    inputs64 = [a.astype(np.float64) if _is_float(a) else a for a in inputs]
    oracle = second(torch, torch.autograd.grad, inputs64, np.float64)
    n = len(inputs64)
    worst, _ = _judge_f32(name, labels, mine, ref, oracle,
                          inputs64 + [v_np.astype(np.float64)] + [w.astype(np.float64) for w in ws_np],
                          list(diff_mask) + [True] * (1 + len(ws_np)),
                          lambda a: second(torch, torch.autograd.grad, a[:n], np.float64, a[n], a[n + 1:]), seed)
    _record(f"{name} (2nd order)", "float32", worst)
    return worst
