"""The one comparison helper every parity test uses: ``check_parity``.

It runs our function and a PyTorch function on the same inputs, draws a
**random cotangent** ``g`` and compares

* outputs: shape, dtype and values;
* every input gradient: ours from ``out.backward(g)``, torch's from
  ``torch.autograd.grad(out, inputs, g)`` — never through ``.sum()``, whose
  gradient can be blind to a wrong backward (d sum(softmax) = 0);

and it asserts that the reference gradient is not trivially zero and that
our inputs were not mutated.

Tolerances
----------
* float64: relative error (max |ours − ref| / max |ref|) ≤ 1e-10.
* float32: a float64 torch run on the same (float32-rounded) inputs is the
  oracle. Our float32 error against it must not exceed ``F32_RATIO`` times
  torch-float32's own error against it (plus a floor of a few float32 ulps for
  ops that torch computes exactly). No hand-picked per-op tolerance.
"""
from __future__ import annotations

import os
from collections import defaultdict

import numpy as np
import torch

import tinygrad_tx as tg

DEVICE = os.environ.get("TINYGRAD_TX_TORCH_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")

F64_RTOL = 1e-10
F32_RATIO = 4.0
F32_FLOOR = 8 * np.finfo(np.float32).eps

# (name, dtype) -> {"ours": worst error, "torch": torch's error in the same call, "calls": n}
ERROR_REPORT: dict = defaultdict(lambda: {"ours": 0.0, "torch": None, "calls": 0})

_TORCH_DTYPES = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64,
                 np.dtype(np.int64): torch.int64, np.dtype(np.int32): torch.int32,
                 np.dtype(np.bool_): torch.bool}


def to_torch(a, requires_grad=False, dtype=None):
    a = np.asarray(a)
    t = torch.tensor(np.ascontiguousarray(a).reshape(a.shape), device=DEVICE)  # ascontiguousarray makes 0-d 1-d
    if dtype is not None:
        t = t.to(dtype)
    return t.requires_grad_(requires_grad)


def to_numpy(t):
    return t.detach().cpu().numpy()


