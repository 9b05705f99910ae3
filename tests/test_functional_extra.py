"""The torch.nn.functional additions against PyTorch: activations, losses, pad/one_hot,
distances, attention's scale/GQA/zero keys, softmax's dtype, and the torch-level names.

Each op: hypothesis parity (``check_parity``: outputs and every input gradient for a random
cotangent, float64 <= 1e-10 relative, float32 judged against torch's own float32 error),
finite differences (``tinygrad_tx.gradcheck``, float64), exact integer outputs, and the error
cases next to what torch raises.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from hypothesis import given
from hypothesis import strategies as st

import tinygrad_tx as tg
import tinygrad_tx.functional as F
from reference.testing import DEVICE, check_parity, to_torch
from tinygrad_tx.testing.strategies import float_dtypes, non_contiguous, seeds, shapes, values

DTYPES = [np.float64, np.float32]


def vals(shape, seed, **kw):
    return np.asarray(values(shape, seed, **kw))


def _cot(seed):
    return (seed * 7919 + 12345) % 2**32


def _rng(seed):
    return np.random.default_rng(seed)


# ============================================================================ activations

# name -> (ours, torch, scale of the inputs, may the reference gradient be all zero)
ACTIVATIONS = {
    "silu": (F.silu, TF.silu, 3.0, False),
    "softplus": (F.softplus, TF.softplus, 3.0, False),
    "softplus_beta_threshold": (lambda x: F.softplus(x, beta=2.0, threshold=3.0),
                                lambda x: TF.softplus(x, beta=2.0, threshold=3.0), 3.0, False),
    "elu": (F.elu, TF.elu, 2.0, False),
    "elu_alpha": (lambda x: F.elu(x, alpha=0.4), lambda x: TF.elu(x, alpha=0.4), 2.0, False),
    "selu": (F.selu, TF.selu, 2.0, False),
    # alpha exactly representable in float32: torch's celu backward uses 1/float32(alpha)
    # (derivatives.yaml: alpha.toFloat()), a 1e-8 relative difference from the exact 1/alpha for 1.7
    "celu": (lambda x: F.celu(x, 1.5), lambda x: TF.celu(x, 1.5), 2.0, False),
    "leaky_relu": (F.leaky_relu, TF.leaky_relu, 2.0, False),
    "leaky_relu_slope": (lambda x: F.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2), 2.0, False),
    "relu6": (F.relu6, TF.relu6, 4.0, True),
    "hardtanh": (F.hardtanh, TF.hardtanh, 2.0, True),
    "hardtanh_range": (lambda x: F.hardtanh(x, -0.5, 2.0), lambda x: TF.hardtanh(x, -0.5, 2.0), 2.0, True),
    "hardsigmoid": (F.hardsigmoid, TF.hardsigmoid, 4.0, True),
    "hardswish": (F.hardswish, TF.hardswish, 4.0, True),
    "mish": (F.mish, TF.mish, 3.0, False),
    "logsigmoid": (F.logsigmoid, TF.logsigmoid, 4.0, False),
    "softsign": (F.softsign, TF.softsign, 3.0, False),
    "tanhshrink": (F.tanhshrink, TF.tanhshrink, 2.0, False),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@given(shape=shapes(0, 3, max_side=5), seed=seeds, dtype=float_dtypes, strided=st.booleans())
def test_activation_parity(name, shape, seed, dtype, strided):
    ours, theirs, scale, blind = ACTIVATIONS[name]
    # tanhshrink's gradient (torch's composite g - g(1 - tanh²x)) is rounding noise near 0
    x = vals(shape, seed, domain="away_from_zero") if name == "tanhshrink" else vals(shape, seed, scale=scale)
    x = non_contiguous(x) if strided else x
    check_parity(f"F.{name}", ours, theirs, [x], dtype, seed=_cot(seed), allow_zero_grad=(0,) if blind else ())


def _away_from(x, points, gap=1e-3):
    for p in points:
        x = np.where(np.abs(x - p) < gap, p + 2 * gap, x)
    return x


KINKS = {"relu6": (0, 6), "hardtanh": (-1, 1), "hardtanh_range": (-0.5, 2), "hardsigmoid": (-3, 3),
         "hardswish": (-3, 3), "leaky_relu": (0,), "leaky_relu_slope": (0,), "elu": (0,), "elu_alpha": (0,),
         "selu": (0,), "celu": (0,), "softplus_beta_threshold": (1.5,)}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@pytest.mark.parametrize("big", [False, True])
def test_activation_gradcheck(name, big):
    ours, _, scale, _ = ACTIVATIONS[name]
    x = _away_from(_rng(1).standard_normal((9, 8) if big else (3, 4)) * scale, KINKS.get(name, ()))
    assert tg.gradcheck(ours, [x])


def test_activation_kink_sides_match_torch():
    """At the corners torch picks a side: relu6/hardtanh/hardsigmoid 0 at the corners,
    leaky_relu the slope at 0, hardswish 0 at -3 and 1 at 3, elu/selu the negative branch at 0."""
    x = np.array([-3.0, -1.0, 0.0, 1.0, 3.0, 6.0])
    for name in ("relu6", "hardtanh", "hardsigmoid", "hardswish", "leaky_relu_slope", "elu", "selu", "celu",
                 "softsign"):
        ours, theirs = ACTIVATIONS[name][:2]
        t = tg.Tensor(x, requires_grad=True)
        ours(t).backward(np.ones(6))
        tx = torch.tensor(x, requires_grad=True, device=DEVICE)
        (ref,) = torch.autograd.grad(theirs(tx).sum(), tx)
        np.testing.assert_allclose(np.asarray(t.grad), ref.cpu().numpy(), rtol=1e-15, atol=0, err_msg=name)


def test_activation_extreme_inputs_are_finite_like_torch():
    x = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0])
    for name in ("silu", "softplus", "mish", "logsigmoid", "elu", "selu", "softsign", "tanhshrink"):
        ours, theirs = ACTIVATIONS[name][:2]
        np.testing.assert_allclose(ours(tg.Tensor(x))._data, theirs(torch.tensor(x, device=DEVICE)).cpu().numpy(),
                                   rtol=1e-14, atol=0, err_msg=name)


def test_activation_dtypes_and_errors():
    ints = np.array([1, -2, 7])
    # torch has no integer kernel for these (NotImplementedError there, TypeError here)
    for fn in (F.silu, F.elu, F.selu, F.mish, F.logsigmoid, F.hardswish, F.leaky_relu, F.softplus, F.glu):
        with pytest.raises(TypeError, match="floating point"):
            fn(tg.Tensor(ints if fn is not F.glu else np.array([1, 2])))
    # ... but relu6/hardtanh clamp integers, and softsign/tanhshrink compute them in float32
    for name in ("relu6", "hardtanh"):
        out = getattr(F, name)(tg.Tensor(ints))
        ref = getattr(TF, name)(torch.tensor(ints, device=DEVICE))
        assert out.dtype == np.int64 and out.tolist() == ref.tolist()
    for name in ("softsign", "tanhshrink"):
        out = getattr(F, name)(tg.Tensor(ints))
        ref = getattr(TF, name)(torch.tensor(ints, device=DEVICE))
        assert out.dtype == np.float32 and np.allclose(out._data, ref.cpu().numpy())
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(tg.Tensor(np.zeros(2)), 2.0, 1.0)
    with pytest.raises(ValueError, match="alpha cannot be 0"):
        F.celu(tg.Tensor(np.zeros(2)), 0.0)
    with pytest.raises(TypeError, match="inplace must be a bool"):
        F.silu(tg.Tensor(np.zeros(2)), inplace="yes")


def test_inplace_keyword_overwrites_the_input():
    """inplace=True writes into the input and returns it, as torch's (tests/test_inplace.py checks
    the values and gradients against torch)."""
    for fn in (F.silu, F.elu, F.selu, F.celu, F.leaky_relu, F.relu6, F.hardtanh, F.hardsigmoid, F.hardswish,
               F.mish):
        x = tg.Tensor(np.array([-1.0, 2.0]))
        want = fn(x).tolist()
        assert fn(x, inplace=True) is x and x.tolist() == want
    x = tg.Tensor(np.array([-1.0, 2.0, 3.0, 4.0]))
    out = F.dropout(x, 0.5, training=True, inplace=True, generator=np.random.default_rng(0))
    assert out is x and set(x.tolist()) <= {0.0, -2.0, 4.0, 6.0, 8.0}


@given(shape=shapes(1, 3, max_side=4), seed=seeds, dtype=float_dtypes, data=st.data())
def test_glu_parity(shape, seed, dtype, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    shape = list(shape)
    shape[dim] *= 2
    x = vals(tuple(shape), seed, scale=2.0)
    check_parity("F.glu", lambda t: F.glu(t, dim), lambda t: TF.glu(t, dim), [x], dtype, seed=_cot(seed))


def test_glu_gradcheck_and_errors():
    assert tg.gradcheck(lambda t: F.glu(t, 1), [_rng(0).standard_normal((2, 4, 3))])
    with pytest.raises(ValueError, match="must be even, but dimension 0 of input shape \\(3,\\) has size 3"):
        F.glu(tg.Tensor(np.zeros(3)), 0)
    with pytest.raises(ValueError, match="scalars"):
        F.glu(tg.Tensor(np.array(1.0)))
    with pytest.raises(IndexError):
        TF.glu(torch.zeros(2, 4, device=DEVICE), 5)
    with pytest.raises((IndexError, ValueError), match="out of range"):
        F.glu(tg.Tensor(np.zeros((2, 4))), 5)


# ============================================================================ softmax family: dtype, dim=None, softmin

@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
@given(shape=shapes(1, 3, max_side=5), seed=seeds, dtype=float_dtypes, data=st.data())
def test_softmax_family_parity(name, shape, seed, dtype, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    scale = 2.0
    if dtype == np.float32:     # as test_functional's softmax_case: in tiny float32 slices the worst error
        shape = list(shape)     # is one cancelling entry, a heavy-tailed statistic against torch's
        shape[dim] = max(shape[dim], 4)
        if np.prod(shape) < 8:
            shape, dim = [2] + shape, dim + 1 if dim >= 0 else dim
        shape = tuple(shape)
        scale = 1.0
    x = vals(shape, seed, scale=scale)
    blind = (0,) if shape[dim] == 1 else ()
    check_parity(f"F.{name}", lambda t: getattr(F, name)(t, dim), lambda t: getattr(TF, name)(t, dim), [x], dtype,
                 seed=_cot(seed), allow_zero_grad=blind)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_softmax_dtype_argument(name):
    """dtype= casts first: float32 logits give a float64 result whose gradient is float32."""
    x = _rng(0).standard_normal((3, 5)).astype(np.float32)
    check_parity(f"F.{name}(dtype=float64)", lambda t: getattr(F, name)(t, 1, dtype=tg.float64),
                 lambda t: getattr(TF, name)(t, 1, dtype=torch.float64), [x], np.float32)
    ints = np.array([[1, 2, 3], [0, 0, 5]])
    out = getattr(F, name)(tg.Tensor(ints), 1, dtype=np.float32)
    ref = getattr(TF, name)(torch.tensor(ints, device=DEVICE), 1, dtype=torch.float32)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out._data, ref.cpu().numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="floating point"):
        getattr(F, name)(tg.Tensor(ints), 1)
    with pytest.raises(TypeError, match="floating point dtype"):
        getattr(F, name)(tg.Tensor(x), 1, dtype=tg.int64)


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_softmax_implicit_dim_warns_like_torch(ndim):
    x = _rng(ndim).standard_normal((2, 3, 4, 5)[:ndim])
    for name in ("softmax", "log_softmax", "softmin"):
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            ours = getattr(F, name)(tg.Tensor(x))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = getattr(TF, name)(torch.tensor(x, device=DEVICE))
        np.testing.assert_allclose(ours._data, ref.cpu().numpy(), rtol=1e-12)


def test_softmax_methods_and_top_level():
    x = _rng(0).standard_normal((3, 4))
    t = tg.Tensor(x)
    ref = torch.tensor(x, device=DEVICE)
    np.testing.assert_allclose(t.softmax(1)._data, ref.softmax(1).cpu().numpy(), rtol=1e-14)
    np.testing.assert_allclose(t.log_softmax(0)._data, ref.log_softmax(0).cpu().numpy(), rtol=1e-14)
    assert t.softmax(1, tg.float32).dtype == np.float32
    np.testing.assert_allclose(tg.softmax(t, 0)._data, torch.softmax(ref, 0).cpu().numpy(), rtol=1e-14)
    np.testing.assert_allclose(tg.log_softmax(t, 1, dtype=tg.float32)._data,
                               torch.log_softmax(ref, 1, dtype=torch.float32).cpu().numpy(), rtol=1e-6)
    with pytest.raises(TypeError):
        t.softmax()     # torch's method requires dim too
    with pytest.raises(TypeError):
        ref.softmax()


# ============================================================================ regression losses

REDUCTIONS = ["mean", "sum", "none"]
REGRESSION = {
    "mse_loss": ({}, True), "l1_loss": ({}, True), "huber_loss": ({"delta": 0.7}, True),
    "smooth_l1_loss": ({"beta": 0.6}, False), "smooth_l1_loss_beta0": ({"beta": 0.0}, False),
}


@pytest.mark.parametrize("name", sorted(REGRESSION))
@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(shape=shapes(0, 3, max_side=5), seed=seeds, dtype=float_dtypes, weighted=st.booleans())
def test_regression_loss_parity(name, reduction, shape, seed, dtype, weighted):
    kw, has_weight = REGRESSION[name]
    fn = name.removesuffix("_beta0")
    x, t = vals(shape, seed), vals(shape, seed + 1)
    inputs = [x, t]
    if weighted and has_weight:
        inputs.append(_rng(seed + 2).uniform(0.2, 2.0, shape))
    check_parity(f"F.{fn}", lambda *a: getattr(F, fn)(*a[:2], reduction=reduction, weight=a[2], **kw)
                 if len(a) == 3 else getattr(F, fn)(*a, reduction=reduction, **kw),
                 lambda *a: getattr(TF, fn)(*a[:2], reduction=reduction, weight=a[2], **kw)
                 if len(a) == 3 else getattr(TF, fn)(*a, reduction=reduction, **kw),
                 inputs, dtype, grad=(0, 1), seed=_cot(seed))


@pytest.mark.parametrize("name", sorted(REGRESSION))
def test_regression_loss_gradcheck(name):
    kw, _ = REGRESSION[name]
    fn = getattr(F, name.removesuffix("_beta0"))
    rng = _rng(3)
    x, t = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    x = np.where(np.abs(np.abs(x - t) - 0.6) < 1e-3, x + 0.01, x)     # away from beta/delta
    x = np.where(np.abs(np.abs(x - t) - 0.7) < 1e-3, x + 0.01, x)
    assert tg.gradcheck(lambda a, b: fn(a, b, reduction="sum", **kw), [x, t])


def test_regression_loss_broadcast_int_target_and_errors():
    x = _rng(0).standard_normal((3, 4))
    t = _rng(1).standard_normal(4)
    with pytest.warns(UserWarning, match="different to the input size"):
        check_parity("F.mse_loss broadcast", lambda a, b: F.mse_loss(a, b), lambda a, b: TF.mse_loss(a, b),
                     [x, t], np.float64)
    ints = np.array([[1, 0, 2, 1]] * 3)
    out = F.l1_loss(tg.Tensor(x.astype(np.float32)), tg.Tensor(ints))
    ref = TF.l1_loss(torch.tensor(x.astype(np.float32), device=DEVICE), torch.tensor(ints, device=DEVICE))
    assert out.dtype == np.float32 and abs(out.item() - ref.item()) < 1e-6
    out = F.mse_loss(tg.Tensor(x.astype(np.float32)), tg.Tensor(x))     # float32 with float64: float64
    assert out.dtype == np.float64
    assert TF.mse_loss(torch.tensor(x.astype(np.float32), device=DEVICE), torch.tensor(x, device=DEVICE)).dtype == torch.float64
    with pytest.raises(ValueError, match="'avg' is not a valid value for reduction"):
        F.mse_loss(tg.Tensor(x), tg.Tensor(x), reduction="avg")
    with pytest.raises(ValueError, match="does not broadcast"):
        F.mse_loss(tg.Tensor(x), tg.Tensor(np.zeros(5)))
    with pytest.raises(TypeError, match="floating point"):
        F.mse_loss(tg.Tensor(ints), tg.Tensor(ints))
    with pytest.raises(ValueError, match="same size"):
        F.mse_loss(tg.Tensor(x), tg.Tensor(x), weight=tg.Tensor(np.ones(4)))
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        TF.mse_loss(torch.tensor(x, device=DEVICE), torch.tensor(x, device=DEVICE), weight=torch.ones(4, device=DEVICE))
    with pytest.raises(ValueError, match="beta must be non-negative"):
        F.smooth_l1_loss(tg.Tensor(x), tg.Tensor(x), beta=-1.0)
    with pytest.raises(ValueError, match="delta must be positive"):
        F.huber_loss(tg.Tensor(x), tg.Tensor(x), delta=0.0)
    with pytest.warns(UserWarning, match="reduction='sum'"):
        out = F.mse_loss(tg.Tensor(x), tg.Tensor(x + 1), size_average=False)
    assert out.item() == 12.0
    assert np.isnan(F.mse_loss(tg.Tensor(np.zeros(0)), tg.Tensor(np.zeros(0))).item())


# ============================================================================ nll_loss

@st.composite
def class_case(draw):
    layout = draw(st.sampled_from(["unbatched", "2d", "spatial"]))
    c = draw(st.integers(2, 5))
    n = draw(st.integers(1, 4))
    shape = {"unbatched": (c,), "2d": (n, c)}.get(layout) or (n, c) + draw(shapes(1, 2, max_side=3))
    return dict(shape=shape, c=c, reduction=draw(st.sampled_from(REDUCTIONS)), weighted=draw(st.booleans()),
                ignore_index=draw(st.sampled_from([-100, 1])), fraction=draw(st.sampled_from([0.0, 0.3])))


def _class_targets(shape, c, ignore_index, fraction, seed):
    rng = _rng(seed)
    t_shape = shape[:1] + shape[2:] if len(shape) > 1 else ()
    t = np.where(rng.random(t_shape) < fraction, ignore_index, rng.integers(0, c, t_shape))
    return np.asarray(t, dtype=np.int64)


@given(case=class_case(), seed=seeds, dtype=float_dtypes, strided=st.booleans())
def test_nll_loss_parity(case, seed, dtype, strided):
    shape, c = case["shape"], case["c"]
    x = vals(shape, seed, scale=2.0)
    x = non_contiguous(x) if strided else x
    t = _class_targets(shape, c, case["ignore_index"], case["fraction"], seed + 1)
    kw = dict(reduction=case["reduction"], ignore_index=case["ignore_index"])
    inputs = [x, t] + ([_rng(seed + 2).uniform(0.2, 2.0, c)] if case["weighted"] else [])
    blind = not (t != case["ignore_index"]).any()
    check_parity("F.nll_loss", lambda a, b, w=None: F.nll_loss(a, b, weight=w, **kw),
                 lambda a, b, w=None: TF.nll_loss(a, b, weight=w, **kw), inputs, dtype, grad=(0,),
                 seed=_cot(seed), allow_zero_grad=(0,) if blind else ())


def test_nll_loss_gradcheck():
    x = _rng(0).standard_normal((3, 4, 2))
    t = np.array([[0, 3], [-100, 1], [2, 2]])
    w = tg.Tensor(np.array([0.5, 1.0, 2.0, 1.5]))
    assert tg.gradcheck(lambda a: F.nll_loss(a, t, weight=w), [x])
    assert tg.gradcheck(lambda a: F.nll_loss(a, t, reduction="none"), [x])


def test_nll_loss_degenerate_means_like_torch():
    """All targets ignored: nan with a zero gradient; weights summing to 0: nan, nan gradient."""
    x = _rng(0).standard_normal((2, 3))
    for t, w in ((np.array([-100, -100]), None), (np.array([0, 1]), np.array([0.0, 0.0, 1.0]))):
        ours = tg.Tensor(x, requires_grad=True)
        out = F.nll_loss(ours, t, weight=None if w is None else tg.Tensor(w))
        out.backward()
        tx = torch.tensor(x, requires_grad=True, device=DEVICE)
        ref = TF.nll_loss(tx, torch.tensor(t, device=DEVICE), weight=None if w is None else torch.tensor(w, device=DEVICE))
        (ref_grad,) = torch.autograd.grad(ref, tx)
        assert np.isnan(out.item()) and np.isnan(ref.item())
        np.testing.assert_array_equal(np.asarray(ours.grad), ref_grad.numpy())


def test_nll_loss_errors():
    x = tg.Tensor(np.zeros((3, 5)))
    with pytest.raises(IndexError, match=r"target values \[7\] are out of range"):
        F.nll_loss(x, np.array([1, 7, 0]))
    with pytest.raises(IndexError, match="out of bounds"):
        # on the CPU: on CUDA torch's out-of-range target is a device-side assert, not an IndexError
        TF.nll_loss(torch.zeros(3, 5, device="cpu"), torch.tensor([1, 7, 0], device="cpu"))
    with pytest.raises(IndexError, match=r"\[-3\]"):
        F.nll_loss(x, np.array([1, -3, 0]))
    with pytest.raises(ValueError, match="target shape"):
        F.nll_loss(x, np.array([1, 2]))
    with pytest.raises(ValueError, match="1 or more dimensions"):
        F.nll_loss(tg.Tensor(np.array(1.0)), np.array(0))
    with pytest.raises(TypeError, match="class indices"):
        F.nll_loss(x, np.array([1.0, 2.0, 0.0]))
    with pytest.raises(ValueError, match=r"weight must have shape \(5,\)"):
        F.nll_loss(x, np.array([1, 2, 0]), weight=tg.Tensor(np.ones(4)))
    with pytest.raises(ValueError, match="reduction"):
        F.nll_loss(x, np.array([1, 2, 0]), reduction="batchmean")
    with pytest.raises(TypeError, match="ignore_index"):
        F.nll_loss(x, np.array([1, 2, 0]), ignore_index=1.5)


# ============================================================================ cross_entropy: probabilities, errors

@given(case=class_case(), seed=seeds, dtype=float_dtypes, smoothing=st.sampled_from([0.0, 0.25]))
def test_cross_entropy_probability_targets(case, seed, dtype, smoothing):
    """Probability targets: the loss and the gradients of both the logits and the target."""
    shape, c = case["shape"], case["c"]
    x = vals(shape, seed, scale=2.0)
    q = _rng(seed + 1).dirichlet(np.ones(c), shape[:1] + shape[2:] if len(shape) > 1 else ())
    q = np.moveaxis(q, -1, 0 if len(shape) == 1 else 1)
    kw = dict(reduction=case["reduction"], label_smoothing=smoothing)
    inputs = [x, q] + ([_rng(seed + 2).uniform(0.2, 2.0, c)] if case["weighted"] else [])
    for name in ("cross_entropy", "cross_entropy_composite"):
        fn = getattr(F, name)
        check_parity(f"F.{name} probabilities", lambda a, b, w=None, fn=fn: fn(a, b, weight=w, **kw),
                     lambda a, b, w=None: TF.cross_entropy(a, b, weight=w, **kw), inputs, dtype, grad=(0, 1),
                     seed=_cot(seed))


@given(case=class_case(), seed=seeds, dtype=float_dtypes, smoothing=st.sampled_from([0.0, 0.1]))
def test_cross_entropy_class_indices_spatial_weight_ignore(case, seed, dtype, smoothing):
    shape, c = case["shape"], case["c"]
    x = vals(shape, seed, scale=2.0)
    t = _class_targets(shape, c, case["ignore_index"], case["fraction"], seed + 1)
    kw = dict(reduction=case["reduction"], ignore_index=case["ignore_index"], label_smoothing=smoothing)
    inputs = [x, t] + ([_rng(seed + 2).uniform(0.2, 2.0, c)] if case["weighted"] else [])
    blind = not (t != case["ignore_index"]).any()
    check_parity("F.cross_entropy", lambda a, b, w=None: F.cross_entropy(a, b, weight=w, **kw),
                 lambda a, b, w=None: TF.cross_entropy(a, b, weight=w, **kw), inputs, dtype, grad=(0,),
                 seed=_cot(seed), allow_zero_grad=(0,) if blind else ())


def test_cross_entropy_probability_gradcheck_and_errors():
    x = _rng(0).standard_normal((3, 4))
    q = _rng(1).dirichlet(np.ones(4), 3)
    assert tg.gradcheck(lambda a, b: F.cross_entropy(a, b, label_smoothing=0.2), [x, q])
    out = F.cross_entropy(tg.Tensor(x.astype(np.float32)), tg.Tensor(q))      # promotes, as torch
    assert out.dtype == np.float64
    z = tg.Tensor(x)
    for bad in ("0.1", None):
        with pytest.raises(TypeError, match="label_smoothing must be a float"):
            F.cross_entropy(z, np.array([0, 1, 2]), label_smoothing=bad)
        with pytest.raises(TypeError, match="label_smoothing"):
            TF.cross_entropy(torch.tensor(x, device=DEVICE), torch.tensor([0, 1, 2], device=DEVICE), label_smoothing=bad)
    with pytest.raises(ValueError, match="label_smoothing must be in"):
        F.cross_entropy(z, q, label_smoothing=1.5)
    with pytest.raises(ValueError, match="ignore_index is not supported"):
        F.cross_entropy(z, q, ignore_index=1)
    with pytest.raises(ValueError, match="probability target must have the input's shape"):
        F.cross_entropy(z, q[:, :3])
    with pytest.raises(IndexError, match=r"target values \[5\]"):
        F.cross_entropy(z, np.array([1, 5, 0]))
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert F.cross_entropy(z, np.array([1, 2, 0]), reduce=False).shape == (3,)
    assert np.isnan(F.cross_entropy(tg.Tensor(np.zeros((0, 3))), tg.Tensor(np.zeros((0, 3)))).item())


# ============================================================================ binary cross-entropy, kl_div

@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(shape=shapes(0, 3, max_side=5), seed=seeds, dtype=float_dtypes, weighted=st.booleans())
def test_binary_cross_entropy_parity(reduction, shape, seed, dtype, weighted):
    rng = _rng(seed)
    p, t = np.asarray(rng.uniform(0.05, 0.95, shape)), np.asarray(rng.uniform(0, 1, shape))
    inputs = [p, t] + ([rng.uniform(0.2, 2.0, shape[-1:])] if weighted else [])
    check_parity("F.binary_cross_entropy",
                 lambda a, b, w=None: F.binary_cross_entropy(a, b, weight=w, reduction=reduction),
                 lambda a, b, w=None: TF.binary_cross_entropy(a, b, weight=w, reduction=reduction),
                 inputs, dtype, grad=(0, 1), seed=_cot(seed))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(shape=shapes(1, 3, max_side=5), seed=seeds, dtype=float_dtypes, weighted=st.booleans(),
       pos=st.booleans())
def test_binary_cross_entropy_with_logits_parity(reduction, shape, seed, dtype, weighted, pos):
    rng = _rng(seed)
    x, t = rng.standard_normal(shape) * 3, rng.uniform(0, 1, shape)
    inputs = [x, t, rng.uniform(0.2, 2.0, shape) if weighted else None,
              rng.uniform(0.2, 3.0, shape[-1:]) if pos else None]
    check_parity("F.binary_cross_entropy_with_logits",
                 lambda a, b, w, pw: F.binary_cross_entropy_with_logits(a, b, weight=w, pos_weight=pw,
                                                                        reduction=reduction),
                 lambda a, b, w, pw: TF.binary_cross_entropy_with_logits(a, b, weight=w, pos_weight=pw,
                                                                         reduction=reduction),
                 inputs, dtype, grad=(0, 1), seed=_cot(seed))


@pytest.mark.parametrize("reduction", ["mean", "batchmean", "sum", "none"])
@given(shape=shapes(0, 3, max_side=5), seed=seeds, dtype=float_dtypes, log_target=st.booleans())
def test_kl_div_parity(reduction, shape, seed, dtype, log_target):
    rng = _rng(seed)
    x = np.asarray(np.log(rng.uniform(0.05, 1.0, shape)))
    t = np.asarray(rng.uniform(0.05, 1.0, shape))
    t = np.asarray(np.log(t)) if log_target else t
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # 'mean' warns (in both)
        check_parity("F.kl_div", lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=log_target),
                     lambda a, b: TF.kl_div(a, b, reduction=reduction, log_target=log_target),
                     [x, t], dtype, seed=_cot(seed))


def test_binary_losses_gradcheck():
    rng = _rng(0)
    p, t, x = rng.uniform(0.1, 0.9, (3, 4)), rng.uniform(0, 1, (3, 4)), rng.standard_normal((3, 4))
    w = tg.Tensor(rng.uniform(0.5, 2, 4))
    assert tg.gradcheck(lambda a, b: F.binary_cross_entropy(a, b, weight=w), [p, t])
    assert tg.gradcheck(lambda a, b: F.binary_cross_entropy_with_logits(a, b, pos_weight=w), [x, t])
    assert tg.gradcheck(lambda a, b: F.kl_div(a, b, reduction="batchmean"), [np.log(p), t])
    assert tg.gradcheck(lambda a, b: F.kl_div(a, b, reduction="sum", log_target=True), [np.log(p), np.log(t)])


def test_binary_losses_edges_like_torch():
    """p = 0 or 1: the logs clamp at -100 (loss 100), the input gradient's denominator at 1e-12;
    a zero KL target contributes 0 and gets torch's nan target gradient."""
    cases = [(F.binary_cross_entropy, TF.binary_cross_entropy, [0.0, 1.0, 0.5], [1.0, 0.0, 0.5]),
             (F.kl_div, TF.kl_div, [-0.3, -1.0, -2.0], [0.0, 0.5, 2.0])]
    for ours, theirs, a, b in cases:
        ta, tb = tg.Tensor(np.array(a), requires_grad=True), tg.Tensor(np.array(b), requires_grad=True)
        out = ours(ta, tb, reduction="sum")
        out.backward()
        ra = torch.tensor(a, dtype=torch.float64, requires_grad=True, device=DEVICE)
        rb = torch.tensor(b, dtype=torch.float64, requires_grad=True, device=DEVICE)
        ref = theirs(ra, rb, reduction="sum")
        ga, gb = torch.autograd.grad(ref, [ra, rb])
        np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-14)
        np.testing.assert_allclose(np.asarray(ta.grad), ga.numpy(), rtol=1e-14)
        np.testing.assert_allclose(np.asarray(tb.grad), gb.numpy(), rtol=1e-14)
    x = np.array([-200.0, 0.0, 200.0])
    out = F.binary_cross_entropy_with_logits(tg.Tensor(x), tg.Tensor(np.array([1.0, 0.5, 0.0])), reduction="none")
    ref = TF.binary_cross_entropy_with_logits(torch.tensor(x, device=DEVICE), torch.tensor([1.0, 0.5, 0.0], dtype=torch.float64, device=DEVICE),
                                              reduction="none")
    np.testing.assert_allclose(out._data, ref.cpu().numpy(), rtol=1e-14)


