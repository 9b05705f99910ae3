"""Gradients of gradients of every op in ``tinygrad_tx/ops/`` (issue 19), against PyTorch.

Each op whose backward runs on Tensors (``differentiable_backward = True``) is checked with
``reference.testing.check_double_parity``: ``grad(⟨grad(out, x, v, create_graph=True), w⟩, (x, v))``
with random cotangents, float64 to 1e-10 relative and float32 against torch's own float32 error
(inputs drawn away from kinks and poles, broadcasting operands where the op broadcasts). A few
are also checked by finite differences of the gradient (``tinygrad_tx.gradcheck`` applied to the
function x -> grad(f(x), x, v, create_graph=True)). Ops that stay once-differentiable raise,
naming the op, when their gradient is differentiated; integer-output ops have no gradient at all.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tinygrad_tx as tg
from reference.testing import check_double_parity, to_torch
from tinygrad_tx import gradcheck

F64, F32 = np.float64, np.float32
DTYPES = pytest.mark.parametrize("dtype", [F64, F32], ids=["f64", "f32"])


def rnd(shape, lo=-2.0, hi=2.0, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, shape)


def away(shape, lo=0.3, hi=2.0, seed=0):
    """|x| in [lo, hi] with random signs: away from the kinks at 0."""
    r = np.random.default_rng(seed)
    return r.uniform(lo, hi, shape) * r.choice([-1.0, 1.0], shape)


def distinct(shape, seed=0):
    """Values with no ties (selections, sorts, max/min) and gaps of at least 0.05."""
    n = int(np.prod(shape))
    r = np.random.default_rng(seed)
    return (r.permutation(n) * 0.05 - n * 0.025 + r.uniform(0, 0.01, n)).reshape(shape)


def same(name):
    """``lambda *a: a[0].NAME(*a[1:])`` for both libraries (the method of the same name)."""
    return lambda x, *a: getattr(x, name)(*a)


# name -> (ours, theirs, inputs). ``theirs`` None: the same callable works on torch tensors.
U = (3, 4)
CASES = {
    # ---------------------------------------------------------------- elementwise.py
    "pow_tensor": (lambda a, b: a ** b, None, (rnd(U, 0.5, 2.0), rnd((4,), -1.5, 2.0, 1))),
    "pow_scalar": (lambda a: a ** 2.5, None, (rnd(U, 0.5, 2.0),)),
    "rpow": (lambda b: 1.7 ** b, None, (rnd(U),)),
    "sqrt": (same("sqrt"), None, (rnd(U, 0.2, 3.0),)),
    "sigmoid": (same("sigmoid"), None, (rnd(U, -4, 4),)),
    "relu": (same("relu"), None, (away(U),)),
    "where": (lambda a, b: tg.where(tg.from_numpy(rnd(U) > 0), a, b),
              lambda a, b: torch.where(torch.from_numpy(rnd(U) > 0), a, b), (rnd(U, seed=1), rnd((4,), seed=2))),
    "masked_fill": (lambda a: a.masked_fill(tg.from_numpy(rnd((4,)) > 0), 0.5),
                    lambda a: a.masked_fill(torch.from_numpy(rnd((4,)) > 0), 0.5), (rnd(U, seed=1),)),
    "clamp": (lambda a: a.clamp(-1.0, 1.0) * a, None, (away(U, 0.1, 1.9) * 1.0,)),
    "maximum": (lambda a, b: tg.maximum(a, b) * a, lambda a, b: torch.maximum(a, b) * a,
                (rnd(U, seed=1), rnd((4,), seed=2))),
    "minimum": (lambda a, b: tg.minimum(a, b) * b, lambda a, b: torch.minimum(a, b) * b,
                (rnd(U, seed=1), rnd((4,), seed=2))),
    "cast": (lambda a: a.to(tg.float32).to(tg.float64) * a, lambda a: a.to(torch.float32).to(torch.float64) * a,
             (rnd(U),)),
    "clone": (lambda a: a.clone() * a, None, (rnd(U),)),
    # ---------------------------------------------------------------- transcendental.py
    **{n: (same(n), None, (inp,)) for n, inp in {
        "sin": rnd(U), "cos": rnd(U), "tan": rnd(U, -1.2, 1.2), "asin": rnd(U, -0.9, 0.9),
        "acos": rnd(U, -0.9, 0.9), "atan": rnd(U), "sinh": rnd(U), "cosh": rnd(U), "asinh": rnd(U),
        "acosh": rnd(U, 1.1, 3.0), "atanh": rnd(U, -0.9, 0.9), "log1p": rnd(U, -0.5, 3.0),
        "expm1": rnd(U), "log2": rnd(U, 0.2, 3.0), "log10": rnd(U, 0.2, 3.0), "exp2": rnd(U),
        "rsqrt": rnd(U, 0.3, 3.0), "reciprocal": away(U), "square": rnd(U), "erf": rnd(U),
        "erfc": rnd(U), "erfinv": rnd(U, -0.9, 0.9), "logit": rnd(U, 0.05, 0.95), "sinc": away(U, 0.1, 2.0),
    }.items()},
    "logit_eps": (lambda a: a.logit(0.1), None, (rnd(U, 0.15, 0.85),)),
    # ---------------------------------------------------------------- unary.py
    "abs": (lambda a: a.abs() * a, None, (away(U),)),
    "frac": (lambda a: a.frac() * a, None, (away(U, 0.1, 0.9) + 2.0,)),
    "nan_to_num": (lambda a: a.nan_to_num() * a, None, (rnd(U),)),
    # ---------------------------------------------------------------- binary.py
    "atan2": (tg.atan2, torch.atan2, (away(U), away((4,), seed=1))),
    "hypot": (tg.hypot, torch.hypot, (away(U), away((4,), seed=1))),
    "lerp": (tg.lerp, torch.lerp, (rnd(U), rnd((4,), seed=1), rnd(U, 0, 1, seed=2))),
    "lerp_scalar": (lambda a, b: tg.lerp(a, b, 0.3) * a, lambda a, b: torch.lerp(a, b, 0.3) * a,
                    (rnd(U), rnd((4,), seed=1))),
    "copysign": (lambda a, b: tg.copysign(a, b) * a, lambda a, b: torch.copysign(a, b) * a,
                 (away(U), away((4,), seed=1))),
    "xlogy": (tg.xlogy, torch.xlogy, (rnd(U), rnd((4,), 0.3, 2.0, seed=1))),
    "remainder": (lambda a, b: tg.remainder(a, b) * b, lambda a, b: torch.remainder(a, b) * b,
                  (rnd(U, 0.1, 5.0) + 0.013, rnd((4,), 0.7, 1.3, seed=1))),
    "fmod": (lambda a, b: tg.fmod(a, b) * b, lambda a, b: torch.fmod(a, b) * b,
             (rnd(U, 0.1, 5.0) + 0.013, rnd((4,), 0.7, 1.3, seed=1))),
    "div_floor": (lambda a, b: tg.div(a, b, rounding_mode="floor") * a + a * b,
                  lambda a, b: torch.div(a, b, rounding_mode="floor") * a + a * b, (rnd(U) + 0.013, away((4,)))),
    # ---------------------------------------------------------------- compare.py
    "clamp_tensor": (lambda a, lo, hi: a.clamp(lo, hi) * a, lambda a, lo, hi: a.clamp(lo, hi) * a,
                     (away(U, 0.05, 2.0), rnd((4,), -1.5, -0.5, 1), rnd((3, 1), 0.5, 1.5, 2))),
}


def case(name):
    ours, theirs, inputs = CASES[name]
    return ours, theirs or ours, inputs


@pytest.mark.parametrize("name", sorted(CASES))
@DTYPES
def test_double_parity(name, dtype):
    ours, theirs, inputs = case(name)
    check_double_parity(ours, theirs, *inputs, dtype=dtype, name=name)
