"""Small names teaching code uses, against torch: Tensor.random_, torch.dist / Tensor.dist
(tinygrad_tx/ops/misc.py), torch.random (tinygrad_tx/random.py), torch.set_printoptions
(tinygrad_tx/printing.py)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tinygrad_tx as tg
from reference.testing import DEVICE, check_parity
from tinygrad_tx import gradcheck
from tinygrad_tx.testing.strategies import broadcastable_pair, seeds, values

DTYPES = st.sampled_from([np.float64, np.float32])


# ============================================================================ random_

@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32", "int8", "uint8", "bool"])
@pytest.mark.cpu_only(reason="the ranges of random draws, not values")
def test_random_default_range_matches_torch(dtype):
    """random_() draws from the same range as torch's (checked on 4000 draws each side)."""
    ours = tg.zeros(4000, dtype=getattr(tg, dtype)).random_()
    ref = torch.zeros(4000, dtype=getattr(torch, dtype)).random_()
    a, b = ours.numpy().astype(np.float64), ref.numpy().astype(np.float64)
    assert ours.numpy().dtype == ref.numpy().dtype
    assert a.min() >= 0 and a.max() <= (ref.numpy().dtype == np.bool_ or b.max() * 1.01 + 1) and \
        (dtype in ("bool", "uint8", "int8") or a.max() > b.max() / 4)
    if dtype in ("bool", "uint8", "int8"):
        assert set(np.unique(a)) <= set(range(0, 256)) and a.max() > b.max() / 2


@given(low=st.integers(-5, 5), span=st.integers(1, 6), one_arg=st.booleans(), seed=seeds,
       dtype=st.sampled_from(["float32", "float64", "int64"]))
def test_random_range_and_generator(low, span, one_arg, seed, dtype):
    args = (span,) if one_arg else (low, low + span)
    lo, hi = (0, span) if one_arg else (low, low + span)
    g1, g2 = tg.Generator().manual_seed(seed), tg.Generator().manual_seed(seed)
    a = tg.zeros(200, dtype=getattr(tg, dtype)).random_(*args, generator=g1)
    b = tg.zeros(200, dtype=getattr(tg, dtype)).random_(*args, generator=g2)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    v = a.numpy()
    assert v.min() >= lo and v.max() < hi and np.all(v == np.round(v))
    assert np.unique(v).size == min(span, np.unique(v).size) and (span == 1 or np.unique(v).size > 1)