def test_binary_losses_errors():
    p = tg.Tensor(np.full((3, 4), 0.5))
    with pytest.raises(ValueError, match="input should be between 0 and 1"):
        F.binary_cross_entropy(p + 1.0, p)
    with pytest.raises(ValueError, match="target should be between 0 and 1"):
        F.binary_cross_entropy(p, p + 1.0)
    for fn in (F.binary_cross_entropy, F.binary_cross_entropy_with_logits):
        with pytest.raises(ValueError, match=r"target size \(4,\) must be the same as input size \(3, 4\)"):
            fn(p, tg.Tensor(np.full(4, 0.5)))
        with pytest.raises(TypeError, match="floating point"):
            fn(p, tg.Tensor(np.ones((3, 4), dtype=np.int64)))
        with pytest.raises(ValueError, match="weight cannot require grad"):
            fn(p, p, weight=tg.Tensor(np.ones(4), requires_grad=True))
        with pytest.raises(ValueError, match="does not broadcast"):
            fn(p, p, weight=tg.Tensor(np.ones(3)))
    with pytest.raises(ValueError, match="pos_weight of shape"):
        F.binary_cross_entropy_with_logits(p, p, pos_weight=tg.Tensor(np.ones(3)))
    with pytest.raises(ValueError, match="'avg' is not a valid value"):
        F.kl_div(p, p, reduction="avg")
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(p, p)


