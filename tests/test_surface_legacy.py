"""Legacy names teaching code still uses (tinygrad_tx/legacy.py), against torch: the typed
constructors FloatTensor/LongTensor/... and their isinstance checks, autograd.Variable, range."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tinygrad_tx as tg
from tinygrad_tx.legacy import Variable, legacy_range

NAMES = ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
         "ByteTensor", "BoolTensor"]


@pytest.mark.parametrize("name", NAMES)
def test_typed_constructors_match_torch(name):
    ours, theirs = getattr(tg, name), getattr(torch, name)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    for args in [(2, 3), (), (0,), (4,)]:
        a, b = ours(*args), theirs(*args)
        assert a.shape == tuple(b.shape) and np.dtype(a.dtype) == b.numpy().dtype
    data = [[1, 0], [3, 1]]
    a, b = ours(data), theirs(data)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert a.numpy().dtype == b.numpy().dtype and not a.requires_grad
    a = ours(np.array([1, 0, 1]))
    np.testing.assert_array_equal(a.numpy(), theirs(np.array([1, 0, 1])).numpy())
    assert isinstance(a, ours) and not isinstance(tg.zeros(1, dtype=tg.complex64 if False else tg.float64), ours) \
        or name == "DoubleTensor"
    assert repr(ours) == f"<class 'tinygrad_tx.{name}'>"


def test_isinstance_and_alias():
    x = tg.ones(2, requires_grad=True)
    assert isinstance(x, tg.FloatTensor) and not isinstance(x, tg.DoubleTensor)
    assert isinstance(tg.nn.Parameter(tg.ones(1)), tg.FloatTensor)
    assert isinstance(tg.tensor([1, 2]), tg.LongTensor) and not isinstance(tg.tensor([1, 2]), tg.FloatTensor)
    assert not isinstance(np.ones(2, np.float32), tg.FloatTensor)
    y = tg.FloatTensor(x)                # an alias: the gradient flows through, as torch's AliasBackward
    assert y is not x and y.requires_grad
    (y * tg.tensor([2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 3.0])


@pytest.mark.parametrize("args, kwargs, exc, pattern", [
    ((tg.ones(2, dtype=tg.int64),), {}, TypeError, "dtype float32, got one of dtype int64"),
    (("a",), {}, TypeError, "invalid data type 'str'"),
    ((2.5,), {}, TypeError, "data must be a sequence .*2.5"),
    (([1, 2], 3), {}, TypeError, "sizes .*or one sequence"),
    ((-1,), {}, RuntimeError, "negative dimension"),
    (([1.0],), {"requires_grad": True}, TypeError, "requires_grad"),
])
@pytest.mark.cpu_only(reason="constructor argument errors, no tensor computed")
def test_typed_constructor_errors(args, kwargs, exc, pattern):
    with pytest.raises(exc, match=pattern):
        tg.FloatTensor(*args, **kwargs)
    with pytest.raises(exc):                 # torch raises the same class
        torch.FloatTensor(*[torch.ones(2, dtype=torch.int64) if isinstance(a, tg.Tensor) else a for a in args],
                          **kwargs)


@pytest.mark.cpu_only(reason="Variable's detach/requires_grad semantics, no values compared")
def test_variable_is_a_detached_tensor():
    x = tg.ones(2, requires_grad=True)
    v = Variable(x * 2)
    tv = torch.autograd.Variable(torch.ones(2, requires_grad=True) * 2)
    assert v.requires_grad == tv.requires_grad is False and v.is_leaf
    w = Variable(tg.ones(3), requires_grad=True)
    assert w.requires_grad and w.is_leaf and isinstance(w, Variable) and isinstance(tg.ones(1), Variable)
    (w * w).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0, 2.0])
    with pytest.warns(UserWarning, match="volatile was removed"):
        assert not Variable(tg.ones(1), volatile=True).requires_grad
    assert Variable().shape == (0,) == tuple(torch.autograd.Variable().shape)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        Variable([1.0])
    with pytest.raises(RuntimeError):
        Variable(tg.ones(1, dtype=tg.int64), requires_grad=True)


@given(start=st.integers(-20, 20), n=st.integers(0, 30), step=st.sampled_from([1, 2, 3, 0.5, 0.3, 0.1, -1, -0.7]),
       dtype=st.sampled_from([None, "float64", "int64"]))
def test_range_matches_torch(start, n, step, dtype):
    if dtype == "int64" and isinstance(step, float):
        step = -2 if step < 0 else 2          # torch's integer range with a fractional step dies (SIGFPE)
    end = start + n * step + (0.5 * step if isinstance(step, float) and n % 3 == 0 else 0)
    kw = {} if dtype is None else {"dtype": getattr(tg, dtype)}
    tkw = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.range(start, end, step, **tkw)
    with pytest.warns(UserWarning, match="range is deprecated"):
        ours = tg.range(start, end, step, **kw)
    assert ours.shape == tuple(ref.shape) and ours.numpy().dtype == ref.numpy().dtype
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())


def test_range_errors_and_grad():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert tg.range(1, 4, requires_grad=True).requires_grad
        assert tg.range is legacy_range
        with pytest.raises(RuntimeError, match=r"inconsistent with step sign \(start=0, end=-1, step=1\)"):
            tg.range(0, -1)
        with pytest.raises(RuntimeError, match="step must be nonzero"):
            tg.range(0, 1, 0)
        with pytest.raises(TypeError, match="argument 'start' must be a number, got 'a'"):
            tg.range("a", 1)
