"""Every engine primitive against central finite differences (``tinygrad_tx.gradcheck``), no PyTorch.

Each case runs twice: with few input elements (<= 48, so gradcheck compares
the full Jacobian, column by column) and with many (a random directional
derivative with a random cotangent). Inputs sit in each op's domain and at
least 1e-3 away from kinks and ties, far more than the finite-difference step.
The last tests show that gradcheck fails on deliberately wrong backwards.
"""
from __future__ import annotations

import numpy as np
import pytest

import tinygrad_tx as tg
from tinygrad_tx import GradcheckError, gradcheck
from tinygrad_tx.autograd import ArrayFunction

FULL_JACOBIAN_MAX = 48  # gradcheck's default threshold


def normal(rng, shape, scale=1.0):
    return rng.standard_normal(shape) * scale


def positive(rng, shape):
    return rng.uniform(0.5, 2.5, shape)


def away_from_zero(rng, shape):
    return rng.uniform(0.1, 2.0, shape) * rng.choice([-1.0, 1.0], shape)


def distinct(rng, shape):
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.37 - n * 0.1).reshape(shape)


def clamp_safe(rng, shape, lo, hi):
    x = normal(rng, shape)
    for b in (b for b in (lo, hi) if b is not None):
        x = np.where(np.abs(x - b) < 1e-3, b + 2e-3, x)
    return x


# Each case: name -> (fn, make_inputs(rng, big)). ``big`` picks shapes with more than 48 elements.
def _sh(big, small, large):
    return large if big else small