# ============================================================================ one_hot, pad

def test_one_hot_exact_and_errors():
    for ids, n in (([0, 2, 1], -1), ([0, 2, 1], 5), ([[3, 0], [1, 1]], -1), (2, 4), ([], 3)):
        ours = F.one_hot(tg.Tensor(np.array(ids, dtype=np.int64)), n)
        ref = TF.one_hot(torch.tensor(ids, dtype=torch.long, device=DEVICE), n)
        assert ours.dtype == np.int64 and ours.shape == tuple(ref.shape)
        np.testing.assert_array_equal(ours._data, ref.cpu().numpy())
    ids = tg.Tensor(np.array([0, 2, 1]))
    with pytest.raises(ValueError, match="smaller than num_classes=2"):
        F.one_hot(ids, 2)
    with pytest.raises(ValueError, match="non-negative"):
        F.one_hot(tg.Tensor(np.array([0, -1])), 3)
    with pytest.raises(TypeError, match="int64"):
        F.one_hot(tg.Tensor(np.array([0.0, 1.0])))
    with pytest.raises(TypeError, match="int64"):
        F.one_hot(tg.Tensor(np.array([1], dtype=np.int32)), 3)
    with pytest.raises(ValueError, match="empty"):
        F.one_hot(tg.Tensor(np.zeros(0, dtype=np.int64)))


