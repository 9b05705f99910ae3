"""torch's fixed-rank products (mm, bmm, mv, dot, inner, outer/ger, addmm, addmv, baddbmm): values
and every gradient against PyTorch with a random cotangent, finite differences, rank errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tinygrad_tx as tg
from reference.testing import DEVICE, check_parity, to_numpy, to_torch

DTYPES = pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])

# name -> (call on a library T, argument shapes built from sizes n, k, m, b)
CASES = {
    "mm": (lambda T, a, b: T.mm(a, b), lambda n, k, m, b: [(n, k), (k, m)]),
    "bmm": (lambda T, a, b: T.bmm(a, b), lambda n, k, m, b: [(b, n, k), (b, k, m)]),
    "mv": (lambda T, a, v: a.mv(v), lambda n, k, m, b: [(n, k), (k,)]),
    "dot": (lambda T, a, v: T.dot(a, v), lambda n, k, m, b: [(k,), (k,)]),
    "inner": (lambda T, a, c: T.inner(a, c), lambda n, k, m, b: [(n, k), (m, k)]),
    "outer": (lambda T, a, v: T.outer(a, v), lambda n, k, m, b: [(n,), (m,)]),
    "ger": (lambda T, a, v: a.ger(v) if T is tg else T.outer(a, v), lambda n, k, m, b: [(n,), (m,)]),
    "addmm": (lambda T, c, a, b: T.addmm(c, a, b, beta=0.5, alpha=2.0), lambda n, k, m, b: [(m,), (n, k), (k, m)]),
    "addmv": (lambda T, c, a, v: T.addmv(c, a, v, alpha=-1.5), lambda n, k, m, b: [(n,), (n, k), (k,)]),
    "baddbmm": (lambda T, c, x, y: T.baddbmm(c, x, y, beta=2.0), lambda n, k, m, b: [(b, n, m), (b, n, k), (b, k, m)]),
}
sizes = st.tuples(*[st.integers(1, 5)] * 4)


@DTYPES
@pytest.mark.parametrize("name", sorted(CASES))
@given(size=sizes, seed=st.integers(0, 2**16))
def test_matmul_family_matches_torch(name, dtype, size, seed):
    f, shapes = CASES[name]
    rng = np.random.default_rng(seed)
    inputs = [rng.standard_normal(s) for s in shapes(*size)]
    check_parity(name, lambda *xs: f(tg, *xs), lambda *xs: f(torch, *xs), inputs, dtype, seed=seed)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matmul_family_finite_differences(name):
    f, shapes = CASES[name]
    rng = np.random.default_rng(1)
    assert tg.gradcheck(lambda *xs: f(tg, *xs), [rng.standard_normal(s) for s in shapes(2, 3, 4, 2)])


def test_rank_and_dtype_errors_as_torch():
    cases = [lambda T: T.mm(T.ones(2, 3, 4), T.ones(4, 2)), lambda T: T.bmm(T.ones(2, 3, 4), T.ones(3, 4, 2)),
             lambda T: T.mv(T.ones(2, 3), T.ones(3, 1)), lambda T: T.dot(T.ones(3), T.ones(3, dtype=T.float64)),
             lambda T: T.outer(T.ones(2, 2), T.ones(2))]
    for case in cases:
        with pytest.raises(RuntimeError):
            case(torch)
        with pytest.raises((ValueError, TypeError)):
            case(tg)


@pytest.mark.parametrize("sa, sb", [((2, 1, 0), (0,)), ((2, 3, 0), (0,)), ((2, 2, 0), (0, 5)), ((2, 0, 3), (3, 4))])
def test_batched_matmul_with_an_empty_inner_dimension_backward_like_torch(sa, sb):
    """Regression (fuzz, dev profile): a batched a (k = 0) @ a 1-D or 2-D b, then backward,
    raised NumPy's "cannot reshape array of size 0" (reshape(-1, 0) of the flattened batch);
    torch returns the gradients, zero-size or zero."""
    a, b = np.random.default_rng(0).standard_normal(sa), np.random.default_rng(1).standard_normal(sb)
    ta, tb = to_torch(a, requires_grad=True), to_torch(b, requires_grad=True)
    out = ta @ tb
    g = np.random.default_rng(2).standard_normal(tuple(out.shape))
    want = [to_numpy(w) for w in torch.autograd.grad(out, (ta, tb), to_torch(g))]
    oa, ob = tg.tensor(a, requires_grad=True), tg.tensor(b, requires_grad=True)
    (oa @ ob).backward(tg.tensor(g))
    for got, w in zip((oa.grad, ob.grad), want):
        assert got.shape == w.shape
        np.testing.assert_array_equal(got.numpy(), w)


@pytest.mark.parametrize("sa, sb", [((0,), (0,)), ((0,), (0, 3)), ((2, 0), (0,)), ((2, 1, 0), (0,))])
def test_empty_bool_matmul_raises_where_torch_does(sa, sb):
    """Regression (fuzz, thorough profile): empty bool 1-D @ 1-D returned False where torch's dot
    raises "not implemented for 'Bool'"; other empty bool products are empty results in both."""
    ta, tb = (torch.zeros(s, dtype=torch.bool, device=DEVICE) for s in (sa, sb))
    oa, ob = tg.zeros(sa, dtype=tg.bool), tg.zeros(sb, dtype=tg.bool)
    try:
        want = ta @ tb
    except (RuntimeError, NotImplementedError):
        with pytest.raises(RuntimeError, match="Bool"):
            oa @ ob
        with pytest.raises(RuntimeError, match="Bool"):
            tg.dot(oa, ob)
    else:
        assert (oa @ ob).shape == tuple(want.shape)
