"""Factories and random generators against the real torch.

* every factory and argument form: the same expression runs on ``tinygrad_tx`` and on
  ``torch`` (``M`` is either module) and must give the same shape, dtype and requires_grad,
  and the same values where they are deterministic (float arange/linspace/logspace: within a
  few ulps, see factories.py);
* every error case: torch must raise too; ours raises the same class where torch's is a
  TypeError/ValueError/IndexError, else the class listed;
* Generator: seeds, states, reproducibility, and that each draw uses the generator passed;
* distributions: moments within a few standard errors at fixed seeds (deterministic);
* NormalSample/BernoulliSample/PoissonSample: outputs and (zero) gradients vs torch with
  ``check_parity`` on degenerate parameters, and finite differences where they apply.
"""
from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

import tinygrad_tx as tg
from reference.testing import DEVICE, check_parity
from tinygrad_tx.testing.strategies import non_contiguous, seeds, shapes
from tinygrad_tx import factories, generator as gen_mod, gradcheck
from tinygrad_tx.random_factories import BernoulliSample, NormalSample, PoissonSample


def _np_dtype(t):
    return np.dtype(str(t.dtype).removeprefix("torch.")) if isinstance(t, torch.Tensor) else np.dtype(t.dtype)


def _run(expr, M):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return expr(M)


def assert_like_torch(expr, values="exact", ulps=4):
    """``expr(tg)`` and ``expr(torch)``: same shape, dtype, requires_grad (and values)."""
    ours, ref = _run(expr, tg), _run(expr, torch)
    assert isinstance(ours, tg.Tensor)
    assert tuple(ours.shape) == tuple(ref.shape), (ours.shape, ref.shape)
    assert np.dtype(ours.dtype) == _np_dtype(ref), (ours.dtype, ref.dtype)
    assert ours.requires_grad == ref.requires_grad
    a, b = ours._data, ref.detach().cpu().numpy()
    if values == "exact":
        np.testing.assert_array_equal(a, b)
    elif values == "approx":
        scale = np.max(np.abs(b)) if b.size else 0.0    # ulps of the largest value (complex: of |b|)
        np.testing.assert_allclose(a, b, rtol=0, atol=ulps * np.spacing(np.abs(np.asarray(scale, b.dtype))))
    return ours, ref


def assert_raises_like_torch(expr, ours_cls=None):
    """torch raises; ours raises ``ours_cls`` (default: torch's own class, which must then
    be a TypeError, ValueError or IndexError)."""
    with pytest.raises(Exception) as ref:
        _run(expr, torch)
    expected = ours_cls or type(ref.value)
    assert ours_cls or expected in (TypeError, ValueError, IndexError), \
        f"torch raised {type(ref.value).__name__}: name our class explicitly"
    with pytest.raises(expected):
        _run(expr, tg)


# ============================================================================ deterministic factories