@st.composite
def pad_case(draw):
    mode = draw(st.sampled_from(["constant", "reflect", "replicate", "circular"]))
    k = draw(st.integers(1, 3))
    if mode == "constant":
        shape = draw(shapes(k, 4, min_side=2, max_side=5))
        sides = [(draw(st.integers(-1, 3)), draw(st.integers(-1, 3))) for _ in range(k)]
    else:
        shape = tuple(draw(st.integers(1, 3)) for _ in range(draw(st.integers(1, 2)))) + \
            tuple(draw(st.integers(3, 5)) for _ in range(k))
        lo = 0 if mode == "replicate" else None
        sides = [(draw(st.integers(lo if lo is not None else -1, 2)), draw(st.integers(-1, 2))) for _ in range(k)]
    pad = tuple(p for pair in sides for p in pair)
    value = draw(st.sampled_from([None, 0.0, 1.5])) if mode == "constant" else None
    return shape, pad, mode, value


@given(case=pad_case(), seed=seeds, dtype=float_dtypes)
def test_pad_parity(case, seed, dtype):
    shape, pad, mode, value = case
    x = vals(shape, seed)
    check_parity(f"F.pad {mode}", lambda t: F.pad(t, pad, mode=mode, value=value),
                 lambda t: TF.pad(t, pad, mode=mode, value=value), [x], dtype, seed=_cot(seed),
                 allow_zero_grad=(0,))


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_gradcheck(mode):
    x = _rng(0).standard_normal((2, 4, 3))
    assert tg.gradcheck(lambda t: F.pad(t, (2, -1, 1, 2), mode=mode), [x])


