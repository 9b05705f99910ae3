"""Reductions, scans, sorting and norms against PyTorch (ops/reduce.py, reduce_minmax.py,
scan.py, sort.py, linalg.py).

* hypothesis parity (values and every gradient, random cotangent, float64 and float32) for
  every differentiable op, ties and zeros drawn on purpose where the gradient rule is at
  stake (amax ties, prod/cumprod zeros, cummax ties);
* float64 finite differences (``gradcheck``) for every Function: Sum, NanSum, Mean, Var,
  Std, Prod, LogSumExp, MaxAll, SelectAlongDim, Amax, CumSum, CumProd, LogCumSumExp,
  CumExtreme, MedianAll, VectorNorm;
* exact comparison of integer outputs (indices, counts, insertion points);
* the argument and error rules (axis alias, dim=(), dtype=, int sums, bad dims, empty inputs).
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

import tinygrad_tx as tg
from tinygrad_tx import gradcheck
from tinygrad_tx import linalg as tl
from reference.testing import DEVICE, check_parity, to_torch
from tinygrad_tx.testing.strategies import dims_and_keepdim, non_contiguous, seeds, shapes, values

DTYPES = pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
layouts = st.booleans()


def arr(shape, seed, domain="real", layout=False, scale=1.0):
    a = values(shape, seed, domain, scale)
    return non_contiguous(a) if layout else a


def small_ints(shape, seed, lo=-2, hi=3):
    """Integer-valued floats: ties are frequent."""
    return np.random.default_rng(seed).integers(lo, hi, shape).astype(np.float64)


def with_zeros(a, seed, p=0.3):
    a = np.array(a, dtype=np.float64)
    a[np.random.default_rng(seed + 7).random(a.shape) < p] = 0.0
    return a


def one_dim(shape):
    """One dim of ``shape`` (0 or -1 for a 0-d shape, as torch accepts)."""
    return st.integers(-len(shape), len(shape) - 1) if shape else st.sampled_from([0, -1])


def shape_and_dims(min_dims=0, min_side=1, max_side=5):
    return shapes(min_dims=min_dims, min_side=min_side, max_side=max_side).flatmap(
        lambda s: dims_and_keepdim(len(s)).map(lambda dk: (s, dk[0], dk[1])))


def tg_t(a, dtype=None):
    return tg.Tensor(np.asarray(a) if dtype is None else np.asarray(a).astype(dtype))


def grad_of(t):
    return np.asarray(t.grad)


# ============================================================================ sum / mean / var / std

@DTYPES
@pytest.mark.parametrize("name", ["sum", "mean", "var", "std", "nansum", "nanmean"])
@given(case=shape_and_dims(min_side=2), seed=seeds, layout=layouts, empty=st.booleans())
def test_sum_mean_var_std_dims(name, dtype, case, seed, layout, empty):
    """dim None/int/tuple, negative, keepdim, and dim=() meaning every dim (torch's rule);
    ``axis=`` as the alias of ``dim=``."""
    shape, dim, keepdim = case
    if empty and dim is None:
        dim = ()
    x = arr(shape, seed, layout=layout)
    if name.startswith("nan") and x.size > 1:
        x = x.copy()
        x.flat[::3] = np.nan
    # torch's var/std backward with dim=() is inf (its forward reduces everything, its backward
    # reduces nothing): we give dim=None's gradient, the correct one
    ref_dim = None if dim == () and name in ("var", "std") else dim
    fn = lambda t: getattr(t, name)(dim=ref_dim, keepdim=keepdim)  # noqa: E731
    ours = lambda t: getattr(t, name)(axis=dim, keepdim=keepdim)  # noqa: E731
    check_parity(name, ours, fn, [x], dtype, seed=seed)


@DTYPES
@given(case=shape_and_dims(min_dims=1, min_side=2), seed=seeds, layout=layouts,
       correction=st.sampled_from([0, 1, 2, "unbiased=False"]))
def test_std_correction(dtype, case, seed, layout, correction):
    shape, dim, keepdim = case
    axes = range(len(shape)) if dim is None else ((dim,) if isinstance(dim, int) else dim)
    n = int(np.prod([shape[a] for a in axes]))
    x = arr(shape, seed, layout=layout, scale=2.0)
    if correction == "unbiased=False":
        ours = lambda t: t.std(dim, False, keepdim)  # noqa: E731
        ref = lambda t: t.std(dim, correction=0, keepdim=keepdim)  # noqa: E731
    else:
        c = min(correction, n - 1)
        ours = ref = lambda t: t.std(dim, correction=c, keepdim=keepdim)  # noqa: E731
    check_parity("std", ours, ref, [x], dtype, seed=seed)
    check_parity("std", lambda t: tg.std_mean(t, dim)[0] + tg.var_mean(t, dim)[1],
                 lambda t: torch.std_mean(t, dim)[0] + torch.var_mean(t, dim)[1], [x], dtype, seed=seed)


@DTYPES
def test_std_of_a_constant_slice_has_gradient_zero(dtype):
    """torch's subgradient: d std = 0 where std = 0 (not 0/0); var of one element is NaN."""
    x = np.array([[1.0, 1.0, 1.0], [0.0, 1.0, 3.0]])
    check_parity("std", lambda t: t.std(1), lambda t: t.std(1), [x], dtype)
    t = tg.Tensor(np.ones(3, dtype), requires_grad=True)
    t.std().backward()
    np.testing.assert_array_equal(grad_of(t), 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.tensor([2.0], dtype=torch.float64, device=DEVICE).std()
    assert np.isnan(tg_t([2.0]).std()._data) and np.isnan(ref.item())


def test_sum_dtypes_follow_torch():
    """bool/uint8/int32/int64 sums (and prods, cumsums) are int64; dtype= casts first; mean of
    ints raises unless dtype= is a float."""
    a = np.array([[1, 0, 3], [2, 5, 1]])
    for src in (np.bool_, np.uint8, np.int32, np.int64):
        x, ref = tg_t(a.astype(src)), torch.tensor(a.astype(src), device=DEVICE)
        for op in ("sum", "prod", "nansum"):
            ours, want = getattr(x, op)(), getattr(ref, op)()
            assert ours.dtype == np.int64 and str(want.dtype) == "torch.int64"
            assert ours.item() == want.item()
        np.testing.assert_array_equal(x.cumsum(1)._data, ref.cumsum(1).cpu().numpy())
        assert x.cumsum(0).dtype == np.int64 and x.cumprod(0).dtype == np.int64
        np.testing.assert_array_equal(x.sum(1, keepdim=True)._data, ref.sum(1, keepdim=True).cpu().numpy())
    x = tg_t(a)
    assert x.sum(dtype=tg.float64).dtype == np.float64 and x.sum(dtype=np.int32).dtype == np.int32
    assert x.mean(dtype=np.float64).item() == torch.tensor(a, device=DEVICE).mean(dtype=torch.float64).item()
    with pytest.raises(TypeError, match="mean"):
        x.mean()
    with pytest.raises(RuntimeError):
        torch.tensor(a, device=DEVICE).mean()
    f = tg.Tensor(np.arange(6.0, dtype=np.float32), requires_grad=True)
    y = f.sum(dtype=np.float64)
    assert y.dtype == np.float64
    y.backward()
    assert grad_of(f).dtype == np.float32 and np.all(grad_of(f) == 1)
    assert tg_t(np.arange(4.0, dtype=np.float32)).cumsum(0, dtype=float).dtype == np.float64


# ============================================================================ prod / logsumexp

@DTYPES
@given(shape=shapes(), seed=seeds, layout=layouts, data=st.data())
def test_prod(dtype, shape, seed, layout, data):
    """prod over all or one dim, zeros drawn (none, one or several per slice)."""
    x = with_zeros(arr(shape, seed, "away_from_zero", layout), seed, data.draw(st.sampled_from([0.0, 0.2, 0.5])))
    dim = data.draw(st.one_of(st.none(), one_dim(shape)), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    fn = (lambda t: t.prod()) if dim is None else (lambda t: t.prod(dim, keepdim))
    check_parity("prod", fn, fn, [x], dtype, seed=seed, allow_zero_grad=(0,))


def test_prod_gradient_of_a_subnormal_product():
    """625 factors in [0.1, 2): the float32 product is subnormal (~2e-40, 15 bits). The gradient
    g · (y / x) stays as accurate as torch's (3.0e-5 here); (g · y) / x rounded g · y at subnormal
    precision again: 2.7e-4, 9x torch's (a fresh dev-profile run's draw, seed 420787)."""
    x = arr((5, 5, 5, 5), 420787, "away_from_zero", False)
    assert 0 < abs(np.prod(x)) < np.finfo(np.float32).tiny
    errs = check_parity("prod", lambda t: t.prod(), lambda t: t.prod(), [x], np.float32, seed=420787)
    assert errs["ours"] <= 1.5 * errs["torch"]


@DTYPES
def test_prod_gradient_with_zeros(dtype):
    """One zero: only it gets the product of the others; two zeros: all zero."""
    x = np.array([[2.0, 0.0, 3.0, -1.5], [1.0, 2.0, 3.0, 4.0], [0.0, 5.0, 0.0, 2.0]])
    check_parity("prod", lambda t: t.prod(1), lambda t: t.prod(1), [x], dtype)
    t = tg.Tensor(x.astype(dtype), requires_grad=True)
    t.prod(1).backward(np.ones(3, dtype))
    np.testing.assert_allclose(grad_of(t), [[0, -9, 0, 0], [24, 12, 8, 6], [0, 0, 0, 0]])
    check_parity("prod", lambda t: t.prod(), lambda t: t.prod(), [x[:2, 1:]], dtype)


@DTYPES
@given(case=shape_and_dims(), seed=seeds, layout=layouts)
def test_logsumexp(dtype, case, seed, layout):
    shape, dim, keepdim = case
    dim = (tuple(range(len(shape))) or 0) if dim is None else dim
    x = arr(shape, seed, layout=layout, scale=3.0)
    check_parity("logsumexp", lambda t: t.logsumexp(dim, keepdim), lambda t: t.logsumexp(dim, keepdim), [x], dtype,
                 seed=seed)
    check_parity("logsumexp", lambda t: tg.logsumexp(t, axis=dim), lambda t: torch.logsumexp(t, dim), [np.asarray(x + 500.0)],
                 dtype, seed=seed)


@DTYPES
def test_logsumexp_infinite_rows(dtype):
    """A row of -inf gives -inf (and NaN gradients), a row with +inf gives +inf, as torch."""
    x = np.array([[-np.inf, -np.inf], [np.inf, 1.0], [1.0, 2.0], [np.nan, 0.0]])
    ours = tg.Tensor(x.astype(dtype), requires_grad=True)
    ref = to_torch(x.astype(dtype), requires_grad=True)
    g = np.array([1.0, -2.0, 0.5, 1.0], dtype)
    y, yr = ours.logsumexp(1), ref.logsumexp(1)
    np.testing.assert_array_equal(y._data, yr.detach().cpu().numpy())
    y.backward(g)
    yr.backward(to_torch(g))
    np.testing.assert_allclose(grad_of(ours), ref.grad.cpu().numpy(), rtol=1e-6, equal_nan=True)
    e = np.zeros((2, 0), dtype)
    np.testing.assert_array_equal(tg_t(e).logsumexp(1)._data, torch.tensor(e, device=DEVICE).logsumexp(1).cpu().numpy())
    assert tg_t(np.arange(3)).logsumexp(0).dtype == np.float32


# ============================================================================ max / min / amax / amin

@DTYPES
@pytest.mark.parametrize("mode", ["amax", "amin"])
@given(case=shape_and_dims(max_side=4), seed=seeds, layout=layouts, empty=st.booleans())
def test_amax_amin_ties_share_the_gradient(mode, dtype, case, seed, layout, empty):
    shape, dim, keepdim = case
    x = small_ints(shape, seed)
    x = non_contiguous(x) if layout else x
    d = () if empty and dim is None else dim
    fn = (lambda t: getattr(t, mode)(keepdim=keepdim)) if d is None else (lambda t: getattr(t, mode)(d, keepdim))
    check_parity(mode, fn, fn, [x], dtype, seed=seed)
    check_parity(mode, lambda t: getattr(tg, mode)(t, axis=d), lambda t: getattr(torch, mode)(t, dim=() if d is None else d),
                 [x], dtype, seed=seed)


@DTYPES
@given(shape=shapes(min_dims=1), seed=seeds, data=st.data())
def test_aminmax_and_argmax(dtype, shape, seed, data):
    x = small_ints(shape, seed)
    dim = data.draw(st.one_of(st.none(), one_dim(shape)), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    for k in (0, 1):
        check_parity("aminmax", lambda t: t.aminmax(dim=dim, keepdim=keepdim)[k],
                     lambda t: t.aminmax(dim=dim, keepdim=keepdim)[k], [x], dtype, seed=seed)
    ours, ref = tg_t(x, dtype), torch.tensor(x.astype(dtype), device=DEVICE)
    for op in ("argmax", "argmin"):
        o = getattr(ours, op)(dim, keepdim) if dim is not None else getattr(ours, op)(keepdim=keepdim)
        r = getattr(ref, op)(dim, keepdim) if dim is not None else getattr(ref, op)(keepdim=keepdim)
        assert o.dtype == np.int64 and o.shape == tuple(r.shape)
        np.testing.assert_array_equal(o._data, r.cpu().numpy())
    assert ours.aminmax().min.item() == ref.aminmax().min.item()


@DTYPES
def test_max_with_nan_routes_the_gradient_to_the_nan(dtype):
    x = np.array([[1.0, np.nan, 3.0, np.nan], [3.0, 2.0, 3.0, -1.0]])
    for op, kw in (("max", {}), ("min", {}), ("max", {"dim": 1}), ("min", {"dim": 0}), ("amax", {"dim": 1}),
                   ("amax", {})):
        ours = tg.Tensor(x.astype(dtype), requires_grad=True)
        ref = to_torch(x.astype(dtype), requires_grad=True)
        y, yr = getattr(ours, op)(**kw), getattr(ref, op)(**kw)
        if "dim" in kw and op != "amax":
            np.testing.assert_array_equal(y.indices._data, yr.indices.cpu().numpy())
            y, yr = y.values, yr.values
        np.testing.assert_array_equal(y._data, yr.detach().cpu().numpy())
        g = np.arange(1.0, 1.0 + y._data.size, dtype=dtype).reshape(y.shape)
        y.backward(g)
        yr.backward(to_torch(g))
        np.testing.assert_array_equal(grad_of(ours), ref.grad.cpu().numpy())


def test_logical_reductions_and_counts():
    a = np.array([[0.0, 1.0, 2.0], [3.0, 0.0, 0.0]])
    ours, ref = tg_t(a), torch.tensor(a, device=DEVICE)
    for op in ("all", "any"):
        for args, kw in (((), {}), ((1,), {}), ((), {"dim": (0, 1)}), ((0,), {"keepdim": True})):
            o, r = getattr(ours, op)(*args, **kw), getattr(ref, op)(*args, **kw)
            assert o.dtype == np.bool_ and o.shape == tuple(r.shape)
            np.testing.assert_array_equal(o._data, r.cpu().numpy())
        u = getattr(tg_t(a.astype(np.uint8)), op)(1)
        assert u.dtype == np.uint8
        np.testing.assert_array_equal(getattr(tg, op)(ours, axis=1)._data, getattr(ref, op)(1).numpy())
    for kw in ({}, {"dim": 1}, {"dim": (0, 1)}, {"dim": ()}):
        o, r = ours.count_nonzero(**kw), ref.count_nonzero(**kw)
        assert o.dtype == np.int64
        np.testing.assert_array_equal(o._data, r.cpu().numpy())
    e = np.zeros((2, 0))
    np.testing.assert_array_equal(tg_t(e).all(1)._data, torch.tensor(e, device=DEVICE).all(1).cpu().numpy())
    np.testing.assert_array_equal(tg_t(e).prod(1)._data, torch.tensor(e, device=DEVICE).prod(1).cpu().numpy())


# ============================================================================ scans

@DTYPES
@pytest.mark.parametrize("name", ["cumsum", "cumprod", "logcumsumexp"])
@given(shape=shapes(), seed=seeds, layout=layouts, data=st.data())
def test_scans(name, dtype, shape, seed, layout, data):
    dim = data.draw(one_dim(shape), label="dim")
    if name == "cumprod":   # near 1 in size (no overflow), zeros drawn
        x = arr(shape, seed, "positive", layout) * 0.6 * np.sign(arr(shape, seed + 1))
        x = with_zeros(x, seed, data.draw(st.sampled_from([0.0, 0.25])))
    else:
        x = arr(shape, seed, layout=layout, scale=2.0)
    check_parity(name, lambda t: getattr(t, name)(dim), lambda t: getattr(t, name)(dim), [x], dtype, seed=seed,
                 allow_zero_grad=(0,) if name == "cumprod" else ())
    check_parity(name, lambda t: getattr(tg, name)(t, axis=dim), lambda t: getattr(torch, name)(t, dim), [x], dtype,
                 seed=seed + 1, allow_zero_grad=(0,) if name == "cumprod" else ())


@DTYPES
def test_cumprod_gradient_with_zeros(dtype):
    x = np.array([[2.0, 0.0, 3.0, 0.0, 5.0], [2.0, 3.0, 0.0, 4.0, 1.5], [0.0, 2.0, 3.0, 4.0, 5.0]])
    check_parity("cumprod", lambda t: t.cumprod(1), lambda t: t.cumprod(1), [x], dtype)
    t = tg.Tensor(x.astype(dtype), requires_grad=True)
    t.cumprod(1).backward(np.ones(x.shape, dtype))
    np.testing.assert_allclose(grad_of(t)[0], [1.0, 8.0, 0.0, 0.0, 0.0])


@DTYPES
@pytest.mark.parametrize("mode", ["cummax", "cummin"])
@given(shape=shapes(min_dims=1), seed=seeds, nan=st.booleans(), data=st.data())
def test_cummax_cummin(mode, dtype, shape, seed, nan, data):
    """Ties move the index to the latest position (torch's rule): indices compared exactly;
    the gradient is scattered (added) to them."""
    dim = data.draw(one_dim(shape), label="dim")
    x = small_ints(shape, seed)
    if nan and x.size > 2:
        x.flat[x.size // 2] = np.nan
    check_parity(mode, lambda t: getattr(t, mode)(dim).values, lambda t: getattr(t, mode)(dim).values, [x], dtype,
                 seed=seed)
    ours, ref = getattr(tg_t(x, dtype), mode)(dim), getattr(torch.tensor(x.astype(dtype), device=DEVICE), mode)(dim)
    assert ours.indices.dtype == np.int64
    np.testing.assert_array_equal(ours.indices._data, ref.indices.cpu().numpy())
    np.testing.assert_array_equal(ours.values._data, ref.values.cpu().numpy())


# ============================================================================ sorting

@DTYPES
@given(shape=shapes(), seed=seeds, layout=layouts, descending=st.booleans(), ties=st.booleans(),
       data=st.data())
def test_sort_argsort_msort(dtype, shape, seed, layout, descending, ties, data):
    """Values always; indices exactly with stable=True (ties included) and NaNs."""
    dim = data.draw(one_dim(shape), label="dim")
    x = small_ints(shape, seed) if ties else arr(shape, seed, "distinct")
    if ties and x.size > 3:
        x.flat[1] = np.nan
    x = non_contiguous(x) if layout else x
    fn = lambda t: t.sort(dim, descending=descending).values  # noqa: E731
    check_parity("sort", fn, fn, [x], dtype, seed=seed)
    ours = tg.sort(tg_t(x, dtype), dim, descending, stable=True)
    ref = torch.sort(torch.tensor(x.astype(dtype), device=DEVICE), dim=dim, descending=descending, stable=True)
    np.testing.assert_array_equal(ours.indices._data, ref.indices.cpu().numpy())
    np.testing.assert_array_equal(ours[0]._data, ref.values.cpu().numpy())
    np.testing.assert_array_equal(tg_t(x).argsort(dim, descending, stable=True)._data,
                                  torch.tensor(x, device=DEVICE).argsort(dim=dim, descending=descending, stable=True).cpu().numpy())
    if shape:
        check_parity("msort", lambda t: t.msort(), lambda t: torch.msort(t), [x], dtype, seed=seed)


@DTYPES
@given(shape=shapes(min_dims=1), seed=seeds, largest=st.booleans(), data=st.data())
def test_topk_kthvalue(dtype, shape, seed, largest, data):
    """Distinct values: torch's indices are defined, compared exactly."""
    dim = data.draw(one_dim(shape), label="dim")
    n = shape[dim]
    k = data.draw(st.integers(1, n), label="k")
    x = arr(shape, seed, "distinct")
    check_parity("topk", lambda t: t.topk(k, dim, largest).values, lambda t: t.topk(k, dim, largest).values, [x],
                 dtype, seed=seed)
    o, r = tg_t(x, dtype).topk(k, dim=dim, largest=largest), torch.tensor(x.astype(dtype), device=DEVICE).topk(k, dim, largest)
    np.testing.assert_array_equal(o.indices._data, r.indices.cpu().numpy())
    keepdim = data.draw(st.booleans(), label="keepdim")
    check_parity("kthvalue", lambda t: t.kthvalue(k, dim, keepdim).values,
                 lambda t: t.kthvalue(k, dim, keepdim).values, [x], dtype, seed=seed)
    o, r = tg.kthvalue(tg_t(x, dtype), k, dim, keepdim), torch.kthvalue(torch.tensor(x.astype(dtype), device=DEVICE), k, dim, keepdim)
    np.testing.assert_array_equal(o.indices._data, r.indices.cpu().numpy())


@DTYPES
@given(shape=shapes(min_dims=1), seed=seeds, data=st.data())
def test_median_mode(dtype, shape, seed, data):
    dim = data.draw(one_dim(shape), label="dim")
    keepdim = data.draw(st.booleans(), label="keepdim")
    x = arr(shape, seed, "distinct")
    check_parity("median", lambda t: t.median(dim, keepdim).values, lambda t: t.median(dim, keepdim).values, [x],
                 dtype, seed=seed)
    o, r = tg_t(x, dtype).median(dim, keepdim), torch.tensor(x.astype(dtype), device=DEVICE).median(dim, keepdim)
    np.testing.assert_array_equal(o.indices._data, r.indices.cpu().numpy())
    ties = small_ints(shape, seed, 0, 3)
    check_parity("median", lambda t: t.median(), lambda t: t.median(), [ties], dtype, seed=seed)
    check_parity("mode", lambda t: t.mode(dim, keepdim).values, lambda t: t.mode(dim, keepdim).values, [ties], dtype,
                 seed=seed)
    o, r = tg.mode(tg_t(ties, dtype), dim, keepdim), torch.mode(torch.tensor(ties.astype(dtype), device=DEVICE), dim, keepdim)
    np.testing.assert_array_equal(o.indices._data, r.indices.cpu().numpy())
    np.testing.assert_array_equal(o.values._data, r.values.cpu().numpy())


def test_sort_family_edge_cases():
    """0-d inputs, NaN in median, empty inputs, ints, and the named-tuple results."""
    s = tg_t(np.float64(3.0)).sort()
    assert type(s).__name__ == "sort" and s.values.shape == () and s.indices.item() == 0
    values, indices = tg_t(np.array([2.0, 1.0])).sort()
    np.testing.assert_array_equal(indices._data, [1, 0])
    assert tg_t(np.float64(3.0)).topk(1).values.shape == ()
    assert tg_t(np.float64(3.0)).median(0).indices.item() == 0
    x = np.array([3.0, 1.0, 3.0, np.nan, 2.0, 1.0, 3.0])
    assert np.isnan(tg_t(x).median().item()) and np.isnan(torch.tensor(x, device=DEVICE).median().item())
    assert tg_t(x).median(0).indices.item() == torch.tensor(x, device=DEVICE).median(0).indices.item()
    assert np.isnan(tg_t(np.zeros(0)).median().item())
    i = np.array([[2, 1, 2, 1], [5, 5, 4, 4]])
    np.testing.assert_array_equal(tg_t(i).median(1).values._data, torch.tensor(i, device=DEVICE).median(1).values.cpu().numpy())
    np.testing.assert_array_equal(tg_t(i).topk(2).values._data, torch.tensor(i, device=DEVICE).topk(2).values.cpu().numpy())
    assert tg_t(i).median().item() == torch.tensor(i, device=DEVICE).median().item()
    e = tg_t(np.zeros((0, 2))).topk(0, dim=0)
    assert e.values.shape == (0, 2) and e.indices.dtype == np.int64
    assert tg_t(np.zeros(0)).sort().indices.shape == (0,)
    b = np.array([True, False, True])
    np.testing.assert_array_equal(tg_t(b).sort().indices._data, torch.tensor(b, device=DEVICE).sort(stable=True).indices.cpu().numpy())


def test_unique_searchsorted_bucketize():
    cases = [np.array([3, 1, 3, 2]), np.array([[3, 1], [2, 2]]), np.array([3.0, np.nan, 1.0, np.nan]),
             np.array(3), np.zeros(0)]
    for a in cases:
        for inv in (False, True):
            for cnt in (False, True):
                o = tg.unique(tg_t(a), return_inverse=inv, return_counts=cnt)
                r = torch.unique(torch.tensor(a, device=DEVICE), return_inverse=inv, return_counts=cnt)
                o, r = (o, r) if isinstance(r, tuple) else ((o,), (r,))
                assert len(o) == len(r)
                for u, v in zip(o, r):
                    assert u.shape == tuple(v.shape)
                    np.testing.assert_array_equal(u._data, v.numpy())
    m = np.array([[2, 1, 2, 1], [5, 5, 4, 4]])
    for d in (0, 1):
        o = tg_t(m).unique(dim=d, return_inverse=True, return_counts=True)
        r = torch.tensor(m, device=DEVICE).unique(dim=d, return_inverse=True, return_counts=True)
        for u, v in zip(o, r):
            np.testing.assert_array_equal(u._data, v.numpy())
    seq, vals = np.array([1.0, 2.0, 3.0, 3.0, 5.0]), np.array([[3.0, 0.0], [6.0, 2.5]])
    for kw in ({}, {"right": True}, {"side": "right"}, {"out_int32": True}):
        o = tg.searchsorted(tg_t(seq), tg_t(vals), **kw)
        r = torch.searchsorted(torch.tensor(seq, device=DEVICE), torch.tensor(vals, device=DEVICE), **kw)
        assert o.dtype == (np.int32 if kw.get("out_int32") else np.int64)
        np.testing.assert_array_equal(o._data, r.cpu().numpy())
        b = {k: v for k, v in kw.items() if k != "side"}
        np.testing.assert_array_equal(tg.bucketize(tg_t(vals), tg_t(seq), **b)._data,
                                      torch.bucketize(torch.tensor(vals, device=DEVICE), torch.tensor(seq, device=DEVICE), **b).cpu().numpy())
    rows, q = np.array([[1.0, 2.0, 3.0], [0.0, 5.0, 9.0]]), np.array([[2.5, 0.0], [6.0, 9.0]])
    np.testing.assert_array_equal(tg.searchsorted(tg_t(rows), tg_t(q))._data,
                                  torch.searchsorted(torch.tensor(rows, device=DEVICE), torch.tensor(q, device=DEVICE)).cpu().numpy())
    unsorted, order = np.array([3.0, 1.0, 2.0]), np.array([1, 2, 0])
    assert tg.searchsorted(tg_t(unsorted), tg_t(np.array([2.0])), sorter=tg_t(order)).item() == \
        torch.searchsorted(torch.tensor(unsorted, device=DEVICE), torch.tensor([2.0], device=DEVICE), sorter=torch.tensor(order, device=DEVICE)).item()
    assert tg.bucketize(3.0, tg_t(seq)).item() == torch.bucketize(3.0, torch.tensor(seq, device=DEVICE)).item()


# ============================================================================ norms

ORDS = [2, 1, math.inf, -math.inf, 3, 0.5, -1.5]


@DTYPES
@pytest.mark.parametrize("ord", ORDS, ids=[str(o) for o in ORDS])
@given(case=shape_and_dims(), seed=seeds, layout=layouts)
def test_vector_norm(ord, dtype, case, seed, layout):
    shape, dim, keepdim = case
    x = arr(shape, seed, "away_from_zero" if ord < 1 else "distinct", layout)
    fn = lambda t: (tl if isinstance(t, tg.Tensor) else torch.linalg).vector_norm(t, ord, dim, keepdim)  # noqa: E731
    check_parity("vector_norm", fn, fn, [x], dtype, seed=seed)


@DTYPES
def test_vector_norm_at_zero_and_ord_zero(dtype):
    """torch's subgradients at the origin (0 for every ord), ord=0 counts without gradient."""
    x = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 0.0], [2.0, -2.0, 1.0]])
    for ord in ORDS:
        check_parity("vector_norm", lambda t: (tl if isinstance(t, tg.Tensor) else torch.linalg).vector_norm(t, ord, 1),
                     lambda t: torch.linalg.vector_norm(t, ord, 1), [x], dtype)
    t = tg.Tensor(x.astype(dtype), requires_grad=True)
    y = tl.vector_norm(t, 0, dim=1)
    np.testing.assert_array_equal(y._data, torch.linalg.vector_norm(torch.tensor(x, device=DEVICE), 0, dim=1).cpu().numpy())
    y.backward(np.ones(3, dtype))
    assert t.grad is None
    assert tl.vector_norm(tg_t(np.zeros(0, dtype))).item() == 0.0


@DTYPES
@given(shape=shapes(min_dims=2, max_dims=3), seed=seeds, data=st.data())
def test_matrix_norm_and_norm(dtype, shape, seed, data):
    x = arr(shape, seed, "distinct")
    ord = data.draw(st.sampled_from(["fro", 1, -1, math.inf, -math.inf]), label="ord")
    n = len(shape)
    dims = tuple(data.draw(st.permutations(range(n)), label="dims")[:2])
    keepdim = data.draw(st.booleans(), label="keepdim")
    if ord in (1, -1, math.inf, -math.inf):
        # max/min over the column (row) sums of |x|: a kink where two sums tie. In float32 two sums
        # 1 ulp apart pick different columns in float32 and in the float64 oracle (the gradient
        # then lands on another column: error 0.5, seed 83820, ord -1); draw away from the tie
        sums = np.sort(np.abs(x).sum(axis=dims[0] if ord in (1, -1) else dims[1]), axis=None)
        assume(sums.size < 2 or np.min(np.diff(sums)) > 1e-3 * np.max(np.abs(sums)))
    check_parity("matrix_norm", lambda t: tl.matrix_norm(t, ord, dims, keepdim),
                 lambda t: torch.linalg.matrix_norm(t, ord, dims, keepdim), [x], dtype, seed=seed)
    check_parity("linalg.norm", lambda t: tl.norm(t, None, dims[0], keepdim),
                 lambda t: torch.linalg.norm(t, None, dims[0], keepdim), [x], dtype, seed=seed)
    check_parity("linalg.norm", lambda t: tl.norm(t), lambda t: torch.linalg.norm(t), [x], dtype, seed=seed)
    if n == 2:
        check_parity("linalg.norm", lambda t: tl.norm(t, ord), lambda t: torch.linalg.norm(t, ord), [x], dtype,
                     seed=seed)
    p = data.draw(st.sampled_from(["fro", 2, 1, 3, math.inf]), label="p")
    d = data.draw(st.sampled_from([None, dims[0], dims]), label="dim")
    check_parity("norm", lambda t: t.norm(p, d, keepdim), lambda t: t.norm(p, d, keepdim), [x], dtype, seed=seed)
    check_parity("norm", lambda t: tg.norm(t, p=p, dim=d), lambda t: torch.norm(t, p=p, dim=d), [x], dtype, seed=seed)


def test_norm_dtypes_and_errors():
    x32 = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    assert tl.vector_norm(tg_t(x32), dtype=tg.float64).dtype == np.float64
    assert tg_t(x32).norm(dtype=np.float64).dtype == np.float64
    for ours, ref in [
        (lambda: tl.vector_norm(tg_t(np.arange(3))), lambda: torch.linalg.vector_norm(torch.arange(3, device=DEVICE))),
        (lambda: tl.vector_norm(tg_t(x32.astype(np.float64)), dtype=np.float32),
         lambda: torch.linalg.vector_norm(torch.tensor(x32, dtype=torch.float64, device=DEVICE), dtype=torch.float32)),
        (lambda: tl.vector_norm(tg_t(x32), ord="fro"), lambda: torch.linalg.vector_norm(torch.tensor(x32, device=DEVICE), ord="fro")),
    ]:
        with pytest.raises((RuntimeError, TypeError)):
            ref()
        with pytest.raises(TypeError):
            ours()
    for ours, ref in [
        (lambda: tl.matrix_norm(tg_t(np.ones(3))), lambda: torch.linalg.matrix_norm(torch.ones(3, device=DEVICE))),
        (lambda: tl.matrix_norm(tg_t(x32), ord=3), lambda: torch.linalg.matrix_norm(torch.tensor(x32, device=DEVICE), ord=3)),
        (lambda: tl.norm(tg_t(np.ones((2, 2, 2))), 1), lambda: torch.linalg.norm(torch.ones(2, 2, 2, device=DEVICE), 1)),
        (lambda: tg_t(np.ones((2, 2, 2))).norm("fro", (0, 1, 2)), lambda: torch.ones(2, 2, 2, device=DEVICE).norm("fro", (0, 1, 2))),
        (lambda: tl.vector_norm(tg_t(np.zeros(0)), -1), lambda: torch.linalg.vector_norm(torch.zeros(0, device=DEVICE), -1)),
        (lambda: tl.vector_norm(tg_t(np.zeros(0)), math.inf),
         lambda: torch.linalg.vector_norm(torch.zeros(0, device=DEVICE), math.inf)),
    ]:
        with pytest.raises(RuntimeError):
            ref()
        with pytest.raises(ValueError):
            ours()
    with pytest.raises(NotImplementedError, match="singular"):
        tg_t(x32).norm("nuc")


# ============================================================================ argument rules and errors

def test_dim_arguments_follow_torch():
    x = np.arange(6.0).reshape(2, 3)
    ours, ref = tg_t(x), torch.tensor(x, device=DEVICE)
    for op in ("sum", "mean", "std", "var", "amax", "amin", "argmax", "argmin", "prod", "all", "any",
               "logsumexp", "cumsum", "cumprod", "count_nonzero", "nansum", "nanmean", "logcumsumexp"):
        o, r = getattr(ours, op)(axis=1), getattr(ref, op)(axis=1)
        np.testing.assert_allclose(np.asarray(o._data, np.float64), r.cpu().numpy().astype(np.float64))
    for op in ("max", "min"):
        o, r = getattr(ours, op)(axis=0, keepdim=True), getattr(ref, op)(axis=0, keepdim=True)
        assert type(o).__name__ == op
        np.testing.assert_array_equal(o.indices._data, r.indices.cpu().numpy())
        np.testing.assert_array_equal(getattr(tg, op)(ours, 1).values._data, getattr(torch, op)(ref, 1).values.cpu().numpy())
    np.testing.assert_array_equal(tg.max(ours, ours)._data, torch.max(ref, ref).cpu().numpy())
    for op in ("sum", "mean", "var", "std", "amax", "count_nonzero"):   # () and [] reduce everything
        for d in ((), []):
            np.testing.assert_allclose(getattr(ours, op)(dim=d)._data, getattr(ref, op)(dim=d).numpy())
    np.testing.assert_array_equal(ours.var(True)._data, ref.var(True).cpu().numpy())
    np.testing.assert_array_equal(ours.argmax(keepdim=True)._data, ref.argmax(keepdim=True).cpu().numpy())


ERRORS = [   # (ours, torch, the class we raise): where torch raises, we raise
    ("x.sum(1.5)", TypeError), ("x.mean(True)", TypeError), ("x.max((0, 1))", TypeError),
    ("x.prod((0, 1))", TypeError), ("x.argmax(dim=(0, 1))", TypeError), ("x.amax(1.5)", TypeError),
    ("x.all(1.5)", TypeError), ("x.sum(dim=1, axis=1)", TypeError), ("x.topk(1.5)", TypeError),
    ("x.sort(descending=1)", TypeError), ("x.logsumexp()", TypeError), ("x.cumsum()", TypeError),
    ("x.sum(2)", IndexError), ("x.var(-3)", IndexError), ("x.max(5)", IndexError), ("x.sort(5)", IndexError),
    ("x.cumsum(2)", IndexError), ("x.topk(2, dim=3)", IndexError), ("x.topk(4)", IndexError), ("x.topk(-1)", IndexError),
    ("x.kthvalue(0)", IndexError), ("x.kthvalue(4)", IndexError), ("x.median(2)", IndexError),
    ("x.sum((0, 0))", ValueError), ("x.amax((0, -2))", ValueError), ("x.all((0, 0))", ValueError),
    ("e.argmax()", IndexError), ("e.argmin()", IndexError), ("e.argmax(0)", IndexError), ("e.max()", ValueError),
    ("e.amax()", ValueError), ("e.amax(0)", IndexError), ("e.max(0)", IndexError), ("e.median(0)", IndexError),
    ("e.mode(0)", IndexError), ("e.kthvalue(1, 0)", IndexError), ("e.aminmax()", ValueError),
    ("i.mean()", TypeError), ("i.var()", RuntimeError), ("i.std()", RuntimeError),
    ("x.logsumexp(dim=())", ValueError),
]


@pytest.mark.parametrize("expr,cls", ERRORS, ids=[e for e, _ in ERRORS])
def test_errors_match_torch(expr, cls):
    x = np.arange(6.0).reshape(2, 3)
    ours = {"x": tg_t(x), "e": tg_t(np.zeros((0, 3))), "i": tg_t(np.arange(4))}
    ref = {"x": torch.tensor(x, device=DEVICE), "e": torch.zeros((0, 3), device=DEVICE), "i": torch.arange(4, device=DEVICE)}
    with pytest.raises((RuntimeError, TypeError, IndexError, ValueError)):
        eval(expr, {}, ref)
    with pytest.raises(cls) as info:
        eval(expr, {}, ours)
    assert "(" in str(info.value) or "dim" in str(info.value)


def test_search_errors_match_torch():
    seq = np.array([1.0, 2.0, 3.0])
    for ours, ref in [
        (lambda: tg.searchsorted(tg_t(seq), tg_t(seq), side="left", right=True),
         lambda: torch.searchsorted(torch.tensor(seq, device=DEVICE), torch.tensor(seq, device=DEVICE), side="left", right=True)),
        (lambda: tg.searchsorted(tg_t(seq), tg_t(seq), side="mid"),
         lambda: torch.searchsorted(torch.tensor(seq, device=DEVICE), torch.tensor(seq, device=DEVICE), side="mid")),
        (lambda: tg.searchsorted(tg_t(np.float64(3.0)), tg_t(seq)),
         lambda: torch.searchsorted(torch.tensor(3.0, device=DEVICE), torch.tensor(seq, device=DEVICE))),
        (lambda: tg.searchsorted(tg_t(np.ones((2, 3))), tg_t(seq)),
         lambda: torch.searchsorted(torch.ones(2, 3, device=DEVICE), torch.tensor(seq, device=DEVICE))),
        (lambda: tg.bucketize(tg_t(seq), tg_t(np.ones((2, 3)))), lambda: torch.bucketize(torch.tensor(seq, device=DEVICE), torch.ones(2, 3, device=DEVICE))),
    ]:
        with pytest.raises(RuntimeError):
            ref()
        with pytest.raises(ValueError):
            ours()
    with pytest.raises(TypeError, match="median"):
        tg_t(np.array([True])).median()


# ============================================================================ finite differences

def _n(rng, *shape):
    return rng.standard_normal(shape)


def _distinct(rng, *shape):
    return (rng.permutation(int(np.prod(shape))) * 0.37 - 1.0).reshape(shape)


GRADCHECK = {   # every Function of the five modules, float64, by name
    "Sum": (lambda a: a.sum((0, 2)), lambda r: [_n(r, 2, 3, 2)]),
    "NanSum": (lambda a: a.nansum(1), lambda r: [np.where(_n(r, 3, 4) > 1.0, np.nan, _n(r, 3, 4))]),
    "Mean": (lambda a: a.mean(-1, keepdim=True), lambda r: [_n(r, 3, 4)]),
    "Var": (lambda a: a.var(0, correction=0), lambda r: [_n(r, 4, 3)]),
    "Std": (lambda a: a.std(1), lambda r: [_n(r, 3, 4)]),
    "Prod": (lambda a: a.prod(1), lambda r: [np.array([[1.5, 0.0, -2.0], [0.0, 0.0, 1.0], [1.2, -0.7, 2.0]])]),
    "LogSumExp": (lambda a: a.logsumexp((0, 1)), lambda r: [_n(r, 3, 4)]),
    "MaxAll": (lambda a: a.max(), lambda r: [_distinct(r, 3, 4)]),
    "SelectAlongDim": (lambda a: a.max(1).values.sum() + a.sort(0).values[1].sum() + a.topk(2, 0).values[1].sum(),
                       lambda r: [_distinct(r, 3, 4)]),
    "Amax": (lambda a: a.amax((0, 2)).sum() - a.amin(1).sum(), lambda r: [_distinct(r, 2, 3, 2)]),
    "CumSum": (lambda a: a.cumsum(1), lambda r: [_n(r, 3, 4)]),
    "CumProd": (lambda a: a.cumprod(1), lambda r: [np.array([[1.5, 0.0, -2.0, 0.0, 1.1], [0.9, 1.1, 0.0, 2.0, 1.0],
                                                            [1.2, -0.7, 2.0, 0.5, 1.5]])]),
    "LogCumSumExp": (lambda a: a.logcumsumexp(0), lambda r: [_n(r, 4, 3)]),
    "CumExtreme": (lambda a: a.cummax(1).values + a.cummin(0).values, lambda r: [_distinct(r, 3, 4)]),
    "MedianAll": (lambda a: a.median() + a.median(1).values.sum() + a.kthvalue(2, 0).values.sum()
                  + a.mode(1).values.sum(), lambda r: [_distinct(r, 3, 4)]),
    "VectorNorm": (lambda a: tl.vector_norm(a, 3, 1) + tl.vector_norm(a, 2, 1) + tl.vector_norm(a, math.inf, 1)
                   + tl.vector_norm(a, 1, 1) + tl.vector_norm(a, 0.5, 1) + tl.matrix_norm(a, 1),
                   lambda r: [_distinct(r, 3, 4)]),
}


@pytest.mark.parametrize("name", list(GRADCHECK))
def test_gradcheck(name):
    fn, make = GRADCHECK[name]
    assert gradcheck(fn, make(np.random.default_rng(0)))


def test_numpy_reductions_of_a_tensor_dispatch_to_its_methods():
    """np.all(t), np.sum(t, axis=1), ... call the method with axis= and out=None (the
    gradients being Tensors, tests write np.all(t.grad == 0)); out= itself is refused."""
    a = np.array([[1.0, 0.0, -2.0], [2.0, 3.0, 0.5]])
    t = tg_t(a)
    for fn in (np.all, np.any, np.sum, np.max, np.min, np.mean, np.argmax, np.argmin, np.prod):
        np.testing.assert_array_equal(np.asarray(fn(t)._data), fn(a))
        along = fn(t, axis=1)   # max/min along a dim give (values, indices), as torch's
        np.testing.assert_array_equal(np.asarray((along[0] if isinstance(along, tuple) else along)._data),
                                      fn(a, axis=1))
    np.testing.assert_array_equal(np.cumsum(t, axis=0)._data, np.cumsum(a, axis=0))
    with pytest.raises(TypeError, match="out="):
        t.sum(out=t)
