"""More names teaching code uses, against torch: F.group_norm / nn.GroupNorm, the module wrappers
of existing functional ops (nn/wrappers.py), F.pixel_shuffle / pixel_unshuffle, torch.trace,
Tensor.new, torch.accelerator, and the constants torch.pi / e / inf / nan."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tinygrad_tx as tg
from reference.testing import check_module_parity, check_parity
from tinygrad_tx import gradcheck
from tinygrad_tx.testing.strategies import seeds, values

F = tg.nn.functional
TF = torch.nn.functional
DTYPES = st.sampled_from([np.float64, np.float32])
# inputs are drawn with seed + 1 (and up): check_parity draws its cotangent from ``seed`` with the
# same generator as ``values``, so an input drawn from ``seed`` itself would equal the cotangent —
# for a normalisation, a direction its gradient all but removes (|dL/dx| ~ 1e-5 |g|)


@given(case=st.sampled_from([((2, 6), 3), ((2, 6, 4), 2), ((1, 4, 3, 3), 4), ((2, 4, 2, 3), 1)]),
       affine=st.booleans(), seed=seeds, dtype=DTYPES)
def test_group_norm_parity(case, affine, seed, dtype):
    """output, input and affine gradients as torch's (G = C is instance norm, G = 1 layer norm
    over (C, *))."""
    shape, groups = case
    check_module_parity(lambda T: T.nn.GroupNorm(groups, shape[1], affine=affine), values(shape, seed + 1),
                        dtype=dtype, seed=seed, name="GroupNorm")


@pytest.mark.cpu_only(reason="reprs, state-dict keys and constructor errors; the parity property above runs on DEVICE")
def test_group_norm_functional_and_errors():
    x, w, b = values((2, 4, 3), 1), values((4,), 2), values((4,), 3)
    check_parity(lambda t, u, v: F.group_norm(t, 2, u, v), lambda t, u, v: TF.group_norm(t, 2, u, v), x, w, b,
                 name="group_norm")
    assert gradcheck(lambda t, u, v: F.group_norm(t, 2, u, v, eps=1e-3), [x, w, b])
    assert repr(tg.nn.GroupNorm(2, 4)) == repr(torch.nn.GroupNorm(2, 4))
    assert list(tg.nn.GroupNorm(2, 4).state_dict()) == list(torch.nn.GroupNorm(2, 4).state_dict())
    for lib in (tg, torch):
        with pytest.raises(ValueError, match="num_channels .*must be divisible by num_groups"):
            lib.nn.GroupNorm(3, 4)
        with pytest.raises(RuntimeError, match="Expected number of channels in input to be divisible by num_groups"):
            lib.nn.functional.group_norm(lib.zeros(2, 4, 3), 3)


WRAPPED = [
    ("Hardswish", (), {}), ("Hardsigmoid", (), {}), ("SELU", (), {}), ("CELU", (), {}), ("GLU", (1,), {}),
    ("LogSigmoid", (), {}), ("Softsign", (), {}), ("Tanhshrink", (), {}), ("Softmin", (1,), {}),
    ("PixelShuffle", (2,), {}), ("PixelUnshuffle", (2,), {}),
    ("Unfold", ((2, 2),), {"stride": 1}), ("Hardshrink", (), {}), ("Softshrink", (0.3,), {}),
]


@pytest.mark.parametrize("name, args, kwargs", WRAPPED, ids=[w[0] for w in WRAPPED])
def test_wrapper_modules_parity(name, args, kwargs):
    x = values((2, 4, 4, 4), 5, "distinct")
    check_module_parity(lambda T: getattr(T.nn, name)(*args, **kwargs), x, name=name)
    assert repr(getattr(tg.nn, name)(*args, **kwargs)) == repr(getattr(torch.nn, name)(*args, **kwargs))


@pytest.mark.cpu_only(reason="NaN/inf edge values compared bit for bit with torch's CPU kernels")
def test_shrink_edges_as_torch():
    """hardshrink/softshrink (functional/shrink.py): NaN and infinities through, a zero gradient at
    NaN and at the dead zone's edges, softshrink's negative lambd refused, integers refused."""
    x = [float("nan"), float("inf"), -float("inf"), -0.0, 0.5, -0.5, 0.50001, -0.3, 2.0]
    g = np.arange(1.0, 10.0)
    for name in ("hardshrink", "softshrink"):
        out = {}
        for lib in (tg, torch):
            t = lib.tensor(x, dtype=lib.float64, requires_grad=True)
            y = getattr(lib.nn.functional, name)(t, 0.5)
            y.backward(lib.tensor(g, dtype=lib.float64))
            out[lib] = (y.detach().numpy().copy(), t.grad.numpy().copy())
        np.testing.assert_array_equal(out[tg][0], out[torch][0])
        np.testing.assert_array_equal(out[tg][1], out[torch][1])
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="lambda must be in range"):
            lib.nn.functional.softshrink(lib.tensor([0.3]), -1.0)
        with pytest.raises(NotImplementedError, match="hardshrink"):
            lib.hardshrink(lib.tensor([1, 2]), 0.5)
    assert tg.tensor([1.0, -2.0]).hardshrink(1.5).tolist() == [0.0, -2.0]


@pytest.mark.cpu_only(reason="judged against a long-double oracle; torch's forward only as a sanity check")
def test_celu_alpha_against_an_exact_oracle():
    """CELU(alpha != 1): torch's float64 gradient is off by ~3e-9 here (its elu-based kernel), so
    ours is judged against the exact derivative exp(x/alpha) computed in long double instead."""
    x = values((2, 4, 4), 5, "distinct")
    g = np.random.default_rng(1).standard_normal(x.shape)
    t = tg.tensor(x, requires_grad=True)
    tg.nn.CELU(0.7)(t).backward(tg.tensor(g))
    xl = x.astype(np.longdouble)
    exact = np.where(xl > 0, 1, np.exp(xl / np.longdouble(0.7))) * g
    assert float(np.abs(t.grad.numpy() - exact).max() / np.abs(exact).max()) < 1e-15
    np.testing.assert_allclose(tg.nn.CELU(0.7)(tg.tensor(x)).numpy(), torch.nn.CELU(0.7)(torch.tensor(x)).numpy(),
                               rtol=1e-14)


@pytest.mark.cpu_only(reason="parameter-free torch modules: check_parity moves the inputs to DEVICE, the module has no state to move")
def test_fold_and_two_input_modules():
    cols = values((2, 3 * 4, 9), 6)
    check_module_parity(lambda T: T.nn.Fold((4, 4), (2, 2)), cols, name="Fold")
    assert repr(tg.nn.Fold((4, 4), (2, 2))) == repr(torch.nn.Fold((4, 4), (2, 2)))
    a, b = values((3, 5), 7), values((3, 5), 8)
    check_parity(lambda x, y: tg.nn.CosineSimilarity(dim=1)(x, y), lambda x, y: torch.nn.CosineSimilarity(dim=1)(x, y),
                 a, b, name="CosineSimilarity")
    check_parity(lambda x, y: tg.nn.PairwiseDistance(p=3)(x, y), lambda x, y: torch.nn.PairwiseDistance(p=3)(x, y),
                 a, b, name="PairwiseDistance")


@given(shape=st.sampled_from([(1, 8, 2, 3), (2, 4, 3, 3), (4, 2, 2)]), r=st.sampled_from([1, 2]), seed=seeds,
       dtype=DTYPES)
def test_pixel_shuffle_parity(shape, r, seed, dtype):
    """a permutation of the elements, its gradient the inverse permutation (as torch's)."""
    x = values(shape, seed + 1)
    check_parity(lambda t: F.pixel_shuffle(t, r), lambda t: TF.pixel_shuffle(t, r), x, dtype=dtype, seed=seed,
                 name="pixel_shuffle")
    check_parity(lambda t: F.pixel_unshuffle(F.pixel_shuffle(t, r), r), lambda t: t * 1, x, dtype=dtype, seed=seed,
                 name="pixel_unshuffle o pixel_shuffle")


def test_pixel_shuffle_errors_and_finite_differences():
    assert gradcheck(lambda t: F.pixel_shuffle(t, 2) ** 2, [values((1, 4, 2, 2), 9)])
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="divisible by the square of upscale_factor"):
            lib.nn.functional.pixel_shuffle(lib.zeros(1, 3, 2, 2), 2)
        with pytest.raises(RuntimeError, match="at least 3 dimensions"):
            lib.nn.functional.pixel_shuffle(lib.zeros(4, 2), 2)