def test_pad_integer_value_and_errors():
    out = F.pad(tg.Tensor(np.array([1, 2])), (1, 1), value=2.5)
    ref = TF.pad(torch.tensor([1, 2], device=DEVICE), (1, 1), value=2.5)
    assert out.dtype == np.int64 and out.tolist() == ref.tolist()
    x = tg.Tensor(np.zeros((3, 4)))
    assert F.pad(x, (-2, -2)).shape == (3, 0)
    with pytest.raises(ValueError, match="divisible by 2"):
        F.pad(x, (1, 2, 3))
    with pytest.raises(ValueError, match="less than or equal to two times"):
        F.pad(x, (1, 1, 1, 1, 1, 1))
    with pytest.raises(ValueError, match="crop more than"):
        F.pad(x, (-3, -2))
    with pytest.raises(TypeError, match="tuple of ints"):
        F.pad(x, (1.5, 1))
    with pytest.raises(NotImplementedError, match="unrecognised padding mode"):
        F.pad(x, (1, 1), mode="foo")
    with pytest.raises(ValueError, match="less than the corresponding input dimension"):
        F.pad(tg.Tensor(np.zeros((1, 3, 4))), (4, 4), mode="reflect")
    with pytest.raises(ValueError, match="more than once"):
        F.pad(tg.Tensor(np.zeros((1, 3, 4))), (5, 2), mode="circular")
    with pytest.raises(ValueError, match="doesn't take in a value"):
        F.pad(tg.Tensor(np.zeros((1, 3, 4))), (1, 1), mode="reflect", value=1.0)
    with pytest.raises(NotImplementedError, match="3-D or 4-D input"):
        F.pad(tg.Tensor(np.zeros((3, 4))), (1, 1, 1, 1), mode="replicate")
    with pytest.raises(NotImplementedError):
        TF.pad(torch.zeros(3, 4, device=DEVICE), (1, 1, 1, 1), mode="replicate")