DETERMINISTIC = {
    "zeros varargs": lambda M: M.zeros(2, 3), "zeros tuple": lambda M: M.zeros((2, 3)),
    "zeros list": lambda M: M.zeros([2, 3]), "zeros size=": lambda M: M.zeros(size=(2, 3)),
    "zeros ()": lambda M: M.zeros(()), "zeros []": lambda M: M.zeros([]), "zeros 0": lambda M: M.zeros(0, 4),
    "zeros np.int64": lambda M: M.zeros(np.int64(2), 3),
    "zeros int32": lambda M: M.zeros(2, dtype=M.int32),
    "zeros float64 rg": lambda M: M.zeros(2, dtype=M.float64, requires_grad=True),
    "zeros py int": lambda M: M.zeros(2, dtype=int), "zeros py bool": lambda M: M.zeros(2, dtype=bool),
    "zeros py float": lambda M: M.zeros(2, dtype=float), "zeros cpu": lambda M: M.zeros(2, device="cpu"),
    "ones": lambda M: M.ones(3), "ones int64": lambda M: M.ones(2, 3, dtype=M.int64),
    "ones rg": lambda M: M.ones((2,), requires_grad=True),
    "full float": lambda M: M.full((2, 3), 1.0), "full int": lambda M: M.full((2, 3), 1),
    "full bool": lambda M: M.full((2, 3), True), "full list": lambda M: M.full([3], 2.5),
    "full ()": lambda M: M.full((), 1.0), "full cast": lambda M: M.full((2,), 1.5, dtype=M.int64),
    "full np.float64": lambda M: M.full((2,), np.float64(3.0)), "full np.int32": lambda M: M.full((2,), np.int32(3)),
    "full 0-d tensor": lambda M: M.full((2,), M.tensor(3.0)),
    "full kw": lambda M: M.full(size=(2,), fill_value=1), "full rg": lambda M: M.full((2,), 1.0, requires_grad=True),
    "tensor ints": lambda M: M.tensor([1, 2]), "tensor floats": lambda M: M.tensor([1.0, 2]),
    "tensor bools": lambda M: M.tensor([True, False]), "tensor bool+int": lambda M: M.tensor([True, 1]),
    "tensor int": lambda M: M.tensor(3), "tensor float": lambda M: M.tensor(3.5), "tensor bool": lambda M: M.tensor(False),
    "tensor []": lambda M: M.tensor([]), "tensor [[]]": lambda M: M.tensor([[]]),
    "tensor 2-D": lambda M: M.tensor([[1, 2], [3, 4]]), "tensor tuples": lambda M: M.tensor(((1.5, 2), (3, 4))),
    "tensor range": lambda M: M.tensor(range(3)), "tensor int32 array": lambda M: M.tensor(np.array([1, 2], np.int32)),
    "tensor f64 array": lambda M: M.tensor(np.arange(6.0).reshape(2, 3).T),
    "tensor np scalar": lambda M: M.tensor(np.float64(2.0)), "tensor 0-d array": lambda M: M.tensor(np.array(2.0)),
    "tensor [np.float64, int]": lambda M: M.tensor([np.float64(2.0), 1]),
    "tensor [np.int32, int]": lambda M: M.tensor([np.int32(2), 1]),
    "tensor [np.float32, float]": lambda M: M.tensor([np.float32(2.5), 1.0]),
    "tensor dtype=float": lambda M: M.tensor([1, 2], dtype=float),
    "tensor f64 rg": lambda M: M.tensor([1, 2], dtype=M.float64, requires_grad=True),
    "tensor truncates": lambda M: M.tensor([1.5, -2.7], dtype=M.int64),
    "tensor of 0-d tensors": lambda M: M.tensor([M.tensor(1.0), M.tensor(2.0)]),
    "tensor of 1-elem tensors": lambda M: M.tensor([M.tensor([1.0]), M.tensor([2.0])]),
    "tensor mixed tensor": lambda M: M.tensor([M.tensor(1), 2.5]),
    "tensor f64 tensor inside": lambda M: M.tensor([[M.tensor(1.0, dtype=M.float64), 2], [3, 4]]),
    "tensor of arrays": lambda M: M.tensor([np.array([1.0, 2]), np.array([3.0, 4])]),
    "tensor of tensor": lambda M: M.tensor(M.tensor([1.0, 2], requires_grad=True)),
    "tensor of tensor rg": lambda M: M.tensor(M.tensor([1.0, 2]), requires_grad=True),
    "as_tensor list": lambda M: M.as_tensor([1, 2]), "as_tensor f64": lambda M: M.as_tensor(np.array([1.0, 2])),
    "as_tensor cast": lambda M: M.as_tensor(M.tensor([1.0, 2]), dtype=M.float64),
    "as_tensor rg cast": lambda M: M.as_tensor(M.tensor([1.0, 2], requires_grad=True), dtype=M.float64),
    "asarray list": lambda M: M.asarray([1, 2]), "asarray floats": lambda M: M.asarray([1.0, 2]),
    "asarray f64": lambda M: M.asarray(np.array([1.0, 2])), "asarray scalar": lambda M: M.asarray(3.0),
    "asarray dtype": lambda M: M.asarray(np.array([1, 2]), dtype=M.float32),
    "asarray rg": lambda M: M.asarray(np.array([1.0, 2]), requires_grad=True),
    "from_numpy": lambda M: M.from_numpy(np.array([1, 2])),
    "from_numpy uint8": lambda M: M.from_numpy(np.array([[1, 2]], np.uint8)),
    "zeros_like": lambda M: M.zeros_like(M.zeros(2, dtype=M.int32)),
    "zeros_like rg input": lambda M: M.zeros_like(M.zeros(2, requires_grad=True)),
    "zeros_like dtype rg": lambda M: M.zeros_like(M.zeros(2, dtype=M.int32), dtype=M.float64, requires_grad=True),
    "ones_like": lambda M: M.ones_like(M.zeros((2, 3), dtype=M.float64)),
    "full_like cast": lambda M: M.full_like(M.zeros(2, dtype=M.int32), 2.7),
    "full_like dtype": lambda M: M.full_like(M.zeros(2), 2.7, dtype=M.int64),
    "full_like bool": lambda M: M.full_like(M.zeros(2), True),
    "eye": lambda M: M.eye(3), "eye n m": lambda M: M.eye(2, 3), "eye int": lambda M: M.eye(3, dtype=M.int64),
    "eye 0": lambda M: M.eye(0), "eye rg": lambda M: M.eye(3, 3, requires_grad=True),
    "eye kw": lambda M: M.eye(n=2, m=3), "eye np.int64": lambda M: M.eye(np.int64(2)),
    "arange n": lambda M: M.arange(5), "arange start end": lambda M: M.arange(1, 5),
    "arange neg step": lambda M: M.arange(5, 0, -1), "arange empty": lambda M: M.arange(5, 5),
    "arange int64 trunc": lambda M: M.arange(0, 5.5, 1.5, dtype=M.int64),
    "arange int32 trunc": lambda M: M.arange(0, 5.5, 1.5, dtype=M.int32),
    "arange int64 start": lambda M: M.arange(0.5, 5, 1, dtype=M.int64),
    "arange np.int64": lambda M: M.arange(np.int64(3)), "arange np.float64": lambda M: M.arange(np.float64(3)),
    "arange tensor": lambda M: M.arange(M.tensor(3)), "arange float tensor": lambda M: M.arange(M.tensor(3.0)),
    "arange bool": lambda M: M.arange(True), "arange rg": lambda M: M.arange(3.0, requires_grad=True),
    "arange end=": lambda M: M.arange(end=3), "arange start= end=": lambda M: M.arange(start=1, end=3),
    "arange step=": lambda M: M.arange(0, 3, step=0.5), "arange huge": lambda M: M.arange(1e20, 1e20 + 1),
    "arange f64": lambda M: M.arange(0, 1, 0.25, dtype=M.float64),
    "linspace": lambda M: M.linspace(0, 1, 5), "linspace 1": lambda M: M.linspace(0, 1, 1),
    "linspace 0": lambda M: M.linspace(0, 1, 0), "linspace int": lambda M: M.linspace(0, 10, 7, dtype=M.int64),
    "linspace int neg": lambda M: M.linspace(-5, 10, 7, dtype=M.int64),
    "linspace f64": lambda M: M.linspace(0, 10, 5, dtype=M.float64),
    "linspace tensors": lambda M: M.linspace(M.tensor(0.0), M.tensor(1.0), 3),
    "linspace tensor steps": lambda M: M.linspace(0, 1, M.tensor(3)),
    "linspace rg": lambda M: M.linspace(0, 1, 3, requires_grad=True),
    "logspace": lambda M: M.logspace(0, 2, 3), "logspace base": lambda M: M.logspace(0, 2, 3, base=2),
    "logspace int": lambda M: M.logspace(0, 2, 3, dtype=M.int64), "logspace 1": lambda M: M.logspace(0, 2, 1),
    "logspace 0": lambda M: M.logspace(0, 2, 0),
    "new_zeros": lambda M: M.zeros(2, dtype=M.float64).new_zeros(3),
    "new_zeros tuple": lambda M: M.zeros(2, dtype=M.float64).new_zeros((3, 4)),
    "new_zeros size=": lambda M: M.zeros(2, dtype=M.float64).new_zeros(size=(3, 4)),
    "new_zeros dtype": lambda M: M.zeros(2, dtype=M.float64).new_zeros(3, dtype=M.int32),
    "new_zeros of rg": lambda M: M.zeros(2, requires_grad=True).new_zeros(2),
    "new_ones": lambda M: M.zeros(2, dtype=M.int32).new_ones(3),
    "new_full": lambda M: M.zeros(2, dtype=M.int32).new_full((3,), 2.5),
    "new_tensor": lambda M: M.zeros(2, dtype=M.float64).new_tensor([1, 2]),
    "new_tensor cast": lambda M: M.zeros(2, dtype=M.int32).new_tensor([1.5, 2]),
    "new_tensor array": lambda M: M.zeros(2, dtype=M.int32).new_tensor(np.array([1.5, 2])),
    "new_tensor rg": lambda M: M.zeros(2, dtype=M.float64).new_tensor([1, 2], requires_grad=True),
}


