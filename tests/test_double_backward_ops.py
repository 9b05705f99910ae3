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
    # ---------------------------------------------------------------- reduce.py, reduce_minmax.py, sort.py
    "sum": (lambda a: (a * a).sum(1), None, (rnd(U),)),
    "sum_all_keepdim": (lambda a: (a * a).sum((0, 1), keepdim=True), None, (rnd(U),)),
    "nansum": (lambda a: (a * a).nansum(0), lambda a: (a * a).nansum(0), (rnd(U),)),
    "mean": (lambda a: (a * a).mean(0), None, (rnd(U),)),
    "prod": (lambda a: a.prod(1), None, (away(U, 0.5, 1.5),)),
    "logsumexp": (lambda a: a.logsumexp(1), None, (rnd(U),)),
    "logsumexp_keepdim": (lambda a: a.logsumexp(0, keepdim=True), None, (rnd(U),)),
    "max_all": (lambda a: a.max() * a, None, (distinct(U),)),
    "min_all": (lambda a: a.min() * a, None, (distinct(U),)),
    "max_dim": (lambda a: a.max(1).values * a.sum(1), lambda a: a.max(1).values * a.sum(1), (distinct(U),)),
    "amax": (lambda a: a.amax(0) * a.sum(0), None, (distinct(U),)),
    "amin_tie": (lambda a: a.amin((0, 1)) * a, None, (np.array([[0.3, -1.0, 2.0], [-1.0, 0.5, 1.5]]),)),
    "sort": (lambda a: a.sort(1).values * a, lambda a: a.sort(1).values * a, (distinct(U),)),
    "topk": (lambda a: a.topk(2, 1).values ** 2, lambda a: a.topk(2, 1).values ** 2, (distinct(U),)),
    "median_all": (lambda a: a.median() * a, None, (distinct(U),)),
    "median_dim": (lambda a: a.median(0).values * a, lambda a: a.median(0).values * a, (distinct(U),)),
    # ---------------------------------------------------------------- scan.py
    "cumsum": (lambda a: a.cumsum(1) * a, None, (rnd(U),)),
    "cumprod": (lambda a: a.cumprod(1), None, (away(U, 0.5, 1.5),)),
    "cummax": (lambda a: a.cummax(1).values * a, lambda a: a.cummax(1).values * a, (distinct(U),)),
    "cummin": (lambda a: a.cummin(0).values * a, lambda a: a.cummin(0).values * a, (distinct(U),)),
    # ---------------------------------------------------------------- movement.py
    "reshape": (lambda a: a.reshape(4, 3) * a.reshape(4, 3), None, (rnd(U),)),
    "permute": (lambda a: a.permute(2, 0, 1) * a.permute(2, 0, 1), None, (rnd((2, 3, 4)),)),
    "expand": (lambda a, b: a.expand(3, 4) * b, None, (rnd((1, 4)), rnd(U, seed=1))),
    "getitem_basic": (lambda a: a[1:, ::2] * a[:2, 1::2], None, (rnd(U),)),
    "getitem_advanced": (lambda a: a[[0, 2, 0]] * a[[1, 1, 2]], None, (rnd(U),)),
    "getitem_mask": (lambda a: a[a > 0] ** 2, None, (away(U),)),
    "cat": (lambda a, b: tg.cat([a, b * a], 0) ** 2, lambda a, b: torch.cat([a, b * a], 0) ** 2,
            (rnd(U), rnd(U, seed=1))),
    "stack": (lambda a, b: tg.stack([a, b * a], 1) ** 2, lambda a, b: torch.stack([a, b * a], 1) ** 2,
              (rnd(U), rnd(U, seed=1))),
    "index_put": (lambda a, v: a.index_put((tg.from_numpy(np.array([0, 2])),), v * v) * a,
                  lambda a, v: a.index_put((torch.tensor([0, 2]),), v * v) * a, (rnd(U), rnd((4,), seed=1))),
    "index_put_acc": (lambda a, v: a.index_put((tg.from_numpy(np.array([0, 0])),), v * v, accumulate=True) * a,
                      lambda a, v: a.index_put((torch.tensor([0, 0]),), v * v, accumulate=True) * a,
                      (rnd(U), rnd((4,), seed=1))),
    # ---------------------------------------------------------------- shape.py
    "tril": (lambda a: a.tril(0) * a, None, (rnd(U),)),
    "triu": (lambda a: a.triu(1) * a, None, (rnd(U),)),
    "roll": (lambda a: a.roll(1, 1) * a, None, (rnd(U),)),
    "flip": (lambda a: a.flip(0) * a, None, (rnd(U),)),
    "diagonal": (lambda a: a.diagonal(1, 0, 2) ** 3, None, (rnd((3, 2, 4)),)),
    "diag_embed": (lambda a: a.diag_embed(1) ** 3, None, (rnd(U),)),
    "repeat": (lambda a: a.repeat(2, 1, 2) ** 2, None, (rnd(U),)),
    "repeat_interleave": (lambda a: a.repeat_interleave(2, 1) ** 2, None, (rnd(U),)),
    "unfold": (lambda a: a.unfold(1, 2, 1) ** 2, None, (rnd(U),)),
    "einsum": (lambda a, b: tg.einsum("ij,kj->ik", a, b) ** 2, lambda a, b: torch.einsum("ij,kj->ik", a, b) ** 2,
               (rnd(U), rnd((2, 4), seed=1))),
    # ---------------------------------------------------------------- indexing.py, scatter.py
    "index_select": (lambda a: a.index_select(1, tg.from_numpy(np.array([0, 2, 2]))) ** 2,
                     lambda a: a.index_select(1, torch.tensor([0, 2, 2])) ** 2, (rnd(U),)),
    "index_add": (lambda a, s: a.index_add(0, tg.from_numpy(np.array([0, 0])), s * s) * a,
                  lambda a, s: a.index_add(0, torch.tensor([0, 0]), s * s) * a, (rnd(U), rnd((2, 4), seed=1))),
    "index_copy": (lambda a, s: a.index_copy(0, tg.from_numpy(np.array([2, 0])), s * s) * a,
                   lambda a, s: a.index_copy(0, torch.tensor([2, 0]), s * s) * a, (rnd(U), rnd((2, 4), seed=1))),
    "index_fill": (lambda a: a.index_fill(1, tg.from_numpy(np.array([1])), -1.0) * a,
                   lambda a: a.index_fill(1, torch.tensor([1]), -1.0) * a, (rnd(U),)),
    "masked_select": (lambda a: a.masked_select(tg.from_numpy(rnd((4,)) > 0)) ** 2,
                      lambda a: a.masked_select(torch.from_numpy(rnd((4,)) > 0)) ** 2, (rnd(U, seed=1),)),
    "masked_scatter": (lambda a, s: a.masked_scatter(tg.from_numpy(rnd(U) > 0), s * s) * a,
                       lambda a, s: a.masked_scatter(torch.from_numpy(rnd(U) > 0), s * s) * a,
                       (rnd(U, seed=1), rnd((14,), seed=2))),
    "take": (lambda a: a.take(tg.from_numpy(np.array([[0, 5], [11, 5]]))) ** 2,
             lambda a: a.take(torch.tensor([[0, 5], [11, 5]])) ** 2, (rnd(U),)),
    "gather": (lambda a: a.gather(1, tg.from_numpy(np.array([[0, 0], [3, 1], [2, 2]]))) ** 2,
               lambda a: a.gather(1, torch.tensor([[0, 0], [3, 1], [2, 2]])) ** 2, (rnd(U),)),
    "scatter": (lambda a, s: a.scatter(1, tg.from_numpy(np.array([[0], [3], [2]])), s * s) * a,
                lambda a, s: a.scatter(1, torch.tensor([[0], [3], [2]]), s * s) * a, (rnd(U), rnd((3, 1), seed=1))),
    "scatter_add": (lambda a, s: a.scatter_add(1, tg.from_numpy(np.array([[0, 0], [3, 1], [2, 2]])), s * s) * a,
                    lambda a, s: a.scatter_add(1, torch.tensor([[0, 0], [3, 1], [2, 2]]), s * s) * a,
                    (rnd(U), rnd((3, 2), seed=1))),
    # ---------------------------------------------------------------- matmul.py
    "matmul": (lambda a, b: (a @ b) ** 2, None, (rnd(U), rnd((4, 2), seed=1))),
    "matmul_batched": (lambda a, b: (a @ b) ** 2, None, (rnd((2, 3, 4)), rnd((4, 2), seed=1))),
    "matmul_broadcast": (lambda a, b: (a @ b) ** 2, None, (rnd((2, 1, 3, 4)), rnd((3, 4, 2), seed=1))),
    "matmul_vec": (lambda a, b: (a @ b) ** 2, None, (rnd((4,)), rnd((2, 4, 3), seed=1))),
    "dot": (lambda a, b: (a @ b) ** 2, None, (rnd((4,)), rnd((4,), seed=1))),
}


def case(name):
    ours, theirs, inputs = CASES[name]
    return ours, theirs or ours, inputs


@pytest.mark.parametrize("name", sorted(CASES))
@DTYPES
def test_double_parity(name, dtype):
    ours, theirs, inputs = case(name)
    check_double_parity(ours, theirs, *inputs, dtype=dtype, name=name)