# ============================================================================ normalize, cosine_similarity, pairwise_distance

P_VALUES = [2.0, 1.0, 3.0, 0.5, float("inf")]


@given(shape=shapes(1, 3, min_side=1, max_side=5), seed=seeds, dtype=float_dtypes, data=st.data())
def test_normalize_parity(shape, seed, dtype, data):
    p = data.draw(st.sampled_from(P_VALUES))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    shape = list(shape)
    shape[dim] = max(shape[dim], 2)     # a single entry: x/|x| is constant (a gradient of rounding noise)
    x = vals(tuple(shape), seed, domain="distinct" if p == float("inf") else "away_from_zero")
    check_parity("F.normalize", lambda t: F.normalize(t, p, dim), lambda t: TF.normalize(t, p, dim), [x], dtype,
                 seed=_cot(seed))


@given(pair=st.sampled_from([((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 4)), ((5,), (5,))]),
       seed=seeds, dtype=float_dtypes, data=st.data())
def test_cosine_similarity_parity(pair, seed, dtype, data):
    ndim = max(len(pair[0]), len(pair[1]))
    # along a broadcast dimension the similarity does not depend on that input (a zero gradient)
    dim = data.draw(st.integers(-ndim, ndim - 1)) if pair[0] == pair[1] else -1
    a, b = vals(pair[0], seed), vals(pair[1], seed + 1)
    check_parity("F.cosine_similarity", lambda x, y: F.cosine_similarity(x, y, dim),
                 lambda x, y: TF.cosine_similarity(x, y, dim), [a, b], dtype, seed=_cot(seed))


