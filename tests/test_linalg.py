"""linalg.det / slogdet / inv / solve (and torch's det, logdet, slogdet, inverse, Tensor methods)
against PyTorch (ops/linsolve.py).

* values and gradients with a random cotangent, batched, float64 (1e-10) and float32 (judged
  against torch's own float32 error), over hypothesis-drawn shapes and seeds;
* finite differences (``tinygrad_tx.autograd.gradcheck`` / ``gradgradcheck``) of every op;
* second derivatives (``create_graph=True``) against torch's, also at singular matrices for det;
* singular matrices: det 0 and torch's first and second gradients, slogdet's infinite gradient,
  inv / solve raising torch's LinAlgError text;
* argument errors with torch's class and message.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tinygrad_tx as tg
from reference.testing import DEVICE, check_double_parity, check_parity

DTYPES = pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
BATCHES = [(), (3,), (2, 2)]


def matrices(batch, n, seed, shift=2.0):
    """Well-conditioned random matrices (..., n, n): Gaussian plus shift·I (signs of det mixed)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + (n, n)) + shift * np.eye(n)
    flip = rng.random(batch) < 0.5
    a[flip] = -a[flip]
    return a


def T(a, requires_grad=False, dtype=torch.float64):
    return torch.tensor(np.asarray(a), dtype=dtype, device=DEVICE, requires_grad=requires_grad)


def G(a, requires_grad=False):
    return tg.tensor(np.asarray(a), requires_grad=requires_grad)


def npy(t):
    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


def same(ours, theirs, rtol=1e-10):
    o, t = npy(ours), npy(theirs)
    assert o.shape == t.shape, (o.shape, t.shape)
    np.testing.assert_allclose(o, t, rtol=rtol, atol=rtol * max(1.0, float(np.nanmax(np.abs(t), initial=0))))


def error_of(fn):
    try:
        fn()
    except Exception as e:   # noqa: BLE001 - the class and text are compared
        return e
    raise AssertionError("no error raised")


# ============================================================================ values and gradients

OPS = {
    "linalg.det": (lambda a: tg.linalg.det(a), lambda a: torch.linalg.det(a)),
    "det": (lambda a: tg.det(a), lambda a: torch.det(a)),
    "Tensor.det": (lambda a: a.det(), lambda a: a.det()),
    "linalg.slogdet": (lambda a: tg.linalg.slogdet(a).logabsdet, lambda a: torch.linalg.slogdet(a).logabsdet),
    "slogdet": (lambda a: tg.slogdet(a)[1], lambda a: torch.slogdet(a)[1]),
    "Tensor.slogdet": (lambda a: a.slogdet()[1], lambda a: a.slogdet()[1]),
    "linalg.inv": (lambda a: tg.linalg.inv(a), lambda a: torch.linalg.inv(a)),
    "inverse": (lambda a: tg.inverse(a), lambda a: torch.inverse(a)),
    "Tensor.inverse": (lambda a: a.inverse(), lambda a: a.inverse()),
}


@DTYPES
@pytest.mark.parametrize("op", sorted(OPS))
@given(batch=st.sampled_from(BATCHES), n=st.integers(1, 5), seed=st.integers(0, 2**31 - 1))
def test_square_ops_values_and_gradients(op, dtype, batch, n, seed):
    ours, theirs = OPS[op]
    check_parity(ours, theirs, matrices(batch, n, seed), dtype=dtype, name=op, seed=seed)


@DTYPES
@given(batch=st.sampled_from(BATCHES), n=st.integers(1, 5), seed=st.integers(0, 2**31 - 1))
def test_logdet_values_and_gradients(dtype, batch, n, seed):
    """logdet of matrices with a positive determinant (a negative one is NaN, below)."""
    a = matrices(batch, n, seed)
    neg = np.linalg.det(a) < 0
    a[neg, 0, :] *= -1   # one row negated: the determinant changes sign
    assert (np.linalg.det(a) > 0).all()
    check_parity(lambda x: tg.logdet(x), lambda x: torch.logdet(x), a, dtype=dtype, name="logdet", seed=seed)
    check_parity(lambda x: x.logdet(), lambda x: x.logdet(), a, dtype=dtype, name="Tensor.logdet", seed=seed)