@pytest.mark.parametrize("name", list(DETERMINISTIC))
def test_factory_like_torch(name):
    approx = name.startswith(("arange", "linspace", "logspace")) and "int" not in name
    assert_like_torch(DETERMINISTIC[name], "approx" if approx else "exact")


SHAPE_ONLY = {  # uninitialised memory or random draws: shape, dtype and requires_grad only
    "empty": lambda M: M.empty(2, 3), "empty int": lambda M: M.empty((2,), dtype=M.int64),
    "empty_like": lambda M: M.empty_like(M.zeros(2, dtype=M.int32)),
    "new_empty": lambda M: M.zeros(2, dtype=M.float64).new_empty(2),
    "rand": lambda M: M.rand(2, 3), "rand gen": lambda M: M.rand((2, 3), generator=M.Generator()),
    "rand f64 rg": lambda M: M.rand(2, dtype=M.float64, requires_grad=True),
    "randn": lambda M: M.randn(size=(4,)), "randn f64": lambda M: M.randn(2, 2, dtype=M.float64),
    "randint high": lambda M: M.randint(5, (3,)), "randint low high": lambda M: M.randint(2, 5, (3,)),
    "randint float": lambda M: M.randint(5, (3,), dtype=M.float32),
    "randint kw": lambda M: M.randint(low=1, high=3, size=(3,)), "randint high=": lambda M: M.randint(high=3, size=(3,)),
    "randint size=": lambda M: M.randint(3, size=(3,)), "randint bool": lambda M: M.randint(2, (3,), dtype=M.bool),
    "randint float rg": lambda M: M.randint(5, (3,), dtype=M.float32, requires_grad=True),
    "randint big": lambda M: M.randint(0, 2**63 - 1, (2,)),
    "randperm": lambda M: M.randperm(5), "randperm 0": lambda M: M.randperm(0),
    "randperm float": lambda M: M.randperm(5, dtype=M.float32), "randperm int32": lambda M: M.randperm(5, dtype=M.int32),
    "normal numbers": lambda M: M.normal(0.0, 1.0, (2, 3)), "normal ints": lambda M: M.normal(0, 1, (2, 3)),
    "normal f64": lambda M: M.normal(0.0, 1.0, size=(2, 3), dtype=M.float64),
    "normal rg": lambda M: M.normal(0.0, 1.0, (3,), requires_grad=True),
    "normal tensor mean": lambda M: M.normal(M.zeros(3), 1.0),
    "normal f64 mean": lambda M: M.normal(M.zeros(3, dtype=M.float64), 1.0),
    "normal tensor std": lambda M: M.normal(0.0, M.ones(3)),
    "normal broadcast": lambda M: M.normal(M.zeros(3), M.ones(2, 3)),
    "normal mixed dtypes": lambda M: M.normal(M.zeros(3), M.ones(3, dtype=M.float64)),
    "normal rg mean": lambda M: M.normal(M.zeros(3, requires_grad=True), 1.0),
    "multinomial repl": lambda M: M.multinomial(M.tensor([0.2, 0.8]), 3, replacement=True),
    "multinomial zeros last": lambda M: M.multinomial(M.tensor([0.2, 0.8, 0.0]), 3),
    "multinomial 2-D": lambda M: M.multinomial(M.tensor([[1.0, 2.0], [3, 4]]), 2),
    "multinomial empty rows": lambda M: M.multinomial(M.ones(0, 3), 1),
    "multinomial f64 rg": lambda M: M.multinomial(M.tensor([1.0, 2.0], dtype=M.float64, requires_grad=True), 2),
    "multinomial method": lambda M: M.ones(3).multinomial(2),
    "bernoulli": lambda M: M.bernoulli(M.tensor([0.2, 0.8])),
    "bernoulli f64": lambda M: M.bernoulli(M.tensor([0.2, 0.8], dtype=M.float64)),
    "bernoulli p": lambda M: M.bernoulli(M.zeros(3), 0.5), "bernoulli int p": lambda M: M.bernoulli(M.zeros(3, dtype=M.int64), 0.5),
    "bernoulli gen": lambda M: M.bernoulli(M.zeros(3), p=0.5, generator=M.Generator()),
    "bernoulli rg": lambda M: M.bernoulli(M.full((3,), 0.5, requires_grad=True)),
    "bernoulli method": lambda M: M.ones(3).bernoulli(), "bernoulli method p": lambda M: M.full((3,), 0.5).bernoulli(0.1),
    "poisson": lambda M: M.poisson(M.tensor([1.0, 2.0])), "poisson rg": lambda M: M.poisson(M.ones(2, requires_grad=True)),
    "rand_like": lambda M: M.rand_like(M.zeros(2, dtype=M.float64)),
    "rand_like gen": lambda M: M.rand_like(M.zeros(2), generator=M.Generator()),
    "randn_like": lambda M: M.randn_like(M.zeros(2, 3)),
    "randint_like": lambda M: M.randint_like(M.zeros(2), 5), "randint_like low": lambda M: M.randint_like(M.zeros(2), 2, 5),
    "randint_like int32": lambda M: M.randint_like(M.zeros(2, dtype=M.int32), 5),
    "randint_like high=": lambda M: M.randint_like(M.zeros(2), high=5),
}


@pytest.mark.parametrize("name", list(SHAPE_ONLY))
def test_random_factory_like_torch(name):
    assert_like_torch(SHAPE_ONLY[name], values=None)


def test_random_values_in_range():
    g = tg.Generator().manual_seed(7)
    assert set(np.unique(tg.randint(2, 5, (500,), generator=g)._data)) == {2, 3, 4}
    assert sorted(tg.randperm(50, generator=g)._data.tolist()) == list(range(50))
    assert set(np.unique(tg.bernoulli(tg.full((500,), 0.5), generator=g)._data)) == {0.0, 1.0}
    r = tg.rand(10000, generator=g)._data
    assert r.min() >= 0 and r.max() < 1
    m = tg.multinomial(tg.tensor([[0.0, 1, 1, 0, 1]] * 20), 3, generator=g)._data
    assert all(sorted(row) == [1, 2, 4] for row in m.tolist())   # without replacement: the nonzero ones
    assert tg.multinomial(tg.tensor([0.0, 1, 0]), 5, True, generator=g)._data.tolist() == [1] * 5