@given(pair=st.sampled_from([((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 3, 4), (2, 3, 4)), ((5,), (5,))]),
       seed=seeds, dtype=float_dtypes, p=st.sampled_from(P_VALUES), keepdim=st.booleans())
def test_pairwise_distance_parity(pair, seed, dtype, p, keepdim):
    a = vals(pair[0], seed, domain="distinct" if p == float("inf") else "real")
    b = vals(pair[1], seed + 1) * (0.01 if p == float("inf") else 1.0)
    check_parity("F.pairwise_distance", lambda x, y: F.pairwise_distance(x, y, p, keepdim=keepdim),
                 lambda x, y: TF.pairwise_distance(x, y, p, keepdim=keepdim), [a, b], dtype, seed=_cot(seed))


def test_distances_gradcheck_zero_vectors_and_errors():
    rng = _rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    assert tg.gradcheck(lambda x: F.normalize(x, 3.0, 0), [a])
    assert tg.gradcheck(lambda x, y: F.cosine_similarity(x, y), [a, b])
    assert tg.gradcheck(lambda x, y: F.pairwise_distance(x, y, 1.5), [a, b])
    zeros = np.zeros((2, 3))
    for ours, theirs in ((lambda t: F.normalize(t), lambda t: TF.normalize(t)),
                         (lambda t: F.cosine_similarity(t, t + 1), lambda t: TF.cosine_similarity(t, t + 1))):
        t = tg.Tensor(zeros, requires_grad=True)
        out = ours(t)
        out.backward(np.ones(out.shape))
        rt = torch.tensor(zeros, requires_grad=True, device=DEVICE)
        rout = theirs(rt)
        (rg,) = torch.autograd.grad(rout, rt, torch.ones(rout.shape, dtype=torch.float64, device=DEVICE))
        np.testing.assert_allclose(out._data, rout.detach().numpy(), atol=1e-15)
        np.testing.assert_allclose(np.asarray(t.grad), rg.numpy(), atol=1e-12)
    with pytest.raises((IndexError, ValueError), match="out of range"):
        F.normalize(tg.Tensor(np.zeros(3)))
    with pytest.raises(TypeError, match="floating point"):
        F.normalize(tg.Tensor(np.array([[1, 2]])))
    with pytest.raises(ValueError, match="do not broadcast"):
        F.cosine_similarity(tg.Tensor(a), tg.Tensor(np.zeros(3)))
    with pytest.raises(TypeError, match="floating point"):
        F.cosine_similarity(tg.Tensor(np.array([1, 2])), tg.Tensor(np.array([1, 2])), dim=0)


def test_top_level_functions_follow_torch_signatures():
    rng = _rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    np.testing.assert_allclose(tg.cosine_similarity(tg.Tensor(a), tg.Tensor(b))._data,
                               torch.cosine_similarity(torch.tensor(a, device=DEVICE), torch.tensor(b, device=DEVICE)).cpu().numpy(), rtol=1e-13)
    np.testing.assert_allclose(tg.pairwise_distance(tg.Tensor(a), tg.Tensor(b))._data,
                               torch.pairwise_distance(torch.tensor(a, device=DEVICE), torch.tensor(b, device=DEVICE)).cpu().numpy(), rtol=1e-13)
    np.testing.assert_allclose(tg.selu(tg.Tensor(a))._data, torch.selu(torch.tensor(a, device=DEVICE)).cpu().numpy(), rtol=1e-14)
    np.testing.assert_allclose(tg.celu(tg.Tensor(a), 2.0)._data, torch.celu(torch.tensor(a, device=DEVICE), 2.0).cpu().numpy(),
                               rtol=1e-14)
    np.testing.assert_allclose(tg.layer_norm(tg.Tensor(a), [4])._data,
                               torch.layer_norm(torch.tensor(a, device=DEVICE), [4]).cpu().numpy(), rtol=1e-12)
    assert tg.dropout(tg.Tensor(a), 0.5, False)._data is not None
    np.testing.assert_array_equal(tg.dropout(tg.Tensor(a), 0.5, False)._data, a)
    table = rng.standard_normal((5, 3))
    ids = np.array([1, 4, 1])
    np.testing.assert_array_equal(tg.embedding(tg.Tensor(table), ids)._data,
                                  torch.embedding(torch.tensor(table, device=DEVICE), torch.tensor(ids, device=DEVICE)).cpu().numpy())
    w = tg.Tensor(table, requires_grad=True)
    tg.embedding(w, ids, padding_idx=1).sum().backward()
    assert not np.asarray(w.grad)[1].any() and np.asarray(w.grad)[4].all()
    with pytest.raises(NotImplementedError, match="max_norm"):
        F.embedding(ids, tg.Tensor(table), max_norm=1.0)
    with pytest.raises(NotImplementedError, match="sparse"):
        F.embedding(ids, tg.Tensor(table), sparse=True)


# ============================================================================ scaled_dot_product_attention

@given(seed=seeds, dtype=float_dtypes, scale=st.sampled_from([None, 0.3, 2.0]),
       mask=st.sampled_from(["none", "bool", "float", "causal"]), heads=st.sampled_from([(4, 4), (4, 2), (6, 1)]))
