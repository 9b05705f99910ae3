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
from reference.testing import DEVICE, check_double_parity, to_torch
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


_SR_INDEX = np.array([[0, 0], [1, 1], [2, 3]])   # scatter_reduce's index: two terms meet at (0, 0) and (1, 1)

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
              lambda a, b: torch.where(torch.from_numpy(rnd(U) > 0).to(DEVICE), a, b), (rnd(U, seed=1), rnd((4,), seed=2))),
    "masked_fill": (lambda a: a.masked_fill(tg.from_numpy(rnd((4,)) > 0), 0.5),
                    lambda a: a.masked_fill(torch.from_numpy(rnd((4,)) > 0).to(DEVICE), 0.5), (rnd(U, seed=1),)),
    "clamp": (lambda a: a.clamp(-1.0, 1.0) * a, None, (away(U, 0.1, 1.9) * 1.0,)),
    "maximum": (lambda a, b: tg.maximum(a, b) * a, lambda a, b: torch.maximum(a, b) * a,
                (rnd(U, seed=1), rnd((4,), seed=2))),
    "minimum": (lambda a, b: tg.minimum(a, b) * b, lambda a, b: torch.minimum(a, b) * b,
                (rnd(U, seed=1), rnd((4,), seed=2))),
    "add_sub_mul": (lambda a, b: (a + b) * (a - b) * b, None, (rnd(U), rnd((4,), seed=1))),
    "div": (lambda a, b: a / b, None, (rnd(U), away((4,), 0.5, 2.0, 1))),
    "neg_log_exp_tanh": (lambda a: (-a).log() + a.exp() * a.tanh(), None, (rnd(U, -2.0, -0.2),)),
    "add_alpha": (lambda a, b: a.add(b * a, alpha=2.5), None, (rnd(U), rnd((4,), seed=1))),
    "sub_alpha": (lambda a, b: a.sub(b * b, alpha=0.5), None, (rnd(U), rnd((4,), seed=1))),
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
    **{f"scatter_reduce_{red}_{'self' if inc else 'noself'}": (
        (lambda red, inc: lambda a, b: a.scatter_reduce(1, tg.from_numpy(_SR_INDEX), b, red, include_self=inc) * a)(red, inc),
        (lambda red, inc: lambda a, b: a.scatter_reduce(1, torch.from_numpy(_SR_INDEX).to(DEVICE), b, red,
                                                       include_self=inc) * a)(red, inc),
        (distinct(U), distinct((3, 2), seed=1) + 0.013))
       for red in ("sum", "mean", "amax", "amin", "prod") for inc in (True, False)},
    "logcumsumexp": (lambda a: a.logcumsumexp(1), None, (rnd(U),)),
    "logcumsumexp_dim0": (lambda a: a.logcumsumexp(0) * a, lambda a: a.logcumsumexp(0) * a, (rnd(U, -4.0, 4.0),)),
    "var": (lambda a: a.var(1), None, (rnd(U),)),
    "var_all_correction0": (lambda a: a.var(correction=0) * a, lambda a: a.var(correction=0) * a, (rnd(U),)),
    "var_keepdim": (lambda a: a.var(0, keepdim=True) * a, lambda a: a.var(0, keepdim=True) * a, (rnd(U),)),
    "std": (lambda a: a.std(0), None, (rnd(U),)),
    "std_keepdim_correction2": (lambda a: a.std(1, correction=2, keepdim=True) * a,
                                lambda a: a.std(1, correction=2, keepdim=True) * a, (rnd(U),)),
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
                  lambda a, v: a.index_put((torch.tensor([0, 2], device=DEVICE),), v * v) * a, (rnd(U), rnd((4,), seed=1))),
    "index_put_acc": (lambda a, v: a.index_put((tg.from_numpy(np.array([0, 0])),), v * v, accumulate=True) * a,
                      lambda a, v: a.index_put((torch.tensor([0, 0], device=DEVICE),), v * v, accumulate=True) * a,
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
                     lambda a: a.index_select(1, torch.tensor([0, 2, 2], device=DEVICE)) ** 2, (rnd(U),)),
    "index_add": (lambda a, s: a.index_add(0, tg.from_numpy(np.array([0, 0])), s * s) * a,
                  lambda a, s: a.index_add(0, torch.tensor([0, 0], device=DEVICE), s * s) * a, (rnd(U), rnd((2, 4), seed=1))),
    "index_copy": (lambda a, s: a.index_copy(0, tg.from_numpy(np.array([2, 0])), s * s) * a,
                   lambda a, s: a.index_copy(0, torch.tensor([2, 0], device=DEVICE), s * s) * a, (rnd(U), rnd((2, 4), seed=1))),
    "index_fill": (lambda a: a.index_fill(1, tg.from_numpy(np.array([1])), -1.0) * a,
                   lambda a: a.index_fill(1, torch.tensor([1], device=DEVICE), -1.0) * a, (rnd(U),)),
    "masked_select": (lambda a: a.masked_select(tg.from_numpy(rnd((4,)) > 0)) ** 2,
                      lambda a: a.masked_select(torch.from_numpy(rnd((4,)) > 0).to(DEVICE)) ** 2, (rnd(U, seed=1),)),
    "masked_scatter": (lambda a, s: a.masked_scatter(tg.from_numpy(rnd(U) > 0), s * s) * a,
                       lambda a, s: a.masked_scatter(torch.from_numpy(rnd(U) > 0).to(DEVICE), s * s) * a,
                       (rnd(U, seed=1), rnd((14,), seed=2))),
    "take": (lambda a: a.take(tg.from_numpy(np.array([[0, 5], [11, 5]]))) ** 2,
             lambda a: a.take(torch.tensor([[0, 5], [11, 5]], device=DEVICE)) ** 2, (rnd(U),)),
    "gather": (lambda a: a.gather(1, tg.from_numpy(np.array([[0, 0], [3, 1], [2, 2]]))) ** 2,
               lambda a: a.gather(1, torch.tensor([[0, 0], [3, 1], [2, 2]], device=DEVICE)) ** 2, (rnd(U),)),
    "scatter": (lambda a, s: a.scatter(1, tg.from_numpy(np.array([[0], [3], [2]])), s * s) * a,
                lambda a, s: a.scatter(1, torch.tensor([[0], [3], [2]], device=DEVICE), s * s) * a, (rnd(U), rnd((3, 1), seed=1))),
    "scatter_add": (lambda a, s: a.scatter_add(1, tg.from_numpy(np.array([[0, 0], [3, 1], [2, 2]])), s * s) * a,
                    lambda a, s: a.scatter_add(1, torch.tensor([[0, 0], [3, 1], [2, 2]], device=DEVICE), s * s) * a,
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


# ============================================================================ drawn inputs

SMOOTH = {"sin": (-3, 3), "tanh": (-2, 2), "exp": (-2, 2), "log1p": (-0.5, 3), "atan": (-3, 3),
          "sigmoid": (-4, 4), "erf": (-2, 2), "rsqrt": (0.3, 3), "sqrt": (0.3, 3)}
REDUCE = {"sum": lambda a: (a * a).sum(-1), "mean": lambda a: (a * a).mean(0, keepdim=True),
          "logsumexp": lambda a: a.logsumexp(-1), "prod": lambda a: a.prod(-1), "cumsum": lambda a: (a * a).cumsum(0),
          "cumprod": lambda a: a.cumprod(-1)}


@given(name=st.sampled_from(sorted(SMOOTH)), seed=st.integers(0, 2**31 - 1),
       shape=st.sampled_from([(5,), (2, 3), (2, 1, 3)]), dtype=st.sampled_from([F64, F32]))
def test_drawn_unary(name, seed, shape, dtype):
    lo, hi = SMOOTH[name]
    check_double_parity(same(name), same(name), rnd(shape, lo, hi, seed), dtype=dtype, name=name, seed=seed)


@given(op=st.sampled_from(["mul", "div", "pow", "atan2", "hypot", "maximum", "matmul"]),
       seed=st.integers(0, 2**31 - 1), dtype=st.sampled_from([F64, F32]),
       shapes=st.sampled_from([((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((4,), (2, 3, 4))]))
def test_drawn_binary_broadcasting(op, seed, dtype, shapes):
    sa, sb = shapes
    a, b = away(sa, 0.5, 2.0, seed), away(sb, 0.5, 2.0, seed + 1)
    fns = {"mul": lambda x, y: x * y * x, "div": lambda x, y: x / y, "pow": lambda x, y: x.abs() ** y,
           "atan2": lambda x, y: x.atan2(y), "hypot": lambda x, y: x.hypot(y),
           "maximum": lambda x, y: x.maximum(y) * y, "matmul": lambda x, y: (x @ y.unsqueeze(-1)) ** 2}
    if op == "matmul":
        # a 1-D a would make the output one number, whose J·w is a difference of two float32 dot
        # products that may cancel (seed 1848601906: 17x torch's relative error by luck of the
        # rounding, both far from the oracle's tiny value): a matrix a keeps several outputs
        if len(sa) == 1:
            a = away((3,) + sa, 0.5, 2.0, seed)
        b = away(sa[-1:], 0.5, 2.0, seed + 1)
    check_double_parity(fns[op], fns[op], a, b, dtype=dtype, name=op, seed=seed)


@given(name=st.sampled_from(sorted(REDUCE)), seed=st.integers(0, 2**31 - 1), dtype=st.sampled_from([F64, F32]))
def test_drawn_reductions_and_scans(name, seed, dtype):
    check_double_parity(REDUCE[name], REDUCE[name], away((3, 4), 0.5, 1.5, seed), dtype=dtype, name=name, seed=seed)


# ============================================================================ finite differences

def _gradient_function(f, v):
    """x -> dL/dx of L = <f(x), v>, recorded (create_graph): its own backward is f's double backward."""
    def h(x):
        with tg.enable_grad():   # gradcheck evaluates h under no_grad for the finite differences
            if not x.requires_grad:
                x = x.detach().requires_grad_()
            (gx,) = tg.autograd.grad(f(x), x, tg.from_numpy(v), create_graph=True)
        return gx
    return h


@pytest.mark.parametrize("name,f,x", [
    ("tan", lambda x: x.tan(), rnd(U, -1.0, 1.0)),
    ("logsumexp", lambda x: x.logsumexp(1), rnd(U)),
    ("cumprod", lambda x: x.cumprod(1), away(U, 0.5, 1.5)),
    ("gather", lambda x: x.gather(1, tg.from_numpy(np.array([[0, 0], [3, 1], [2, 2]]))) ** 3, rnd(U)),
    ("matmul", lambda x: (x @ x.transpose(0, 1)).sin(), rnd(U)),
    ("unfold", lambda x: x.unfold(1, 2, 1).exp(), rnd(U)),
], ids=lambda p: p if isinstance(p, str) else "")
def test_second_order_finite_differences(name, f, x):
    with tg.no_grad():
        shape = f(tg.from_numpy(x)).shape
    v = np.random.default_rng(1).standard_normal(shape)
    assert gradcheck(_gradient_function(f, v), [x])


# ============================================================================ scatter_reduce 'prod' with zeros

def _prod_terms(seed, dim, several=False):
    """x (3, 5) or (5, 3), src and index (3, 4) or (4, 3) along ``dim`` for scatter_reduce 'prod':
    terms in ±[0.5, 1.5]; about a quarter of x zero (always one at a position src lands on); src
    zeros with at most one per position, always at least one (``several``: and a second one sent
    to the first one's position)."""
    r = np.random.default_rng(seed)
    shape, ishape = ((3, 5), (3, 4)) if dim == 1 else ((5, 3), (4, 3))
    x, src = away(shape, 0.5, 1.5, seed), away(ishape, 0.5, 1.5, seed + 1)
    idx = r.integers(0, shape[dim], ishape)
    x[r.random(shape) < 0.25] = 0

    def target(i):
        return tuple(int(idx[i]) if a == dim else i[a] for a in range(2))
    x[target((1, 1))] = 0
    taken = {}
    for i in [(0, 0)] + [tuple(int(c) for c in i) for i in np.argwhere(r.random(ishape) < 0.3)]:
        if target(i) not in taken:
            src[i], taken[target(i)] = 0.0, i
    if several:   # src[0, 0] is a zero; another term of its slice is made one and sent where it goes
        other = (0, 2) if dim == 1 else (2, 0)
        idx[other], src[other] = idx[0, 0], 0.0
    return x, src, idx


def _scatter_prod_fns(idx, dim, include_self, times_x=False):
    """(ours, torch's) scatter_reduce 'prod' along ``dim``; ``times_x``: the result times x. The bare
    op's d²/dx² is 0, and torch's is rounding noise around it (it differentiates x·Π src / x), which
    no relative error can compare: times x, the second derivative w.r.t. x is 2·v·∂y/∂x, not 0."""
    def f(index):
        def g(a, b):
            y = a.scatter_reduce(dim, index, b, "prod", include_self=include_self)
            return y * a if times_x else y
        return g
    return f(tg.from_numpy(idx)), f(torch.from_numpy(idx).to(DEVICE))


@given(seed=st.integers(0, 2**31 - 1), dim=st.sampled_from([0, 1]), include_self=st.booleans(),
       dtype=st.sampled_from([F64, F32]))
def test_drawn_scatter_reduce_prod_with_zeros(seed, dim, include_self, dtype):
    """Zeros in x and lone zeros of src (one per position): torch's second derivatives, the lone
    zero's gradient formed without it (its derivatives the products of the remaining terms)."""
    x, src, idx = _prod_terms(seed, dim)
    ours, theirs = _scatter_prod_fns(idx, dim, include_self, times_x=True)
    check_double_parity(ours, theirs, x, src, dtype=dtype, name="scatter_reduce prod, zeros", seed=seed)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scatter_reduce_prod_second_order_finite_differences(seed, include_self):
    """At zeros of x and lone zeros of src the gradient is a polynomial in the terms: its finite
    differences are the second derivatives the recorded backward must give."""
    x, src, idx = _prod_terms(seed, 1)
    ours, _ = _scatter_prod_fns(idx, 1, include_self)
    assert tg.autograd.gradgradcheck(ours, (tg.from_numpy(x).requires_grad_(), tg.from_numpy(src).requires_grad_()))


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_reduce_prod_zeros_meeting_raise_as_torch(dim, include_self):
    """Two src zeros at one position: the gradients are torch's, x's is differentiable (equal to
    torch's second derivatives), and differentiating src's raises torch's error, naming the op."""
    x, src, idx = _prod_terms(3, dim, several=True)
    r = np.random.default_rng(4)
    v, wx, ws = r.standard_normal(x.shape), r.standard_normal(x.shape), r.standard_normal(src.shape)
    results = {}
    for lib, f in zip((tg, torch), _scatter_prod_fns(idx, dim, include_self)):
        leaves = [lib.from_numpy(a.copy()).requires_grad_() for a in (x, src, v)]
        gx, gs = lib.autograd.grad(f(*leaves[:2]), leaves[:2], leaves[2], create_graph=True)
        with pytest.raises(RuntimeError, match="Double backward is unsupported for src when >1 zeros in src") as err:
            lib.autograd.grad((gs * lib.from_numpy(ws)).sum(), leaves, retain_graph=True, allow_unused=True)
        if lib is tg:
            assert "ScatterReduceProd" in str(err.value)
        second = lib.autograd.grad((gx * lib.from_numpy(wx)).sum(), leaves, allow_unused=True)
        results[lib] = [t.detach().numpy() for t in (gx, gs)] + [
            np.zeros(a.shape) if s is None else s.detach().numpy() for s, a in zip(second, (x, src, v))]
    # d/dsrc of <gx, wx> (the products of the other src terms) with include_self; without it x's
    # gradient is g off the scattered positions: its derivative is w.r.t. v only
    assert np.abs(results[torch][3 if include_self else 4]).max() > 0
    for mine, ref in zip(results[tg], results[torch]):
        assert np.abs(mine - ref).max() <= 1e-10 * max(np.abs(ref).max(), 1.0)


# ============================================================================ what does not twice-differentiate

def _twice(f, x):
    x = tg.from_numpy(x).requires_grad_()
    y = f(x)
    (gx,) = tg.autograd.grad(y, x, tg.from_numpy(np.random.default_rng(1).standard_normal(y.shape)),
                             create_graph=True)
    return tg.autograd.grad((gx * gx).sum(), x)


@pytest.mark.parametrize("op,f,x", [
    # only where two zeros of src meet at one position (x[0, 0] and x[0, 1], both sent to (0, 0))
    ("ScatterReduceProd", lambda x: x.scatter_reduce(1, tg.from_numpy(np.array([[0, 0], [1, 1], [2, 3]])),
                                                     x[:, :2] * 2, "prod"),
     np.where(np.array([[1, 1, 0, 0], [0] * 4, [0] * 4]) > 0, 0.0, away(U, 0.5, 1.5))),
    ("Prod", lambda x: x.prod(1), np.where(np.eye(3, 4) > 0, 0.0, away(U, 0.5, 1.5))),
    ("CumProd", lambda x: x.cumprod(1), np.where(np.eye(3, 4, 1) > 0, 0.0, away(U, 0.5, 1.5))),
], ids=lambda p: p if isinstance(p, str) else "")
def test_once_differentiable_ops_raise_naming_the_op(op, f, x):
    with pytest.raises(RuntimeError, match=op):
        _twice(f, x)


def test_flash_attention_stays_once_differentiable():
    from tinygrad_tx.ops.flash_attention import FlashAttention, flash_attention
    assert not FlashAttention.differentiable_backward
    r = np.random.default_rng(0)
    q, k, v = (tg.from_numpy(r.standard_normal((2, 5, 4))).requires_grad_() for _ in range(3))
    out = flash_attention(q, k, v, block_q=2, block_k=2)
    gq, gk, gv = tg.autograd.grad(out, (q, k, v), tg.from_numpy(r.standard_normal(out.shape)), create_graph=True)
    ref = torch.nn.functional.scaled_dot_product_attention(*(to_torch(t._data, requires_grad=True) for t in (q, k, v)))
    np.testing.assert_allclose(out._data, ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match="FlashAttention"):
        tg.autograd.grad((gq * gq).sum() + (gv * gk).sum(), (q, k, v))


@pytest.mark.parametrize("name", ["sign", "floor", "ceil", "round", "trunc"])
def test_piecewise_constant_gradient_is_a_zero_constant(name):
    """torch returns zeros that do not require grad: differentiating again is 'does not require grad'."""
    x = rnd(U) + 0.013
    xt, xr = tg.from_numpy(x).requires_grad_(), to_torch(x, requires_grad=True)
    (g,) = tg.autograd.grad(getattr(xt, name)() * 3, xt, tg.from_numpy(np.ones(U)), create_graph=True)
    (gr,) = torch.autograd.grad(getattr(xr, name)() * 3, xr, torch.ones(U, dtype=torch.float64, device=DEVICE), create_graph=True)
    np.testing.assert_array_equal(g._data, gr.detach().cpu().numpy())
    assert g.requires_grad == gr.requires_grad


def test_floor_divide_has_no_derivative_as_in_torch():
    xt, xr = tg.from_numpy(rnd(U)).requires_grad_(), to_torch(rnd(U), requires_grad=True)
    with pytest.raises(RuntimeError, match="floor_divide"):
        tg.autograd.grad((xt // 0.7).sum(), xt, create_graph=True)
    with pytest.raises(RuntimeError):
        torch.autograd.grad((xr // 0.7).sum(), xr, create_graph=True)


@pytest.mark.parametrize("f", [lambda x: x.argmax(1), lambda x: x > 0, lambda x: x.max(1).indices,
                               lambda x: x.sort(0).indices, lambda x: x.isnan()])
def test_integer_and_bool_outputs_are_not_differentiable(f):
    y = f(tg.from_numpy(rnd(U)).requires_grad_())
    assert not y.requires_grad


def test_every_op_in_the_ops_modules_is_twice_differentiable_or_listed():
    """The ops left once-differentiable are exactly the listed ones (a new op must choose)."""
    import importlib
    import inspect
    from tinygrad_tx.autograd import ArrayFunction
    once = set()
    for mod in ("elementwise transcendental unary binary compare reduce reduce_minmax scan sort movement shape "
                "einsum indexing scatter matmul inplace flash_attention").split():
        m = importlib.import_module(f"tinygrad_tx.ops.{mod}")
        for n, c in vars(m).items():
            if inspect.isclass(c) and issubclass(c, ArrayFunction) and c.__module__ == m.__name__ \
                    and not c.differentiable_backward and c.twice_differentiable_via is None \
                    and not n.endswith("ClosedForm"):   # GeluClosedForm: a rung-2 class, GeluFn's second derivative
                once.add(n)
    assert once == {"FlashAttention"}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_twice_through_its_closed_form(approximate, dtype):
    """Gelu's fast backward multiplies by a derivative saved in the forward; its gradient is
    differentiated through GeluClosedForm (Φ + xφ, or the tanh form), from the x it also keeps."""
    from tinygrad_tx.functional.closed_form import GeluClosedForm
    from tinygrad_tx.ops.elementwise import GeluFn
    assert GeluFn.twice_differentiable_via is GeluClosedForm
    f = (lambda lib: (lambda x: (lib.nn.functional.gelu(x * 1.5, approximate=approximate))))
    check_double_parity(f(tg), f(torch), away(U, 0.3, 2.5) * np.sign(rnd(U)), dtype=dtype, name="gelu")


@pytest.mark.parametrize("f", [lambda lib, x: x.sin() * x[:, [0, 0, 1, 3]].exp(),
                               lambda lib, x: x.gather(1, lib.from_numpy(np.array([[0, 0], [1, 1], [3, 2]]))) ** 3,
                               lambda lib, x: x.logsumexp(1) ** 2 + (x @ x.transpose(0, 1)).tanh().sum()])
def test_third_order_matches_torch(f):
    """create_graph again on a double backward: the recorded backward's own backward is recorded too."""
    x0 = rnd(U, -1.0, 1.0)

    def third(lib):
        x = lib.from_numpy(x0.copy()).requires_grad_()
        (g1,) = lib.autograd.grad(f(lib, x).sum(), x, create_graph=True)
        (g2,) = lib.autograd.grad((g1 * g1).sum(), x, create_graph=True)
        (g3,) = lib.autograd.grad((g2 * x).sum(), x)
        return g3.detach().numpy()
    ours, ref = third(tg), third(torch)
    assert np.abs(ours - ref).max() <= 1e-10 * np.abs(ref).max()