def test_slogdet_sign_and_logdet_of_negative_and_singular():
    for a in (matrices((4,), 3, 1), np.array([[1.0, 2], [2, 4]]), -np.eye(3), np.eye(3)):
        s, l = tg.linalg.slogdet(G(a))
        ts, tl_ = torch.linalg.slogdet(T(a))
        np.testing.assert_array_equal(npy(s), npy(ts))
        np.testing.assert_allclose(npy(l), npy(tl_), rtol=1e-12)
        np.testing.assert_allclose(npy(tg.logdet(G(a))), npy(torch.logdet(T(a))), rtol=1e-12)
    r = tg.slogdet(G(np.eye(2)))
    assert type(r).__name__ == "slogdet" and r._fields == ("sign", "logabsdet")
    assert type(tg.linalg.slogdet(G(np.eye(2)))).__name__ == "linalg_slogdet"
    # logdet of a negative determinant: NaN, and a zero gradient (torch's where)
    a = G(-np.eye(3), requires_grad=True)
    ta = T(-np.eye(3), requires_grad=True)
    tg.logdet(a).backward()
    torch.logdet(ta).backward()
    assert np.isnan(tg.logdet(a).item())
    np.testing.assert_array_equal(npy(a.grad), npy(ta.grad))


SOLVE_SHAPES = [  # (A shape, B shape, left)
    ((3, 3), (3,), True), ((3, 3), (3, 2), True), ((2, 3, 3), (2, 3), True), ((2, 3, 3), (3,), True),
    ((2, 3, 3), (3, 4), True), ((2, 1, 3, 3), (4, 3, 2), True), ((1, 1), (1,), True), ((2, 2, 2), (2, 2), True),
    ((3, 3), (5, 3), False), ((2, 4, 4), (2, 3, 4), False), ((4, 4), (2, 1, 4), False),
]


@DTYPES
@pytest.mark.parametrize("a_shape, b_shape, left", SOLVE_SHAPES, ids=str)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_solve_values_and_gradients(a_shape, b_shape, left, dtype, seed):
    a = matrices(a_shape[:-2], a_shape[-1], seed)
    b = np.random.default_rng(seed + 100).standard_normal(b_shape)
    check_parity(lambda x, y: tg.linalg.solve(x, y, left=left), lambda x, y: torch.linalg.solve(x, y, left=left),
                 a, b, dtype=dtype, name="linalg.solve", seed=seed)


def test_grad_fn_names_are_torch_s():
    a, ta = G(matrices((), 3, 0), True), T(matrices((), 3, 0), True)
    b, tb = G(np.ones(3)), T(np.ones(3))
    for ours, theirs in ((tg.linalg.det(a), torch.linalg.det(ta)), (tg.linalg.inv(a), torch.linalg.inv(ta)),
                         (tg.linalg.slogdet(a)[1], torch.linalg.slogdet(ta)[1]),
                         (tg.linalg.solve(a, b), torch.linalg.solve(ta, tb))):
        assert ours.grad_fn.name() == theirs.grad_fn.name()


def test_empty_matrices():
    for shape in ((0, 0), (3, 0, 0)):
        a = np.ones(shape)
        same(tg.linalg.det(G(a)), torch.linalg.det(T(a)))
        same(tg.linalg.inv(G(a)), torch.linalg.inv(T(a)))
        for o, t in zip(tg.linalg.slogdet(G(a)), torch.linalg.slogdet(T(a))):
            same(o, t)


# ============================================================================ finite differences

GRADCHECK = {
    "det": lambda a: tg.linalg.det(a), "slogdet": lambda a: tg.linalg.slogdet(a)[1],
    "inv": lambda a: tg.linalg.inv(a), "logdet": lambda a: tg.logdet(a @ a.mT),
}


@pytest.mark.parametrize("name", sorted(GRADCHECK))
@pytest.mark.parametrize("batch, n", [((), 1), ((), 3), ((2,), 4)])
def test_gradcheck_and_gradgradcheck(name, batch, n):
    a = G(matrices(batch, n, 7), requires_grad=True)
    assert tg.autograd.gradcheck(GRADCHECK[name], (a,))
    assert tg.autograd.gradgradcheck(GRADCHECK[name], (a,))


@pytest.mark.parametrize("a_shape, b_shape, left", SOLVE_SHAPES[:6] + SOLVE_SHAPES[-2:], ids=str)
def test_solve_gradcheck_and_gradgradcheck(a_shape, b_shape, left):
    a = G(matrices(a_shape[:-2], a_shape[-1], 3), requires_grad=True)
    b = G(np.random.default_rng(4).standard_normal(b_shape), requires_grad=True)

    def f(x, y):
        return tg.linalg.solve(x, y, left=left)
    assert tg.autograd.gradcheck(f, (a, b))
    assert tg.autograd.gradgradcheck(f, (a, b))


# ============================================================================ second derivatives vs torch

@DTYPES
@pytest.mark.parametrize("op", ["linalg.det", "linalg.slogdet", "linalg.inv"])
@pytest.mark.parametrize("batch, n", [((), 1), ((), 2), ((3,), 3), ((2, 1), 4)])
def test_second_derivatives_match_torch(op, batch, n, dtype):
    ours, theirs = OPS[op]
    check_double_parity(ours, theirs, matrices(batch, n, n + 11), dtype=dtype, name=op, seed=n)


