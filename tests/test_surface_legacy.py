"""Legacy names teaching code still uses (tinygrad_tx/legacy.py), against torch: the typed
constructors FloatTensor/LongTensor/... and their isinstance checks, autograd.Variable, range."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tinygrad_tx as tg
from tinygrad_tx.legacy import Variable, legacy_range
from reference.testing import DEVICE

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


# ============================================================================ torch.Tensor(...) as a constructor (issue #21)

def _legacy_cases():
    """``torch.Tensor``'s legacy constructor calls that teaching code writes, built fresh per call."""
    return {
        "ints": lambda T: T([1, 2]),
        "nested mixed": lambda T: T([[1, 2], [3, 4.5]]),
        "bools": lambda T: T([True, False]),
        "tuple data": lambda T: T((2, 3)),
        "range": lambda T: T(range(3)),
        "empty list": lambda T: T([]),
        "list of one-element tensors": lambda T: T([T([1.5]).sum(), 2]),
        "sizes": lambda T: T(2, 3),
        "one size": lambda T: T(3),
        "zero size": lambda T: T(0),
        "five sizes": lambda T: T(2, 1, 3, 1, 2),
        "numpy int sizes": lambda T: T(np.int64(2), 3),
        "torch.Size": lambda T: T(torch.Size([2, 3])),
        "empty torch.Size": lambda T: T(torch.Size([])),
        "no arguments": lambda T: T(),
        "device cpu": lambda T: T([1, 2], device="cpu"),
    }


_SIZE_CASES = {"sizes", "one size", "zero size", "five sizes", "numpy int sizes", "torch.Size", "empty torch.Size",
               "no arguments"}


@pytest.mark.parametrize("default", ["float32", "float64"])
@pytest.mark.parametrize("case", list(_legacy_cases()))
@pytest.mark.cpu_only(reason="torch's legacy constructor makes CPU tensors only")
def test_tensor_constructor_matches_torchs_legacy_constructor(case, default):
    """Values (sizes: ours are zeros, torch's uninitialised, so shape only), dtype, shape and
    requires_grad of ``Tensor(...)`` equal ``torch.Tensor(...)``'s, under either default float."""
    tg.set_default_dtype(getattr(tg, default))
    torch.set_default_dtype(getattr(torch, default))
    make = _legacy_cases()[case]
    ours, theirs = make(tg.Tensor), make(torch.Tensor)
    assert type(ours) is tg.Tensor and ours.shape == tuple(theirs.shape)
    assert ours.numpy().dtype == theirs.numpy().dtype == np.dtype(default)
    assert ours.requires_grad is theirs.requires_grad is False and ours.is_leaf
    if case in _SIZE_CASES:     # torch leaves these uninitialised; ours are zeros
        np.testing.assert_array_equal(ours.numpy(), np.zeros(ours.shape))
    else:
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "bool"])
@pytest.mark.cpu_only(reason="torch's legacy constructor makes CPU tensors only")
def test_tensor_of_a_tensor_is_an_alias_of_any_dtype(dtype):
    """``torch.Tensor(t)`` is ``t``'s data under a new Tensor object, whatever the dtype: an
    in-place change through either is seen by both, and both count it."""
    ours, theirs = tg.ones(3, dtype=getattr(tg, dtype)), torch.ones(3, dtype=getattr(torch, dtype))
    a, b = tg.Tensor(ours), torch.Tensor(theirs)
    assert a is not ours and a.numpy().dtype == b.numpy().dtype == ours.numpy().dtype
    a[1] = 0
    b[1] = 0
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours._version == theirs._version and a._version == b._version


def test_tensor_of_a_tensor_passes_the_gradient_through():
    """As torch's ``AliasBackward``: d alias / d t is the identity, checked with a random cotangent
    through a non-trivial function of the alias."""
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal(4), rng.standard_normal(4)
    ours, theirs = tg.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True, device=DEVICE)
    a, b = tg.Tensor(ours), torch.Tensor(theirs)
    assert a.requires_grad and not a.is_leaf and b.requires_grad and not b.is_leaf
    (ga,) = tg.autograd.grad(a.sin() * a, ours, tg.Tensor(g))
    (gb,) = torch.autograd.grad(b.sin() * b, theirs, torch.tensor(g, device=DEVICE))
    np.testing.assert_allclose(ga.numpy(), gb.numpy(), rtol=1e-12)


def test_tensor_of_numpy_data_keeps_its_dtype_a_documented_difference():
    """NumPy data keeps ``torch.tensor``'s rules (the array's dtype; dtype= and requires_grad=
    accepted), where torch's legacy constructor converts to the default float: the engine and
    its tests build their tensors this way (Tensor's docstring and README say so)."""
    for arr in (np.array([1, 2]), np.array([1.0, 2.0]), np.array([True]), np.float64(1.5), np.int64(3)):
        ours = tg.Tensor(arr)
        assert ours.numpy().dtype == np.asarray(arr).dtype and ours.shape == np.shape(arr)
    assert torch.Tensor(np.array([1, 2])).dtype == torch.float32    # the difference, as torch has it
    assert tg.Tensor(np.array([1.0]), requires_grad=True).requires_grad
    assert tg.Tensor(np.array([1]), dtype=tg.float64).dtype == tg.float64
    assert "known difference" in tg.Tensor.__doc__ and "converts an array to the default float" in tg.Tensor.__doc__