def test_float32_uniform_never_reaches_high():
    # a float64 draw just below 1 rounds to 1.0 in float32; it must be moved below
    class AlmostOne(np.random.Generator):
        def random(self, size=None, dtype=np.float64, out=None):
            return np.full(size, 1 - 2.0 ** -30)
    v = tg.rand(4, generator=AlmostOne(np.random.PCG64(0)))._data
    assert v.dtype == np.float32 and (v < 1).all()
    assert (factories.draw_uniform((3,), tg.float32, -1.0, 1.0, AlmostOne(np.random.PCG64(0))) < 1).all()


# ============================================================================ copies and sharing

def test_tensor_copies_from_numpy_shares():
    a = np.arange(4.0)
    t, f, s = tg.tensor(a), tg.from_numpy(a), tg.as_tensor(a)
    a[0] = 100.0
    assert t._data[0] == 0.0 and f._data[0] == 100.0 and s._data[0] == 100.0
    f._data[1] = -1.0
    assert a[1] == -1.0
    src = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match="detach"):
        c = tg.tensor(src)
    assert not np.shares_memory(c._data, src._data) and c.is_leaf and not c.requires_grad
    assert tg.as_tensor(src) is src and tg.asarray(src) is src
    assert np.shares_memory(tg.asarray(a)._data, a) and not np.shares_memory(tg.asarray(a, copy=True)._data, a)
    with pytest.raises(ValueError):
        tg.asarray(a, dtype=tg.float32, copy=False)
    with pytest.raises(ValueError):
        tg.asarray([1, 2], copy=False)
    cast = tg.as_tensor(src, dtype=tg.float64)
    cast.sum().backward()
    np.testing.assert_array_equal(np.asarray(src.grad), [1.0, 1.0])   # as_tensor's cast is differentiable
    with pytest.warns(UserWarning, match="not writable"):
        ro = a.copy()
        ro.flags.writeable = False
        tg.from_numpy(ro)


@given(st.recursive(st.one_of(st.integers(-2**62, 2**62), st.floats(-1e6, 1e6), st.booleans()),
                    lambda kids: st.integers(1, 3).flatmap(lambda n: st.lists(kids, min_size=n, max_size=n)),
                    max_leaves=12))
def test_tensor_nested_lists_like_torch(data):
    try:
        ref = torch.tensor(data, device=DEVICE)
    except (ValueError, TypeError):
        with pytest.raises(ValueError):   # ragged: both refuse
            tg.tensor(data)
        return
    assert_like_torch(lambda M: M.tensor(data))
    assert ref.dtype in (torch.int64, torch.float32, torch.bool)


# ============================================================================ ranges against torch (hypothesis)

@given(st.integers(-50, 50), st.integers(-50, 50), st.integers(-7, 7).filter(bool))
def test_arange_ints_like_torch(start, end, step):
    if (end - start) * step < 0:
        assert_raises_like_torch(lambda M: M.arange(start, end, step), ValueError)
    else:
        assert_like_torch(lambda M: M.arange(start, end, step))


@given(st.floats(-100, 100), st.floats(0.01, 10), st.integers(0, 200), st.sampled_from(["float32", "float64"]))
def test_arange_floats_like_torch(start, step, n, dtype):
    end = start + step * n * 0.999
    assert_like_torch(lambda M: M.arange(start, end, step, dtype=getattr(M, dtype)), "approx", ulps=8)


@given(st.floats(-100, 100), st.floats(-100, 100), st.integers(0, 100),
       st.sampled_from(["float32", "float64", "int64", "int32"]))
def test_linspace_like_torch(start, end, steps, dtype):
    # a step below float32's smallest normal (end = 1.18e-38 over 52 steps: dev profile) is
    # subnormal in torch's float32 arithmetic, with fewer bits than the 8-ulp rule assumes (ours,
    # computed in float64 and rounded, is the nearer one there): steps stay normal numbers
    assume(start == end or steps < 2 or abs(end - start) / (steps - 1) > 1e-30)
    exact = dtype.startswith("int")
    ours, ref = assert_like_torch(lambda M: M.linspace(start, end, steps, dtype=getattr(M, dtype)),
                                  None if exact else "approx", ulps=8)
    if exact:   # torch truncates in double; a value a hair from an integer may round either way
        assert np.abs(ours._data - ref.cpu().numpy()).max(initial=0) <= 1
    if steps:
        assert ours._data[-1] == ref.cpu().numpy()[-1]


@given(st.floats(-3, 3), st.floats(-3, 3), st.integers(0, 40), st.sampled_from([10.0, 2.0, 0.5]))
def test_logspace_like_torch(start, end, steps, base):
    assert_like_torch(lambda M: M.logspace(start, end, steps, base=base, dtype=M.float64), "approx", ulps=64)


@given(shapes(0, 3), st.one_of(st.integers(-5, 5), st.floats(-5, 5), st.booleans()))
def test_full_like_torch(shape, value):
    assert_like_torch(lambda M: M.full(shape, value))
    assert_like_torch(lambda M: M.zeros(*shape, dtype=M.float64) if shape else M.zeros((), dtype=M.float64))
    assert_like_torch(lambda M: M.ones(shape))


# ============================================================================ errors against torch