@DTYPES
@pytest.mark.parametrize("a_shape, b_shape, left", SOLVE_SHAPES, ids=str)
def test_solve_second_derivatives_match_torch(a_shape, b_shape, left, dtype):
    a = matrices(a_shape[:-2], a_shape[-1], 5)
    b = np.random.default_rng(6).standard_normal(b_shape)
    check_double_parity(lambda x, y: tg.linalg.solve(x, y, left=left),
                        lambda x, y: torch.linalg.solve(x, y, left=left), a, b, dtype=dtype, name="linalg.solve")


# ============================================================================ singular matrices

SINGULAR = [  # exactly singular in both LU factorisations (NumPy's and torch's)
    [[1.0, 2], [2, 4]], [[0.0, 1], [0, 2]], [[0.0, 0], [0, 0]], [[0.0]],
    [[1.0, 2, 3], [4, 5, 6], [7, 8, 9]], [[0.0, 0, 1], [0, 0, 2], [3, 1, 1]], [[2.0, 1, 0], [4, 2, 0], [1, 1, 1]],
    [[[1.0, 2], [2, 4]], [[1.0, 2], [3, 4]]],
]


@pytest.mark.parametrize("a", SINGULAR, ids=str)
def test_det_of_singular_matrices_value_and_gradients_as_torch(a):
    """det 0; the first gradient torch's (0 where det is exactly 0, g for 1x1); with
    create_graph the cofactors (torch: via an SVD; here via the minors) and their derivatives."""
    a = np.array(a)
    rng = np.random.default_rng(0)
    v = rng.standard_normal(a.shape[:-2]) + 1.5
    w = rng.standard_normal(a.shape)
    x, tx = G(a, True), T(a, True)
    same(tg.linalg.det(x), torch.linalg.det(tx), rtol=0)
    (g1,), (tg1,) = tg.autograd.grad(tg.linalg.det(x), x, G(v)), torch.autograd.grad(torch.linalg.det(tx), tx, T(v))
    same(g1, tg1, rtol=0)
    (g2,) = tg.autograd.grad(tg.linalg.det(x), x, G(v), create_graph=True)
    (tg2,) = torch.autograd.grad(torch.linalg.det(tx), tx, T(v), create_graph=True)
    same(g2, tg2, rtol=1e-12)
    if a.shape[-1] > 1:
        assert np.abs(npy(tg2)).max() > 0 or np.abs(a).max() == 0
    # the second derivative where torch's SVD-based one is defined (rank n-1, distinct singular values)
    s = np.linalg.svd(a, compute_uv=False)
    if a.shape[-1] > 1 and np.all(np.sum(s < 1e-12, axis=-1) == 1):
        (h,) = tg.autograd.grad((g2 * G(w)).sum(), x)
        (th,) = torch.autograd.grad((tg2 * T(w)).sum(), tx)
        same(h, th, rtol=1e-9)


@pytest.mark.parametrize("a", [s for s in SINGULAR if np.array(s).shape[-1] > 1], ids=str)
def test_slogdet_of_singular_matrices_as_torch(a):
    """sign 0, logabsdet -inf, and the gradient of logabsdet torch's LU solve gives (infinities,
    NaNs); with create_graph torch's solve raises, so does ours."""
    a = np.array(a)
    x, tx = G(a, True), T(a, True)
    s, l = tg.linalg.slogdet(x)
    ts, tl_ = torch.linalg.slogdet(tx)
    np.testing.assert_array_equal(npy(s), npy(ts))
    np.testing.assert_array_equal(npy(l), npy(tl_))
    v = np.full(a.shape[:-2], 1.5)
    (g,), (tgr,) = tg.autograd.grad(l, x, G(v)), torch.autograd.grad(tl_, tx, T(v))
    np.testing.assert_array_equal(npy(g), npy(tgr))
    if (npy(ts) == 0).any():
        e = error_of(lambda: tg.autograd.grad(tg.linalg.slogdet(x)[1], x, G(v), create_graph=True))
        te = error_of(lambda: torch.autograd.grad(torch.linalg.slogdet(tx)[1], tx, T(v), create_graph=True))
        assert isinstance(e, tg.linalg.LinAlgError) and isinstance(e, type(te).__mro__[1])
        assert str(e) == str(te).split("\n")[0]


@pytest.mark.cpu_only(reason="torch's LAPACK messages (CUDA's solvers word the singular case differently)")
@pytest.mark.parametrize("op", ["linalg.inv", "inverse", "Tensor.inverse", "solve"])
@pytest.mark.parametrize("a", [[[1.0, 2], [2, 4]], [[0.0, 0, 0], [1, 2, 3], [4, 5, 6]], np.zeros((2, 3, 3)),
                               np.concatenate([matrices((2,), 2, 0), [[[1.0, 2], [2, 4]]], matrices((1,), 2, 1)])],
                         ids=["2x2", "zero-row", "zeros-batch", "batch-element-2"])