CASES = {
    # arithmetic, with broadcasting
    "add": (lambda a, b: a + b, lambda r, big: [normal(r, _sh(big, (2, 3), (4, 5, 3))), normal(r, (3,))]),
    "sub": (lambda a, b: a - b, lambda r, big: [normal(r, _sh(big, (2, 1), (9, 1))), normal(r, _sh(big, (3,), (45,)))]),
    "mul": (lambda a, b: a * b, lambda r, big: [normal(r, _sh(big, (2, 3), (6, 9))), normal(r, _sh(big, (2, 1), (6, 1)))]),
    "div": (lambda a, b: a / b, lambda r, big: [normal(r, _sh(big, (2, 3), (6, 9))), away_from_zero(r, (3,) if not big else (9,))]),
    "neg": (lambda a: -a, lambda r, big: [normal(r, _sh(big, (2, 3), (6, 9)))]),
    "scalar forms": (lambda a: (2.0 - a) * 3.0 + 1.5 / (a + 5.0) - a / 4.0,
                     lambda r, big: [normal(r, _sh(big, (2, 3), (6, 9)))]),
    "pow x**c": (lambda a: a ** 2.5, lambda r, big: [positive(r, _sh(big, (2, 3), (6, 9)))]),
    "pow x**int": (lambda a: a ** 3, lambda r, big: [normal(r, _sh(big, (2, 3), (6, 9)))]),
    "pow c**x": (lambda a: 1.7 ** a, lambda r, big: [normal(r, _sh(big, (2, 3), (6, 9)))]),
    "pow x**y": (lambda a, b: a ** b, lambda r, big: [positive(r, _sh(big, (2, 3), (6, 9))), normal(r, (3,) if not big else (9,))]),
    "maximum": (tg.maximum, lambda r, big: [distinct(r, _sh(big, (2, 3), (6, 9))), distinct(r, (3,) if not big else (9,)) + 0.05]),
    "minimum": (tg.minimum, lambda r, big: [distinct(r, _sh(big, (2, 3), (6, 9))), distinct(r, (3,) if not big else (9,)) + 0.05]),
    # pointwise
    "exp": (lambda a: a.exp(), lambda r, big: [normal(r, _sh(big, (2, 3), (6, 9)))]),
    "log": (lambda a: a.log(), lambda r, big: [positive(r, _sh(big, (2, 3), (6, 9)))]),
    "sqrt": (lambda a: a.sqrt(), lambda r, big: [positive(r, _sh(big, (2, 3), (6, 9)))]),
    "tanh": (lambda a: a.tanh(), lambda r, big: [normal(r, _sh(big, (2, 3), (6, 9)), 2.0)]),
    "sigmoid": (lambda a: a.sigmoid(), lambda r, big: [normal(r, _sh(big, (2, 3), (6, 9)), 3.0)]),
    "relu": (lambda a: a.relu(), lambda r, big: [away_from_zero(r, _sh(big, (2, 3), (6, 9)))]),
    "gelu[none]": (lambda a: a.gelu(), lambda r, big: [normal(r, _sh(big, (2, 3), (6, 9)), 2.0)]),
    "gelu[tanh]": (lambda a: a.gelu(approximate="tanh"), lambda r, big: [normal(r, _sh(big, (2, 3), (6, 9)), 2.0)]),
    "clamp[min]": (lambda a: a.clamp(min=-0.3), lambda r, big: [clamp_safe(r, _sh(big, (2, 3), (6, 9)), -0.3, None)]),
    "clamp[max]": (lambda a: a.clamp(max=0.4), lambda r, big: [clamp_safe(r, _sh(big, (2, 3), (6, 9)), None, 0.4)]),
    "clamp[both]": (lambda a: a.clamp(-0.5, 0.6), lambda r, big: [clamp_safe(r, _sh(big, (2, 3), (6, 9)), -0.5, 0.6)]),
    # matmul, every shape kind
    "matmul[vv]": (tg.matmul, lambda r, big: [normal(r, (_sh(big, 4, 30),)), normal(r, (_sh(big, 4, 30),))]),
    "matmul[mv]": (tg.matmul, lambda r, big: [normal(r, _sh(big, (3, 4), (2, 5, 6))), normal(r, (_sh(big, 4, 6),))]),
    "matmul[vm]": (tg.matmul, lambda r, big: [normal(r, (_sh(big, 4, 6),)), normal(r, _sh(big, (4, 3), (2, 6, 5)))]),
    "matmul[mm]": (tg.matmul, lambda r, big: [normal(r, _sh(big, (2, 4), (6, 7))), normal(r, _sh(big, (4, 3), (7, 5)))]),
    "matmul[batched]": (tg.matmul, lambda r, big: [normal(r, _sh(big, (2, 1, 2, 3), (3, 1, 4, 3))),
                                                   normal(r, _sh(big, (3, 3, 2), (2, 3, 5)))]),
    "matmul[batch@2d]": (tg.matmul, lambda r, big: [normal(r, _sh(big, (2, 2, 3), (3, 4, 5))), normal(r, (_sh(big, 3, 5), 2))]),
    # reductions
    "sum": (lambda a: a.sum(), lambda r, big: [normal(r, _sh(big, (2, 3), (6, 9)))]),
    "sum[dim,keepdim]": (lambda a: a.sum(dim=(0, -1), keepdim=True), lambda r, big: [normal(r, _sh(big, (2, 3, 2), (4, 3, 5)))]),
    "mean": (lambda a: a.mean(1), lambda r, big: [normal(r, _sh(big, (2, 3, 2), (4, 3, 5)))]),
    "mean[keepdim]": (lambda a: a.mean((0, 2), keepdim=True), lambda r, big: [normal(r, _sh(big, (2, 3, 2), (4, 3, 5)))]),
    "var": (lambda a: a.var(), lambda r, big: [normal(r, _sh(big, (2, 3), (6, 9)))]),
    "var[dim,correction=0]": (lambda a: a.var(-1, correction=0), lambda r, big: [normal(r, _sh(big, (2, 3, 2), (4, 3, 5)))]),
    "var[dims,keepdim,unbiased]": (lambda a: a.var((0, 1), unbiased=True, keepdim=True),
                                   lambda r, big: [normal(r, _sh(big, (2, 3, 2), (4, 3, 5)))]),
    "max": (lambda a: a.max(), lambda r, big: [distinct(r, _sh(big, (2, 3), (6, 9)))]),
    "min": (lambda a: a.min(), lambda r, big: [distinct(r, _sh(big, (2, 3), (6, 9)))]),
    "max[dim]": (lambda a: a.max(1).values, lambda r, big: [distinct(r, _sh(big, (2, 3, 2), (4, 3, 5)))]),
    "min[dim,keepdim]": (lambda a: a.min(-1, keepdim=True).values, lambda r, big: [distinct(r, _sh(big, (2, 3, 2), (4, 3, 5)))]),
    # shape and movement
    "reshape": (lambda a: a.reshape(-1, 2), lambda r, big: [normal(r, _sh(big, (2, 3, 2), (4, 3, 6)))]),
    "view": (lambda a: a.view(3, -1), lambda r, big: [normal(r, _sh(big, (2, 3), (6, 9)))]),
    "permute": (lambda a: a.permute(2, 0, 1), lambda r, big: [normal(r, _sh(big, (2, 3, 2), (4, 3, 5)))]),
    "transpose": (lambda a: a.transpose(0, -1), lambda r, big: [normal(r, _sh(big, (2, 3, 2), (4, 3, 5)))]),
    "unsqueeze": (lambda a: a.unsqueeze(1), lambda r, big: [normal(r, _sh(big, (2, 3), (6, 9)))]),
    "squeeze": (lambda a: a.squeeze(1), lambda r, big: [normal(r, _sh(big, (2, 1, 3), (6, 1, 9)))]),
    "expand": (lambda a: a.expand(2, -1, 3), lambda r, big: [normal(r, _sh(big, (4, 1), (60, 1)))]),
    "getitem[basic]": (lambda a: a[1:, None, ::2, ...], lambda r, big: [normal(r, _sh(big, (3, 5), (6, 9)))]),
    "getitem[int,ellipsis]": (lambda a: a[..., -1, 1:3], lambda r, big: [normal(r, _sh(big, (2, 3, 4), (3, 4, 5)))]),
    "getitem[int array]": (lambda a, i: a[:, i], lambda r, big: [normal(r, _sh(big, (2, 4), (6, 9))),
                                                                 np.array([[0, 2, 2], [-1, 0, 0]])]),
    "getitem[bool mask]": (lambda a, m: a[m], lambda r, big: [normal(r, _sh(big, (2, 4), (6, 9))),
                                                             r.random(_sh(big, (2, 4), (6, 9))) < 0.5]),
    "cat": (lambda a, b, c: tg.cat([a, b, c], dim=1), lambda r, big: [normal(r, _sh(big, (2, 1), (5, 2))),
                                                                    normal(r, _sh(big, (2, 3), (5, 6))),
                                                                    normal(r, _sh(big, (2, 2), (5, 3)))]),
    "stack": (lambda a, b: tg.stack([a, b], dim=-1), lambda r, big: [normal(r, _sh(big, (2, 3), (5, 6))),
                                                                    normal(r, _sh(big, (2, 3), (5, 6)))]),
    "split": (lambda a: a.split([1, 3, 1], dim=1)[1], lambda r, big: [normal(r, _sh(big, (2, 5), (12, 5)))]),
    "chunk": (lambda a: a.chunk(3, dim=0)[-1], lambda r, big: [normal(r, _sh(big, (5, 3), (14, 4)))]),
    "masked_fill": (lambda a, m: a.masked_fill(m, -2.0), lambda r, big: [normal(r, _sh(big, (2, 3), (6, 9))),
                                                                         r.random(_sh(big, (3,), (9,))) < 0.5]),
    "where": (lambda c, a, b: tg.where(c, a, b), lambda r, big: [r.random(_sh(big, (2, 1), (6, 1))) < 0.5,
                                                                 normal(r, _sh(big, (2, 3), (6, 9))),
                                                                 normal(r, (_sh(big, 3, 9),))]),
}