def test_random_autograd_rules_and_errors():
    x = tg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        x.random_(5)
    y = x * 2
    y.random_(4)                      # the new values do not depend on the old ones: gradient 0
    (y * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=5 >= to=5"):
            lib.zeros(3).random_(5, 5)
    with pytest.raises(TypeError, match="argument 'to' must be an int, got 2.5"):
        tg.zeros(3).random_(0, 2.5)
    with pytest.raises(TypeError, match="at most 2 positional"):
        tg.zeros(3).random_(0, 2, 3)


# ============================================================================ dist

@given(shapes=broadcastable_pair(), p=st.sampled_from([1, 2, 3, 1.5, float("inf")]), seed=seeds, dtype=DTYPES)
def test_dist_parity(shapes, p, seed, dtype):
    """‖input − other‖_p over every element (broadcast): value and both gradients as torch's.
    'distinct' values keep every |difference| away from 0 and (p = inf) the maximum unique."""
    a, b = values(shapes[0], seed + 1, "distinct"), np.array(values(shapes[1], seed + 2, "distinct") * 0.01)
    # p = 1: d‖d‖₁/d(other) = −Σ sign(d) over the elements broadcast against it, exactly 0 when the
    # signs balance (two elements of opposite sign against one 0-d other): allowed, not blind elsewhere
    check_parity(lambda x, y: tg.dist(x, y, p), lambda x, y: torch.dist(x, y, p), a, b, dtype=dtype, seed=seed,
                 name=f"dist p={p}", allow_zero_grad=(1,) if p == 1 else ())


@pytest.mark.cpu_only(reason="a 0-d p=0 count and argument errors; the parity property above runs on DEVICE")
def test_dist_method_finite_differences_and_errors():
    a, b = values((3, 4), 1, "distinct"), values((4,), 2, "distinct") * 0.01
    for p in (1, 2, 3.5, float("inf")):
        assert gradcheck(lambda x, y: x.dist(y, p), [a, b])
    z = tg.ones(3, requires_grad=True)
    tg.dist(z, tg.ones(3)).backward()             # ‖0‖: gradient 0, as torch's
    np.testing.assert_array_equal(z.grad.numpy(), [0.0, 0.0, 0.0])
    assert float(tg.dist(tg.ones(2, 3), tg.zeros(3), p=0)) == float(torch.dist(torch.ones(2, 3), torch.zeros(3), p=0))
    with pytest.raises(TypeError, match="argument 'p' must be a number, got 'fro'"):
        tg.dist(tg.ones(2), tg.ones(2), "fro")
    with pytest.raises(TypeError, match="must be Tensors"):
        tg.dist(tg.ones(2), [1.0, 2.0])


# ============================================================================ torch.random

def test_torch_random_module():
    tg.random.manual_seed(42)
    a = tg.rand(3)
    tg.random.manual_seed(seed=42)
    np.testing.assert_array_equal(a.numpy(), tg.rand(3).numpy())
    assert tg.random.initial_seed() == 42
    state = tg.random.get_rng_state()
    b = tg.rand(2)
    tg.random.set_rng_state(state)
    np.testing.assert_array_equal(b.numpy(), tg.rand(2).numpy())
    with tg.random.fork_rng():
        inside = tg.rand(2)
    np.testing.assert_array_equal(inside.numpy(), tg.rand(2).numpy())   # the state was restored
    assert tg.random.manual_seed is tg.manual_seed


# ============================================================================ set_printoptions

def test_set_printoptions():
    try:
        tg.set_printoptions(sci_mode=False)
        assert "e-" not in repr(tg.tensor([1e-8, 1.0]))
        tg.set_printoptions(threshold=5, edgeitems=2)
        assert "..." in repr(tg.arange(100))
        tg.set_printoptions(precision=8)
        assert tg.get_printoptions()["precision"] == 8
        tg.set_printoptions(profile="full")
        assert "..." not in repr(tg.arange(2000))
        with pytest.raises(ValueError, match="profile must be one of default, short, full, got 'long'"):
            tg.set_printoptions(profile="long")
        with pytest.raises(TypeError, match="sci_mode must be True, False or None, got 'no'"):
            tg.set_printoptions(sci_mode="no")
        with pytest.raises(TypeError, match="threshold must be a non-negative number, got -1"):
            tg.set_printoptions(threshold=-1)
    finally:
        tg.set_printoptions(profile="default")
    assert "..." in repr(tg.arange(2000)) and tg.get_printoptions()["precision"] == 4


# ============================================================================ resize_, Module.to_empty, load_state_dict(assign=)

@pytest.mark.cpu_only(reason="in-place shape and memory semantics of resize_, no arithmetic")
def test_resize_matches_torch():
    for first, second in [((2, 3), (6,)), ((2, 3), (4,)), ((4,), (1, 2, 2))]:
        ours, ref = tg.arange(6.0), torch.arange(6.0)
        assert ours.resize_(*first) is ours
        ref.resize_(*first)
        np.testing.assert_array_equal(ours.numpy(), ref.numpy())
        ours.resize_(second)
        ref.resize_(second)
        np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    x = tg.arange(6.0)
    version = x._version
    x.resize_(2, 3)
    assert x._version == version + 1
    grown = tg.arange(2.0).resize_(2, 2)
    assert grown.shape == (2, 2) and list(grown.numpy()[0]) == [0.0, 1.0]
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        y = x.resize(3, 2)
    assert y.shape == (3, 2) and x.shape == (2, 3)
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            lib.ones(2, requires_grad=True).resize_(3)
    with pytest.raises(TypeError, match=r"sizes must be non-negative ints, got \(2.5,\)"):
        tg.ones(2).resize_(2.5)


@pytest.mark.cpu_only(reason="state-dict dtypes after assign=True, no values compared")
def test_module_to_empty_and_assign():
    m = tg.nn.Sequential(tg.nn.Linear(2, 3), tg.nn.BatchNorm1d(3))
    assert m.to_empty(device="cpu") is m
    assert [tuple(p.shape) for p in m.parameters()] == [(3, 2), (3,), (3,), (3,)]
    with pytest.raises(RuntimeError, match="cuda"):
        m.to_empty(device="cuda")
    lin, ref = tg.nn.Linear(2, 3), torch.nn.Linear(2, 3)
    state = {"weight": np.ones((3, 2)), "bias": np.zeros(3)}
    lin.load_state_dict(state, assign=True)
    ref.load_state_dict({k: torch.tensor(v) for k, v in state.items()}, assign=True)
    assert lin.weight.dtype == tg.float64 and ref.weight.dtype == torch.float64     # the state dict's dtype
    assert lin.weight.requires_grad and isinstance(lin.weight, tg.nn.Parameter)
    lin2 = tg.nn.Linear(2, 3)
    lin2.load_state_dict(state)                                                     # default: cast, copied
    assert lin2.weight.dtype == tg.float32
    with pytest.raises(TypeError, match="assign must be a bool, got 'yes'"):
        lin2.load_state_dict(state, assign="yes")


def test_size_behaves_as_torch_size():
    """t.shape / t.size() are a Size (torch.Size): a tuple of ints with numel(); slicing, + and *
    keep the type; equal to plain tuples; bad sizes are a TypeError naming the value."""
    t, r = tg.zeros(2, 3, 4), torch.zeros(2, 3, 4, device=DEVICE)
    for ours, theirs in [(t.shape, r.shape), (t.size(), r.size()), (t.shape[1:], r.shape[1:]),
                         (t.shape + (5,), r.shape + (5,)), (t.shape * 2, r.shape * 2), (tg.Size([]), torch.Size([])),
                         (tg.Size([True, 2]), torch.Size([True, 2]))]:
        assert type(ours) is tg.Size and tuple(ours) == tuple(theirs) and ours.numel() == theirs.numel()
    assert t.shape == (2, 3, 4) and (2, 3, 4) == t.shape and t.shape == tg.Size([2, 3, 4]) and t.size(-1) == 4
    assert repr(t.shape) == str(t.shape) == f"{t.shape}" == "tinygrad_tx.Size([2, 3, 4])" and isinstance(t.shape[0], int)
    assert np.zeros(t.shape).shape == (2, 3, 4) and tg.zeros(t.shape).shape == t.shape
    import pickle
    assert pickle.loads(pickle.dumps(t.shape)) == t.shape and type(pickle.loads(pickle.dumps(t.shape))) is tg.Size
    for bad in ([1.5], 3, "ab", [None]):
        with pytest.raises(TypeError):
            torch.Size(bad)
        with pytest.raises(TypeError, match="Size\\(\\): "):
            tg.Size(bad)