@pytest.mark.parametrize("args, kwargs, exc, words", [
    ((3.5,), {}, TypeError, "data must be a sequence (got float: 3.5)"),
    ((True,), {}, TypeError, "data must be a sequence (got bool: True)"),
    ((None,), {}, TypeError, "data must be a sequence (got NoneType: None)"),
    (({1: 2},), {}, TypeError, "data must be a sequence (got dict"),
    (("abc",), {}, TypeError, "invalid data type 'str' (data='abc')"),
    ((2, 3.0), {}, TypeError, "sizes (ints) or one sequence of data, got arguments of types (int, float)"),
    (([1, 2], 3), {}, TypeError, "got arguments of types (list, int)"),
    ((np.ones(2), 3), {}, TypeError, "got arguments of types (ndarray, int)"),
    ((-1,), {}, RuntimeError, "negative dimension: sizes (-1,)"),
    ((2, -1), {}, RuntimeError, "negative dimension: sizes (2, -1)"),
    (([[1, 2], [3]],), {}, ValueError, "ragged"),
    (([1, 2],), {"requires_grad": True}, TypeError, "unexpected keyword argument(s) requires_grad=True"),
    (([1.0],), {"dtype": "float64"}, TypeError, "unexpected keyword argument(s) dtype=float64"),
    ((2, 3), {"requires_grad": True}, TypeError, "requires_grad=True"),
    (("tensor",), {"requires_grad": True}, TypeError, "requires_grad=True"),
    (("tensor",), {"device": "cpu"}, RuntimeError, "Tensor(tensor, device='cpu') is not supported"),
    (([1, 2],), {"device": "cuda"}, RuntimeError, "device 'cuda' is not available"),
])
@pytest.mark.cpu_only(reason="constructor argument errors, no tensor computed")
def test_tensor_constructor_raises_where_torchs_legacy_constructor_does(args, kwargs, exc, words):
    def call(T, lib):
        a = tuple(lib.ones(2) if isinstance(x, str) and x == "tensor" else x for x in args)
        kw = {k: getattr(lib, v) if k == "dtype" else v for k, v in kwargs.items()}
        return T(*a, **kw)
    with pytest.raises(exc) as info:
        call(tg.Tensor, tg)
    assert words in str(info.value)
    with pytest.raises(exc if exc is not ValueError else (ValueError, TypeError)):
        call(torch.Tensor, torch)


def test_tensor_constructor_under_tinygrad_tx_run(tmp_path):
    """Teaching code's ``torch.Tensor`` idioms run under ``tinygrad-tx run`` and print what the same
    script prints under PyTorch: data in the default float, ``nn.Parameter(torch.Tensor(out, in))``
    then ``kaiming_uniform_``, ``torch.Tensor(2, 3).uniform_(-1, 1)``, ``torch.Tensor(5).random_(10)``,
    isinstance, a gradient, and the default float switched to float64."""
    script = tmp_path / "legacy_tensor.py"
    script.write_text(textwrap.dedent("""
        import math

        import torch
        import torch.nn as nn

        a, b = torch.Tensor([1, 2]), torch.Tensor([[1, 2], [3, 4.5]])
        print(a.dtype, a.tolist(), b.tolist(), isinstance(a, torch.Tensor))


        class Linear(nn.Module):
            def __init__(self, n_in, n_out):
                super().__init__()
                self.weight = nn.Parameter(torch.Tensor(n_out, n_in))
                self.bias = nn.Parameter(torch.Tensor(n_out))
                nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
                bound = 1 / math.sqrt(n_in)
                nn.init.uniform_(self.bias, -bound, bound)

            def forward(self, x):
                return x @ self.weight.t() + self.bias


        m = Linear(3, 2)
        w = torch.Tensor(2, 3).uniform_(-1, 1)
        r = torch.Tensor(5).random_(10)
        print(tuple(m.weight.shape), m.weight.dtype, m.weight.requires_grad,
              bool(0 < m.weight.abs().max() <= 1 / math.sqrt(3)), tuple(w.shape), bool(0 < w.abs().max() <= 1),
              bool((r == r.floor()).all() and (r >= 0).all() and (r < 10).all()), tuple(torch.Tensor().shape),
              tuple(torch.Tensor(2, 3, 4, 5, 6).shape))
        out = m(torch.Tensor([[1, 2, 3]]))
        out.sum().backward()
        print(tuple(out.shape), m.weight.grad.tolist(), m.bias.grad.tolist())
        torch.set_default_dtype(torch.float64)
        print(torch.Tensor([1, 2]).dtype, torch.Tensor(2, 2).dtype, nn.Parameter(torch.Tensor(2)).dtype)
    """))
    runs = [subprocess.run([sys.executable, *how, str(script)], capture_output=True, text=True, timeout=120)
            for how in ([], ["-m", "tinygrad_tx", "run"])]
    theirs, ours = runs
    assert theirs.returncode == 0 and ours.returncode == 0, (theirs.stderr, ours.stderr)
    assert ours.stdout.replace("tinygrad_tx.", "torch.") == theirs.stdout
    assert theirs.stdout.splitlines()[0] == "torch.float32 [1.0, 2.0] [[1.0, 2.0], [3.0, 4.5]] True"