def _size(inputs):
    return sum(a.size for a in inputs if a.dtype == np.float64)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("big", [False, True], ids=["full-jacobian", "directional"])
@pytest.mark.parametrize("name", list(CASES))
def test_gradcheck_primitive(name, big, seed):
    fn, make = CASES[name]
    inputs = make(np.random.default_rng(seed), big)
    # each size really takes the intended path through gradcheck
    assert (_size(inputs) > FULL_JACOBIAN_MAX) == big, f"{name}: {_size(inputs)} elements"
    assert gradcheck(fn, inputs, seed=seed)


# ============================================================================ gradcheck catches wrong backwards

class SquareMissingFactor(ArrayFunction):
    """y = x², with the factor 2 forgotten in the backward (deliberately wrong)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x


class MulWrongSecondGrad(ArrayFunction):
    """y = a * b whose backward returns g*a for *both* inputs (right for b, wrong for a)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * a, g * a


class TransposedMatmulGrad(ArrayFunction):
    """Y = A @ B with dL/dA = G @ B (B not transposed): right only for symmetric B."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g @ b, a.T @ g


@pytest.mark.parametrize("shape", [(2, 3), (8, 9)], ids=["full-jacobian", "directional"])
def test_gradcheck_catches_wrong_backwards(shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    with pytest.raises(GradcheckError, match="mismatch"):
        gradcheck(SquareMissingFactor.apply, [x])
    with pytest.raises(GradcheckError, match="mismatch"):
        gradcheck(MulWrongSecondGrad.apply, [x, rng.standard_normal(shape)])
    n = shape[1]
    with pytest.raises(GradcheckError, match="mismatch"):
        gradcheck(TransposedMatmulGrad.apply, [rng.standard_normal((shape[0], n)), rng.standard_normal((n, n))])
    # ... while the correct versions pass on the same inputs
    assert gradcheck(lambda t: t * t, [x])
    assert gradcheck(lambda a, b: a @ b, [rng.standard_normal((shape[0], n)), rng.standard_normal((n, n))])


def test_gradcheck_catches_an_error_in_a_single_jacobian_entry():
    """A backward that is wrong at one element only is still caught by the full Jacobian."""

    class OffByOneElement(ArrayFunction):
        @staticmethod
        def forward(ctx, x):
            return x * 3.0

        @staticmethod
        def backward(ctx, g):
            out = g * 3.0
            out.flat[-1] *= 1.001
            return out

    with pytest.raises(GradcheckError, match="output 5, input element 5"):
        gradcheck(OffByOneElement.apply, [np.linspace(-1, 1, 6).reshape(2, 3)])


def test_gradcheck_needs_a_float64_input():
    with pytest.raises(ValueError, match="float64"):
        gradcheck(lambda t: t * 2, [np.ones(3, dtype=np.float32)])