def rel_err(ours, ref) -> float:
    """max |ours − ref| / max |ref| (0 when both are zero; inf/nan positions must agree)."""
    ours = np.asarray(ours, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if ours.shape != ref.shape:
        raise AssertionError(f"shape mismatch: ours {ours.shape} vs reference {ref.shape}")
    finite = np.isfinite(ref)
    if not np.array_equal(np.isfinite(ours), finite) or \
            not np.array_equal(ours[~finite], ref[~finite], equal_nan=True):
        return float("inf")
    if not finite.any():
        return 0.0
    diff = np.max(np.abs(ours[finite] - ref[finite]), initial=0.0)
    scale = np.max(np.abs(ref[finite]), initial=0.0)
    if scale == 0.0:
        return float(diff)
    return float(diff / scale)


def _record(name, dtype, ours, torch_err=None):
    r = ERROR_REPORT[(name, dtype)]
    r["calls"] += 1
    if ours > r["ours"]:
        r["ours"] = ours
        r["torch"] = torch_err


def _is_float(a):
    return isinstance(a, np.ndarray) and a.dtype.kind == "f"


def _run_torch(torch_fn, inputs, dtype, diff_mask, g):
    ts = [to_torch(a, requires_grad=d, dtype=_TORCH_DTYPES[np.dtype(dtype)] if d else None)
          if isinstance(a, np.ndarray) else a for a, d in zip(inputs, diff_mask)]
    out = torch_fn(*ts)
    diff = [t for t, d in zip(ts, diff_mask) if d]
    grads = torch.autograd.grad(out, diff, to_torch(g, dtype=out.dtype), allow_unused=True)
    grads = [np.zeros(t.shape) if gr is None else to_numpy(gr) for t, gr in zip(diff, grads)]
    return to_numpy(out), grads


def check_parity(name, ours_fn, torch_fn, inputs, dtype=np.float64, *, grad=None, seed=0,
                 allow_zero_grad=(), cotangent=None):
    """Compare ``ours_fn(*tg_tensors)`` with ``torch_fn(*torch_tensors)``, values and gradients.

    ``inputs``: NumPy arrays (float ones are cast to ``dtype``; other dtypes — indices, masks —
    pass through unchanged) or plain Python values passed as they are.
    ``grad``: which inputs to differentiate (default: every float array).
    ``allow_zero_grad``: indices of inputs whose reference gradient may legitimately be 0.
    Returns a dict of the errors measured.
    """
    dtype = np.dtype(dtype)
    inputs = [a.astype(dtype) if _is_float(a) else a for a in inputs]
    diff_mask = [(_is_float(a) if grad is None else (i in grad)) for i, a in enumerate(inputs)]
    originals = [a.copy() if isinstance(a, np.ndarray) else None for a in inputs]

    ours_in = [tg.Tensor(a, requires_grad=d) if isinstance(a, np.ndarray) else a
               for a, d in zip(inputs, diff_mask)]
    out = ours_fn(*ours_in)
    assert isinstance(out, tg.Tensor), f"{name}: ours returned {type(out).__name__}, not a Tensor"
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(out.shape).astype(out.dtype) if cotangent is None else cotangent
    out.backward(g)
    our_grads = [t.grad for t, d in zip(ours_in, diff_mask) if d]

    for a, o in zip(inputs, originals):
        if o is not None:
            assert np.array_equal(a, o, equal_nan=True), f"{name}: an input was mutated"

    ref_out, ref_grads = _run_torch(torch_fn, inputs, dtype, diff_mask, g)
    assert out.shape == ref_out.shape, f"{name}: output shape {out.shape} vs torch {ref_out.shape}"
    assert out.dtype == ref_out.dtype, f"{name}: output dtype {out.dtype} vs torch {ref_out.dtype}"
    diff_positions = [i for i, d in enumerate(diff_mask) if d]
    for k, (i, og, rg) in enumerate(zip(diff_positions, our_grads, ref_grads)):
        assert og is not None, f"{name}: no gradient reached input {i}"
        assert og.shape == rg.shape, f"{name}: grad {i} shape {og.shape} vs torch {rg.shape}"
        assert og.dtype == inputs[i].dtype, f"{name}: grad {i} dtype {og.dtype} vs input {inputs[i].dtype}"
        if i not in allow_zero_grad:
            assert np.any(rg != 0), f"{name}: reference gradient of input {i} is all zero: test is blind"

    result = {}
    if dtype == np.float64:
        errs = [rel_err(out._data, ref_out)] + [rel_err(og, rg) for og, rg in zip(our_grads, ref_grads)]
        labels = ["output"] + [f"grad[{i}]" for i in diff_positions]
        for lab, e in zip(labels, errs):
            assert e <= F64_RTOL, f"{name} float64 {lab}: relative error {e:.3g} > {F64_RTOL:g}"
        worst = max(errs)
        _record(name, "float64", worst)
        result["ours"] = worst
        return result

    # float32: judge against torch float32's own error w.r.t. a float64 oracle
    inputs64 = [a.astype(np.float64) if _is_float(a) else a for a in inputs]
    oracle_out, oracle_grads = _run_torch(torch_fn, inputs64, np.float64, diff_mask, g.astype(np.float64))
    worst_ours = worst_torch = 0.0
    pairs = [("output", out._data, ref_out, oracle_out)] + [
        (f"grad[{i}]", og, rg, orc) for i, og, rg, orc in zip(diff_positions, our_grads, ref_grads, oracle_grads)]
    for lab, ours_v, torch_v, oracle_v in pairs:
        e_ours = rel_err(ours_v, oracle_v)
        e_torch = rel_err(torch_v, oracle_v)
        assert e_ours <= F32_RATIO * e_torch + F32_FLOOR, (
            f"{name} float32 {lab}: our error {e_ours:.3g} vs torch float32's {e_torch:.3g} "
            f"(allowed {F32_RATIO:g}x + {F32_FLOOR:.2g})")
        worst_ours, worst_torch = max(worst_ours, e_ours), max(worst_torch, e_torch)
    _record(name, "float32", worst_ours, worst_torch)
    result.update(ours=worst_ours, torch=worst_torch)
    return result