def test_attention_scale_masks_and_gqa(seed, dtype, scale, mask, heads):
    hq, hkv = heads
    rng = _rng(seed)
    q, k, v = rng.standard_normal((2, hq, 3, 4)), rng.standard_normal((2, hkv, 5, 4)), rng.standard_normal((2, hkv, 5, 2))
    m = {"none": None, "causal": None, "bool": rng.random((3, 5)) > 0.3,
         "float": rng.standard_normal((hq, 3, 5))}[mask]
    if mask == "bool":
        m[:, 0] = True
    inputs = [q, k, v] + ([m] if m is not None else [])
    gqa = hq != hkv
    kw = dict(scale=scale, is_causal=mask == "causal", enable_gqa=gqa)
    for name in ("scaled_dot_product_attention", "scaled_dot_product_attention_composite"):
        fn = getattr(F, name)
        check_parity(f"F.{name} scale/gqa", lambda a, b, c, mm=None, fn=fn: fn(a, b, c, attn_mask=mm, **kw),
                     lambda a, b, c, mm=None: TF.scaled_dot_product_attention(a, b, c, attn_mask=mm, **kw),
                     inputs, dtype, grad=(0, 1, 2), seed=_cot(seed))


def test_attention_zero_keys_gqa_gradcheck_and_errors():
    rng = _rng(0)
    q = rng.standard_normal((2, 3, 5, 4))
    for name in ("scaled_dot_product_attention", "scaled_dot_product_attention_composite"):
        fn = getattr(F, name)
        tq = tg.Tensor(q, requires_grad=True)
        out = fn(tq, tg.Tensor(np.zeros((2, 3, 0, 4))), tg.Tensor(np.zeros((2, 3, 0, 6))))
        ref = TF.scaled_dot_product_attention(torch.tensor(q, device=DEVICE), torch.zeros(2, 3, 0, 4, dtype=torch.float64, device=DEVICE),
                                              torch.zeros(2, 3, 0, 6, dtype=torch.float64, device=DEVICE))
        assert out.shape == tuple(ref.shape) == (2, 3, 5, 6)
        np.testing.assert_array_equal(out._data, ref.cpu().numpy())
        out.backward(np.ones(out.shape))
        assert not np.asarray(tq.grad).any()
    k, v = rng.standard_normal((2, 1, 3, 4)), rng.standard_normal((2, 1, 3, 2))
    assert tg.gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, scale=0.7, enable_gqa=True),
                        [rng.standard_normal((2, 2, 2, 4)), k, v])
    x = tg.Tensor(q)
    with pytest.raises(ValueError, match="must divide the number of query heads"):
        F.scaled_dot_product_attention(x, tg.Tensor(np.zeros((2, 2, 5, 4))), tg.Tensor(np.zeros((2, 2, 5, 4))),
                                       enable_gqa=True)
    with pytest.raises(ValueError, match="batch dimensions"):
        F.scaled_dot_product_attention(x, tg.Tensor(np.zeros((2, 2, 5, 4))), tg.Tensor(np.zeros((2, 2, 5, 4))))
    with pytest.raises(RuntimeError):
        TF.scaled_dot_product_attention(torch.tensor(q, device=DEVICE), torch.zeros(2, 2, 5, 4, dtype=torch.float64, device=DEVICE),
                                        torch.zeros(2, 2, 5, 4, dtype=torch.float64, device=DEVICE))
    with pytest.raises(ValueError, match="either attn_mask or is_causal"):
        F.scaled_dot_product_attention(x, x, x, attn_mask=np.ones((5, 5), bool), is_causal=True)
    with pytest.raises(TypeError, match="scale must be a float"):
        F.scaled_dot_product_attention(x, x, x, scale="0.5")
    with pytest.raises(TypeError, match="attn_mask must be bool"):
        F.scaled_dot_product_attention(x, x, x, attn_mask=np.ones((5, 5), np.int64))
    with pytest.raises(ValueError, match="heads dimension"):
        F.scaled_dot_product_attention(tg.Tensor(q[0, 0]), tg.Tensor(q[0, 0]), tg.Tensor(q[0, 0]), enable_gqa=True)


def test_torch_reference_of_top_level_names():
    """Each name exported at top level is a torch top-level name too."""
    for name in F.FUNCTIONS:
        assert hasattr(torch, name), name
        assert getattr(tg, name) is F.FUNCTIONS[name]
    for name in F.TENSOR_METHODS:
        assert hasattr(torch.Tensor, name), name
    assert to_torch(np.zeros(2)).shape == (2,)


def test_each_op_is_its_own_function():
    """Each op's result comes from the Function that holds its forward and backward."""
    x = tg.Tensor(_rng(0).standard_normal((2, 4)), requires_grad=True)
    p = tg.Tensor(np.full((2, 4), 0.5), requires_grad=True)
    cases = {
        F.SiluFn: F.silu(x), F.SoftplusFn: F.softplus(x), F.MishFn: F.mish(x), F.LogSigmoidFn: F.logsigmoid(x),
        F.GluFn: F.glu(x), F.EluFn: F.selu(x), F.LeakyReluFn: F.leaky_relu(x), F.HardtanhFn: F.relu6(x),
        F.HardsigmoidFn: F.hardsigmoid(x), F.HardswishFn: F.hardswish(x), F.SoftsignFn: F.softsign(x),
        F.TanhshrinkFn: F.tanhshrink(x),
        F.SquaredError: F.mse_loss(x, p, reduction="none"), F.AbsoluteError: F.l1_loss(x, p, reduction="none"),
        F.SmoothL1Error: F.smooth_l1_loss(x, p, reduction="none"), F.HuberError: F.huber_loss(x, p, reduction="none"),
        F.NLLLossFn: F.nll_loss(x, np.array([0, 3])), F.BinaryCrossEntropy: F.binary_cross_entropy(p, p, reduction="none"),
        F.BinaryCrossEntropyWithLogits: F.binary_cross_entropy_with_logits(x, p, reduction="none"),
        F.KLDivergence: F.kl_div(x, p, reduction="none"), F.VectorNorm: F.pairwise_distance(x, p),
        F.ConstantPad: F.pad(x, (1, 1)), F.IndexedPad: F.pad(x[None], (1, 1), mode="reflect"),
    }
    for cls, out in cases.items():
        assert out._ctx.fn is cls, cls.__name__