ERRORS = {   # name: (expression, our class when torch's is not TypeError/ValueError/IndexError)
    "zeros negative": (lambda M: M.zeros(-1, 3), ValueError), "zeros float": (lambda M: M.zeros(2.0, 3), None),
    "zeros float in tuple": (lambda M: M.zeros((2.0, 3)), None), "zeros size=int": (lambda M: M.zeros(size=3), None),
    "zeros no size": (lambda M: M.zeros(), None), "zeros str": (lambda M: M.zeros("a"), None),
    "zeros bool": (lambda M: M.zeros(True), None), "zeros cuda": (lambda M: M.zeros(2, device="cuda"), (RuntimeError, AssertionError)),
    "zeros int rg": (lambda M: M.zeros(2, dtype=M.int64, requires_grad=True), (TypeError, RuntimeError)),
    "empty negative": (lambda M: M.empty(2, -3), ValueError),
    "full int size": (lambda M: M.full(3, 1.0), None), "full str": (lambda M: M.full((2,), "a"), None),
    "full tensor value": (lambda M: M.full((2,), M.tensor([3.0, 4])), None),
    "full negative": (lambda M: M.full((-1,), 1), ValueError),
    "new_full int size": (lambda M: M.zeros(2).new_full(3, 2.5), None),
    "tensor ragged": (lambda M: M.tensor([[1, 2], [3]]), None), "tensor str": (lambda M: M.tensor("abc"), None),
    "tensor [str]": (lambda M: M.tensor(["a"]), None), "tensor object": (lambda M: M.tensor([object()]), RuntimeError),
    "tensor None": (lambda M: M.tensor(None), RuntimeError), "tensor [None]": (lambda M: M.tensor([None]), RuntimeError),
    "tensor of 2-elem tensors": (lambda M: M.tensor([M.tensor([1.0, 3]), M.tensor([2.0, 4])]), None),
    "tensor overflow": (lambda M: M.tensor([2**63]), None), "tensor overflow 2": (lambda M: M.tensor([[1], [-2**64]]), None),
    "tensor str array": (lambda M: M.tensor(np.array(["a"])), None),
    "tensor object array": (lambda M: M.tensor(np.array([1], dtype=object)), None),
    "tensor int rg": (lambda M: M.tensor([1, 2], requires_grad=True), (TypeError, RuntimeError)),
    "from_numpy list": (lambda M: M.from_numpy([1, 2]), None),
    "from_numpy str": (lambda M: M.from_numpy(np.array(["a"])), None),
    "from_numpy negative strides": (lambda M: M.from_numpy(np.arange(3.0)[::-1]), None),
    "from_numpy byte order": (lambda M: M.from_numpy(np.array([1], dtype=">f8")), None),
    "arange step 0": (lambda M: M.arange(0, 5, 0), ValueError), "arange sign": (lambda M: M.arange(0, 5, -1), ValueError),
    "arange inf": (lambda M: M.arange(0, float("inf")), ValueError), "arange nan": (lambda M: M.arange(0, float("nan")), ValueError),
    "arange negative": (lambda M: M.arange(-3), ValueError), "arange str": (lambda M: M.arange("a"), None),
    "arange bool dtype": (lambda M: M.arange(3, dtype=M.bool), TypeError),
    "arange int rg": (lambda M: M.arange(3, requires_grad=True), (TypeError, RuntimeError)),
    "arange truncated step": (lambda M: M.arange(0, 5, 0.5, dtype=M.int64), None),
    "linspace negative": (lambda M: M.linspace(0, 1, -1), ValueError), "linspace float steps": (lambda M: M.linspace(0, 1, 2.0), None),
    "linspace no steps": (lambda M: M.linspace(0, 1), None), "linspace bool steps": (lambda M: M.linspace(0, 1, True), None),
    "eye negative": (lambda M: M.eye(-1), ValueError), "eye negative m": (lambda M: M.eye(2, -1), ValueError),
    "eye float": (lambda M: M.eye(2.0), None), "eye bool": (lambda M: M.eye(True), None),
    "rand int": (lambda M: M.rand(2, dtype=M.int64), TypeError), "randn int": (lambda M: M.randn(2, dtype=M.int64), TypeError),
    "rand_like int": (lambda M: M.rand_like(M.zeros(2, dtype=M.int64)), TypeError),
    "randn_like int": (lambda M: M.randn_like(M.zeros(2, dtype=M.int64)), TypeError),
    "randint int size": (lambda M: M.randint(5, 3), None), "randint empty": (lambda M: M.randint(5, 5, (3,)), ValueError),
    "randint 0": (lambda M: M.randint(0, (3,)), ValueError), "randint negative": (lambda M: M.randint(-2, (3,)), ValueError),
    "randint float": (lambda M: M.randint(1.5, (3,)), None), "randint floats": (lambda M: M.randint(0.5, 3.5, (3,)), None),
    "randint uint8 range": (lambda M: M.randint(0, 300, (2,), dtype=M.uint8), ValueError),
    "randint bool range": (lambda M: M.randint(5, (3,), dtype=M.bool), ValueError),
    "randint int rg": (lambda M: M.randint(5, (3,), requires_grad=True), (TypeError, RuntimeError)),
    "randperm negative": (lambda M: M.randperm(-1), ValueError), "randperm float": (lambda M: M.randperm(2.0), None),
    "normal no size": (lambda M: M.normal(0.0, 1.0), None), "normal negative std": (lambda M: M.normal(0.0, -1.0, (2,)), ValueError),
    "normal shapes": (lambda M: M.normal(M.zeros(3), M.ones(2)), ValueError),
    "normal tensor negative std": (lambda M: M.normal(M.zeros(3), -1.0), ValueError),
    "normal negative std tensor": (lambda M: M.normal(0.0, -M.ones(3)), ValueError),
    "normal int mean": (lambda M: M.normal(M.zeros(3, dtype=M.int64), 1.0), TypeError),
    "normal tensor with size": (lambda M: M.normal(M.zeros(3), 1.0, (3,)), None),
    "normal int size": (lambda M: M.normal(0.0, 1.0, 3), None),
    "multinomial too many": (lambda M: M.multinomial(M.tensor([0.2, 0.8]), 3), ValueError),
    "multinomial zero row": (lambda M: M.multinomial(M.tensor([0.0, 0.0]), 1), ValueError),
    "multinomial zero row 2-D": (lambda M: M.multinomial(M.tensor([[0.0, 0.0], [1, 1]]), 1), ValueError),
    "multinomial negative": (lambda M: M.multinomial(M.tensor([-1.0, 2.0]), 1), ValueError),
    "multinomial inf": (lambda M: M.multinomial(M.tensor([float("inf"), 2.0]), 1), ValueError),
    "multinomial nan": (lambda M: M.multinomial(M.tensor([float("nan"), 2.0]), 1, True), ValueError),
    "multinomial int": (lambda M: M.multinomial(M.tensor([1, 2]), 1), TypeError),
    "multinomial 0-d": (lambda M: M.multinomial(M.tensor(1.0), 1), ValueError),
    "multinomial 3-D": (lambda M: M.multinomial(M.ones(2, 2, 2), 1), ValueError),
    "multinomial 0 samples": (lambda M: M.multinomial(M.tensor([1.0, 2.0]), 0), ValueError),
    "multinomial -1 samples": (lambda M: M.multinomial(M.tensor([1.0, 2.0]), -1), ValueError),
    "multinomial float samples": (lambda M: M.multinomial(M.tensor([1.0, 2.0]), 1.0), None),
    "multinomial no categories": (lambda M: M.multinomial(M.ones(2, 0), 1), ValueError),
    "bernoulli above 1": (lambda M: M.bernoulli(M.tensor([0.2, 1.8])), ValueError),
    "bernoulli negative": (lambda M: M.bernoulli(M.tensor([0.2, -0.8])), ValueError),
    "bernoulli nan": (lambda M: M.bernoulli(M.tensor([0.2, float("nan")])), ValueError),
    "bernoulli int": (lambda M: M.bernoulli(M.tensor([0, 1])), TypeError),
    "bernoulli p above 1": (lambda M: M.bernoulli(M.zeros(3), 1.5), ValueError),
    "bernoulli tensor p": (lambda M: M.bernoulli(M.zeros(3), p=M.ones(3)), None),
    "poisson negative": (lambda M: M.poisson(M.tensor([1.0, -2.0])), ValueError),
    "poisson nan": (lambda M: M.poisson(M.tensor([1.0, float("nan")])), ValueError),
    "poisson int": (lambda M: M.poisson(M.tensor([1, 2])), TypeError),
    "seed too large": (lambda M: M.Generator().manual_seed(2**64), None),
    "seed too small": (lambda M: M.Generator().manual_seed(-2**63 - 1), None),
    "seed float": (lambda M: M.Generator().manual_seed(1.5), RuntimeError),
    "seed str": (lambda M: M.Generator().manual_seed("3"), RuntimeError),
    "seed bool": (lambda M: M.Generator().manual_seed(True), RuntimeError),
    "global seed too large": (lambda M: M.manual_seed(2**64), None),
    "set_state float": (lambda M: M.Generator().set_state(M.zeros(3)), None),
    "set_state size": (lambda M: M.Generator().set_state(M.zeros(3, dtype=M.uint8)), ValueError),
    "set_state list": (lambda M: M.Generator().set_state([1, 2]), None),
    "set_rng_state float": (lambda M: M.set_rng_state(M.zeros(3)), None),
    "generator cuda": (lambda M: M.Generator("cuda"), RuntimeError),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_like_torch(name):
    expr, ours = ERRORS[name]
    state = tg.get_rng_state()
    try:
        assert_raises_like_torch(expr, ours)
    finally:
        tg.set_rng_state(state)


def test_error_messages_name_the_argument():
    with pytest.raises(ValueError, match=r"-1.*\[-1, 3\]"):
        tg.zeros(-1, 3)
    with pytest.raises(ValueError, match="ragged.*dim 1"):
        tg.tensor([[1, 2], [3]])
    with pytest.raises(TypeError, match="size"):
        tg.full(3, 1.0)
    with pytest.raises(ValueError, match="step must be nonzero"):
        tg.arange(0, 1, 0)


# ============================================================================ Generator

def test_generator_seeds_like_torch():
    for expr in (lambda M: M.Generator().initial_seed(),
                 lambda M: M.Generator().manual_seed(-1).initial_seed(),
                 lambda M: M.Generator().manual_seed(2**64 - 1).initial_seed(),
                 lambda M: M.Generator().manual_seed(-2**63).initial_seed(),
                 lambda M: M.manual_seed(1.5).initial_seed(), lambda M: M.manual_seed("3").initial_seed(),
                 lambda M: M.manual_seed(True).initial_seed()):
        assert expr(tg) == expr(torch)
    g = tg.Generator(device="cpu")
    assert g.manual_seed(5) is g and g.device == "cpu" and isinstance(g, np.random.Generator)
    assert g.numpy_generator is g
    assert tg.manual_seed(3) is tg.default_generator and tg.initial_seed() == 3
    s = tg.seed()
    assert isinstance(s, int) and tg.initial_seed() == s and 0 <= s < 2**64
    s2 = g.seed()
    assert g.initial_seed() == s2


def test_manual_seed_streams_are_torchs_mersenne_twister():
    """torch's CPU stream: mt19937 seeded by init_genrand, which NumPy's legacy RandomState(seed)
    also uses; a float32 uniform is the word's low 24 bits times 2^-24, a float64 one 53 bits of
    two words (the first one high). (Bit-equality with torch itself: test_rng_torch_streams.py.)"""
    words = np.random.RandomState(123).randint(0, 2**32, 7, dtype=np.uint64)
    tg.manual_seed(123)
    np.testing.assert_array_equal(tg.rand(5)._data, (words[:5] & 0xFFFFFF).astype(np.float32) * np.float32(2**-24))
    w64 = (words[5] << np.uint64(32)) | words[6]
    assert tg.rand((), dtype=tg.float64).item() == float(w64 & np.uint64(2**53 - 1)) * 2.0**-53
    from tinygrad_tx.tensor import default_generator
    assert default_generator() is tg.default_generator       # nn.init, dropout, sampling share it


def test_state_round_trip_and_pickle():
    g = tg.Generator().manual_seed(5)
    g.standard_normal()                     # leaves a buffered state behind
    state = g.get_state()
    assert state.dtype == np.uint8 and state.shape == (gen_mod.STATE_BYTES,)
    a = tg.randn(4, generator=g)._data
    g.manual_seed(7)
    g.set_state(state)
    assert g.initial_seed() == 5            # as torch: the state carries the seed
    np.testing.assert_array_equal(tg.randn(4, generator=g)._data, a)
    g.set_state(state)
    h = pickle.loads(pickle.dumps(g))
    assert isinstance(h, tg.Generator) and h.initial_seed() == 5
    np.testing.assert_array_equal(tg.randn(4, generator=h)._data, a)
    old = tg.get_rng_state()
    b = tg.rand(3)._data
    tg.set_rng_state(old)
    np.testing.assert_array_equal(tg.rand(3)._data, b)


DRAWS = {   # each draws from the generator given, nothing else
    "rand": lambda g: tg.rand(3, generator=g), "randn": lambda g: tg.randn(3, generator=g),
    "randint": lambda g: tg.randint(9, (3,), generator=g), "randperm": lambda g: tg.randperm(9, generator=g),
    "normal": lambda g: tg.normal(0.0, 2.0, (3,), generator=g),
    "normal tensor": lambda g: tg.normal(tg.zeros(3), 2.0, generator=g),
    "bernoulli": lambda g: tg.bernoulli(tg.full((9,), 0.5), generator=g),
    "bernoulli p": lambda g: tg.bernoulli(tg.zeros(9), 0.5, generator=g),
    "poisson": lambda g: tg.poisson(tg.full((5,), 3.0), g),
    "multinomial": lambda g: tg.multinomial(tg.ones(9), 3, generator=g),
    "multinomial repl": lambda g: tg.multinomial(tg.ones(2, 9), 3, True, generator=g),
    "rand_like": lambda g: tg.rand_like(tg.zeros(3), generator=g),
    "randn_like": lambda g: tg.randn_like(tg.zeros(3), generator=g),
    "randint_like": lambda g: tg.randint_like(tg.zeros(3), 9, generator=g),
    "draw_normal": lambda g: factories.draw_normal((3,), tg.float64, 1.0, 2.0, g),
    "draw_uniform": lambda g: factories.draw_uniform((3,), tg.float32, -1.0, 1.0, g),
    "draw_exponential": lambda g: factories.draw_exponential((3,), tg.float64, 2.0, g),
    "draw_bernoulli": lambda g: factories.draw_bernoulli(0.5, (9,), tg.float32, g),
    "draw_geometric": lambda g: factories.draw_geometric((9,), tg.float32, 0.3, g),
    "draw_integers": lambda g: factories.draw_integers((9,), tg.int32, -5, 5, g),
}


@pytest.mark.parametrize("name", list(DRAWS))
def test_draw_uses_the_generator_passed(name):
    draw = DRAWS[name]
    values = lambda out: np.asarray(out._data if isinstance(out, tg.Tensor) else out)  # noqa: E731
    before = tg.get_rng_state()._data.copy()
    g = tg.Generator().manual_seed(42)
    first = values(draw(g))
    assert not np.array_equal(g.get_state()._data, tg.Generator().manual_seed(42).get_state()._data)
    np.testing.assert_array_equal(tg.get_rng_state()._data, before)      # the global one is untouched
    np.testing.assert_array_equal(values(draw(tg.Generator().manual_seed(42))), first)   # reproducible
    np.testing.assert_array_equal(values(draw(np.random.default_rng(42))),          # a NumPy one works too
                                  values(draw(np.random.default_rng(42))))          # (its own words)
    tg.manual_seed(42)
    np.testing.assert_array_equal(values(draw(None)), first)                         # default: the global one
    with pytest.raises(TypeError, match="generator"):
        draw(12)


def test_generator_works_where_numpy_generators_are_taken():
    import tinygrad_tx.functional as F
    import tinygrad_tx.nn as nn
    from tinygrad_tx.data.loader import DataLoader
    w1, w2 = tg.zeros(4, 3), tg.zeros(4, 3)
    for make in (lambda: tg.Generator().manual_seed(1), lambda: np.random.default_rng(1)):
        nn.init.kaiming_uniform_(w1, generator=make())
        nn.init.kaiming_uniform_(w2, generator=make())
        np.testing.assert_array_equal(w1._data, w2._data)
        assert np.abs(w1._data).max() <= np.sqrt(2) and len(np.unique(w1._data)) == 12   # gain sqrt(2), fan_in 3
    x = tg.ones(50)
    for make in (lambda: tg.Generator().manual_seed(2), lambda: np.random.default_rng(2)):
        d1, d2 = F.dropout(x, 0.5, generator=make()), F.dropout(x, 0.5, generator=make())
        np.testing.assert_array_equal(d1._data, d2._data)
        assert set(np.unique(d1._data)) == {0.0, 2.0}
    batches = [b for b in DataLoader(list(range(10)), batch_size=5, shuffle=True,
                                     generator=tg.Generator().manual_seed(3))]
    assert len(batches) == 2


# ============================================================================ distributions (fixed seeds)

N = 200_000


def _within(sample_mean, mean, sd, n=N, k=5):
    assert abs(sample_mean - mean) <= k * sd / np.sqrt(n), (sample_mean, mean, sd)


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_continuous_moments(dtype):
    g = tg.Generator().manual_seed(0)
    u = tg.rand(N, generator=g, dtype=dtype)._data.astype(np.float64)
    _within(u.mean(), 0.5, np.sqrt(1 / 12))
    _within(((u - 0.5) ** 2).mean(), 1 / 12, np.sqrt(1 / 180))     # Var((U - 1/2)^2) = 1/180
    z = tg.randn(N, generator=g, dtype=dtype)._data.astype(np.float64)
    _within(z.mean(), 0.0, 1.0)
    _within((z ** 2).mean(), 1.0, np.sqrt(2.0))
    x = tg.normal(2.0, 3.0, (N,), generator=g, dtype=dtype)._data.astype(np.float64)
    _within(x.mean(), 2.0, 3.0)
    _within(((x - 2) ** 2).mean(), 9.0, 9 * np.sqrt(2.0))
    y = tg.normal(tg.full((N,), -1.0, dtype=dtype), tg.full((N,), 0.5, dtype=dtype), generator=g)._data
    _within(y.astype(np.float64).mean(), -1.0, 0.5)
    v = factories.draw_uniform((N,), dtype, -2.0, 4.0, g).astype(np.float64)
    _within(v.mean(), 1.0, 6 / np.sqrt(12))
    assert v.min() >= -2 and v.max() < 4
    e = factories.draw_exponential((N,), dtype, 4.0, g).astype(np.float64)
    _within(e.mean(), 0.25, 0.25)
    n = factories.draw_normal((N,), dtype, 5.0, 0.1, g).astype(np.float64)
    _within(n.mean(), 5.0, 0.1)


def test_discrete_frequencies():
    g = tg.Generator().manual_seed(1)
    r = tg.randint(3, 7, (N,), generator=g)._data
    for v in range(3, 7):
        _within((r == v).mean(), 0.25, np.sqrt(0.25 * 0.75))
    p = np.array([0.1, 0.6, 0.3])
    b = tg.bernoulli(tg.tensor(np.tile(p, N // 3)), generator=g)._data.reshape(-1, 3)
    for j in range(3):
        _within(b[:, j].mean(), p[j], np.sqrt(p[j] * (1 - p[j])), n=b.shape[0])
    pois = tg.poisson(tg.full((N,), 3.5, dtype=tg.float64), g)._data
    _within(pois.mean(), 3.5, np.sqrt(3.5))
    geo = factories.draw_geometric((N,), tg.float64, 0.25, g)
    _within(geo.mean(), 4.0, np.sqrt(0.75) / 0.25)
    perm = np.stack([tg.randperm(4, generator=g)._data for _ in range(4000)])
    for j in range(4):
        _within((perm[:, 0] == j).mean(), 0.25, np.sqrt(0.25 * 0.75), n=4000)


def test_multinomial_frequencies():
    g = tg.Generator().manual_seed(2)
    w = np.array([1.0, 0.0, 3.0, 6.0])
    p = w / w.sum()
    with_r = tg.multinomial(tg.tensor(w), N, True, generator=g)._data
    assert with_r.dtype == np.int64 and not (with_r == 1).any()
    for j in (0, 2, 3):
        _within((with_r == j).mean(), p[j], np.sqrt(p[j] * (1 - p[j])))
    rows = tg.multinomial(tg.tensor(np.tile(w, (20000, 1))), 2, generator=g)._data
    assert (rows[:, 0] != rows[:, 1]).all() and not (rows == 1).any()
    for j in (0, 2, 3):   # the first draw without replacement follows p too
        _within((rows[:, 0] == j).mean(), p[j], np.sqrt(p[j] * (1 - p[j])), n=20000)
    # second draw given the first is 3 (prob 0.6): the rest renormalised, 1/4 and 3/4
    second = rows[rows[:, 0] == 3, 1]
    _within((second == 0).mean(), 0.25, np.sqrt(0.25 * 0.75), n=second.size)


# ============================================================================ the sampling Functions

@given(shapes(1, 3), seeds, st.sampled_from([np.float64, np.float32]), st.booleans())
def test_normal_sample_parity(shape, seed, dtype, strided):
    """std = 0: the sample is the mean exactly, and both gradients are torch's zeros."""
    mean = np.random.default_rng(seed).standard_normal(shape)
    mean = non_contiguous(mean) if strided else mean
    check_parity("NormalSample", lambda m, s: tg.normal(m, s, generator=tg.Generator()),
                 lambda m, s: torch.normal(m, s), [mean, np.zeros(shape)], dtype, allow_zero_grad=(0, 1))
    check_parity("NormalSample", lambda m: tg.normal(m, 0.0), lambda m: torch.normal(m, 0.0), [mean], dtype,
                 allow_zero_grad=(0,))


@given(shapes(1, 3), seeds, st.sampled_from([np.float64, np.float32]))
def test_bernoulli_and_poisson_sample_parity(shape, seed, dtype):
    """p in {0, 1} and rate 0 are deterministic; gradients are torch's zeros. (torch has no
    derivative for ``bernoulli(x, p)``; ours is zero there too, checked in the gradcheck test.)"""
    p = (np.random.default_rng(seed).random(shape) < 0.5).astype(np.float64)
    check_parity("BernoulliSample", lambda x: tg.bernoulli(x), lambda x: torch.bernoulli(x), [p], dtype,
                 allow_zero_grad=(0,))
    check_parity("PoissonSample", lambda r: tg.poisson(r), lambda r: torch.poisson(r), [np.zeros(shape)], dtype,
                 allow_zero_grad=(0,))


def test_sample_functions_gradcheck():
    """Bernoulli and Poisson samples are piecewise constant in their parameters: with the
    generator re-seeded for every evaluation, finite differences are 0 too."""
    rng = np.random.default_rng(0)
    p = rng.uniform(0.05, 0.95, (3, 4))
    rate = rng.uniform(0.5, 5.0, (2, 3))
    assert gradcheck(lambda x: tg.bernoulli(x, generator=tg.Generator().manual_seed(1)), [p])
    assert gradcheck(lambda x: tg.bernoulli(x, 0.3, generator=tg.Generator().manual_seed(1)), [p])
    assert gradcheck(lambda r: tg.poisson(r, tg.Generator().manual_seed(1)), [rate])
    # NormalSample: torch defines d sample / d mean = 0 while finite differences of
    # mean + std*z see 1; its zero gradient is checked against torch above, not here
    m = tg.zeros(3, requires_grad=True)
    out = tg.normal(m, 1.0)
    assert out.grad_fn.fn is NormalSample and out.requires_grad
    out.backward(np.ones(3, np.float32))
    np.testing.assert_array_equal(np.asarray(m.grad), np.zeros(3))
    b = tg.bernoulli(tg.full((2,), 0.5, requires_grad=True))
    assert b.grad_fn.fn is BernoulliSample
    assert tg.poisson(tg.ones(2, requires_grad=True)).grad_fn.fn is PoissonSample
    assert not tg.multinomial(tg.ones(3, requires_grad=True), 2).requires_grad


KERNEL_ERRORS = {   # the draw_* kernels refuse what torch's in-place fills refuse
    "exponential lambda 0": (lambda: factories.draw_exponential((3,), None, 0.0), lambda: torch.empty(3, device=DEVICE).exponential_(0),
                             ValueError),
    "normal std < 0": (lambda: factories.draw_normal((3,), None, 0.0, -1.0), lambda: torch.empty(3, device=DEVICE).normal_(0, -1),
                       ValueError),
    "uniform low > high": (lambda: factories.draw_uniform((3,), None, 2.0, 1.0), lambda: torch.empty(3, device=DEVICE).uniform_(2, 1),
                           ValueError),
    "bernoulli p > 1": (lambda: factories.draw_bernoulli(1.5, (3,)), lambda: torch.empty(3, device=DEVICE).bernoulli_(1.5), ValueError),
    "bernoulli array p": (lambda: factories.draw_bernoulli(np.array([0.5, -1.0]), (2,)),
                          lambda: torch.empty(2, device=DEVICE).bernoulli_(torch.tensor([0.5, -1.0], device=DEVICE)), ValueError),
    "normal int dtype": (lambda: factories.draw_normal((3,), tg.int64), lambda: torch.empty(3, dtype=torch.int64, device=DEVICE).normal_(),
                         TypeError),
    "geometric p 0": (lambda: factories.draw_geometric((3,), None, 0.0), lambda: torch.empty(3, device=DEVICE).geometric_(0), ValueError),
    "geometric p 1": (lambda: factories.draw_geometric((3,), None, 1.0), lambda: torch.empty(3, device=DEVICE).geometric_(1), ValueError),
    "integers empty": (lambda: factories.draw_integers((3,), tg.int64, 5, 5), lambda: torch.empty(3, device=DEVICE).random_(5, 5),
                       ValueError),
}


@pytest.mark.parametrize("name", list(KERNEL_ERRORS))
def test_kernel_errors_like_torch(name):
    ours, ref, cls = KERNEL_ERRORS[name]
    with pytest.raises(Exception):
        ref()
    with pytest.raises(cls):
        ours()


def test_kernel_dtypes_and_shapes():
    g = tg.Generator().manual_seed(0)
    for draw in (factories.draw_normal, factories.draw_uniform, factories.draw_exponential):
        for dt, want in ((tg.float64, np.float64), ("float32", np.float32), (np.float16, np.float16)):
            out = draw((2, 3), dt, generator=g)
            assert out.dtype == want and out.shape == (2, 3)
    b = factories.draw_bernoulli(np.array([[0.0], [1.0]]), (2, 3), tg.int64, g)
    np.testing.assert_array_equal(b, [[0, 0, 0], [1, 1, 1]])   # p broadcasts over the shape
    assert factories.draw_integers((4,), tg.float32, 0, 3, g).dtype == np.float32