@given(shape=st.sampled_from([(1, 1), (3, 3), (2, 5), (4, 2)]), seed=seeds, dtype=DTYPES)
def test_trace_parity(shape, seed, dtype):
    check_parity(tg.trace, torch.trace, values(shape, seed + 1), dtype=dtype, seed=seed, name="trace")


def test_trace_method_errors_and_finite_differences():
    assert gradcheck(lambda t: t.trace() * t.sum(), [values((3, 4), 1)])
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="trace: expected a matrix, but got tensor with dim 1"):
            lib.trace(lib.ones(3))


@pytest.mark.cpu_only(reason="legacy constructors' shapes and dtypes, constants")
def test_tensor_new_and_constants_and_accelerator():
    for dtype in ("float32", "float64", "int32", "int64"):
        x, y = tg.ones(2, dtype=getattr(tg, dtype)), torch.ones(2, dtype=getattr(torch, dtype))
        for args in [(2, 3), ([1, 2],), ()]:
            a, b = x.new(*args), y.new(*args)
            assert a.shape == tuple(b.shape) and a.numpy().dtype == b.numpy().dtype
    assert (tg.pi, tg.e, tg.inf) == (torch.pi, torch.e, torch.inf) == (math.pi, math.e, math.inf)
    assert math.isnan(tg.nan) and isinstance(tg.pi, float)
    assert tg.accelerator.is_available() is False and tg.accelerator.current_accelerator() is None
    assert tg.accelerator.device_count() == 0
    device = tg.accelerator.current_accelerator().type if tg.accelerator.is_available() else "cpu"
    assert tg.zeros(1, device=device).shape == (1,)
    with pytest.raises(RuntimeError, match="no accelerator is available"):
        tg.accelerator.set_device_index(0)