def test_inv_and_solve_of_singular_matrices_raise_torch_s_error(op, a):
    a = np.array(a)
    b = np.ones(a.shape[:-1])
    call = {"linalg.inv": lambda M, x: M.linalg.inv(x), "inverse": lambda M, x: M.inverse(x),
            "Tensor.inverse": lambda M, x: x.inverse(),
            "solve": lambda M, x: M.linalg.solve(x, (G if M is tg else T)(b))}[op]
    e, te = error_of(lambda: call(tg, G(a))), error_of(lambda: call(torch, T(a)))
    assert isinstance(te, torch.linalg.LinAlgError) and isinstance(e, tg.linalg.LinAlgError)
    assert isinstance(e, RuntimeError) and str(e) == str(te)


def test_inv_error_text_is_torch_s():
    e = error_of(lambda: tg.linalg.inv(G([[1.0, 2], [2, 4]])))
    assert str(e) == ("linalg.inv: The diagonal element 2 is zero, the inversion could not be completed "
                      "because the input matrix is singular.")


# ============================================================================ argument errors

BAD = [  # (call on the library M, dtype)
    lambda M: M.linalg.det(M.ones(2, 3)), lambda M: M.linalg.det(M.ones(3)),
    lambda M: M.linalg.det(M.ones(2, 2, dtype=M.int64)), lambda M: M.linalg.det(M.ones(2, 2, dtype=M.float16)),
    lambda M: M.linalg.inv(M.ones(2, 3)), lambda M: M.linalg.inv(M.ones(3)),
    lambda M: M.linalg.inv(M.ones(2, 2, dtype=M.int64)), lambda M: M.linalg.inv(M.ones(2, 2, dtype=M.float16)),
    lambda M: M.inverse(M.ones(2, 3)), lambda M: M.det(M.ones(4)),
    lambda M: M.linalg.slogdet(M.ones(2, 3)), lambda M: M.linalg.slogdet(M.ones(2, 2, dtype=M.int32)),
    lambda M: M.logdet(M.ones(2, 3)), lambda M: M.logdet(M.ones(2, 2, dtype=M.float16)),
    lambda M: M.slogdet(M.ones(1)),
    lambda M: M.linalg.solve(M.ones(3, 3, dtype=M.float64), M.ones(3, dtype=M.float32)),
    lambda M: M.linalg.solve(M.eye(3), M.ones(4)), lambda M: M.linalg.solve(M.eye(3), M.ones(4, 2)),
    lambda M: M.linalg.solve(M.eye(3), M.ones(3), left=False), lambda M: M.linalg.solve(M.eye(3), M.ones(3, 5), left=False),
    lambda M: M.linalg.solve(M.eye(3), M.tensor(2.0)), lambda M: M.linalg.solve(M.ones(2, 3), M.ones(2)),
    lambda M: M.linalg.solve(M.ones(3, 3, dtype=M.int64), M.ones(3, dtype=M.int64)),
    lambda M: M.linalg.solve(M.ones(3), M.ones(3)), lambda M: M.linalg.solve(M.ones(2, 2, 2), M.ones(1, 2)),
    lambda M: M.linalg.solve(M.ones(2, 3, 3), M.ones(4, 3, 3)), lambda M: M.linalg.solve(M.eye(3), 2.0),
]


@pytest.mark.cpu_only(reason="the calls build torch's CPU tensors (M.ones): torch's CPU messages are the reference")
@pytest.mark.parametrize("i", range(len(BAD)))
def test_argument_errors_as_torch(i):
    te = error_of(lambda: BAD[i](torch))
    e = error_of(lambda: BAD[i](tg))
    assert isinstance(e, type(te)), (type(e), type(te), str(te))
    first = str(te).split("\n")[0]
    if "size of tensor a" in first:
        assert first in str(e)
    else:
        assert str(e) == first, (str(e), first)


def test_out_is_refused_with_a_clear_error():
    with pytest.raises(TypeError, match="out="):
        tg.linalg.inv(tg.eye(2), out=tg.zeros(2, 2))


def test_slogdet_sign_is_a_graph_node_without_gradient_as_torch_s():
    a = matrices((2,), 3, 5)
    (s, l), (ts, tl_) = tg.linalg.slogdet(G(a, True)), torch.linalg.slogdet(T(a, True))
    assert s.requires_grad == ts.requires_grad is True
    assert s.grad_fn.name() == ts.grad_fn.name() == "LinalgSlogdetBackward0"
    x, tx = G(a, True), T(a, True)
    assert tg.autograd.grad(tg.linalg.slogdet(x)[0].sum(), x, allow_unused=True) == (None,)
    assert torch.autograd.grad(torch.linalg.slogdet(tx)[0].sum(), tx, allow_unused=True) == (None,)
