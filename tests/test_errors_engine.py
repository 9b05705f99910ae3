"""Nothing silently wrong (issue #11): the engine's input checks against torch.

Each case is a call that torch refuses and that we once accepted (or refused with an error
leaking out of NumPy), or a value we got wrong: now both raise -- ours a ValueError,
TypeError, IndexError or RuntimeError raised from tinygrad_tx's own code (the traceback's last
frame is ours) whose message names the argument or its value -- or both give the same result.
"""
from __future__ import annotations

import traceback
import warnings

import numpy as np
import pytest
import torch

import tinygrad_tx as tt
from tinygrad_tx import optim
from reference.testing import DEVICE

OURS = (ValueError, TypeError, IndexError, RuntimeError)


def raised_by_us(fn, *words):
    """The exception ``fn()`` raises: one of OURS, raised by tinygrad_tx code, naming ``words``."""
    with pytest.raises(OURS) as info:
        fn()
    last = traceback.extract_tb(info.value.__traceback__)[-1].filename
    assert "tinygrad_tx" in last and "numpy" not in last, (last, info.value)
    for w in words:
        assert w in str(info.value), (w, str(info.value))
    return info.value


def both_raise(ours, theirs, *words):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception):
            theirs()
    return raised_by_us(ours, *words)


def _lib_pair(expr, **arrays):
    """(our thunk, torch's thunk) evaluating ``expr`` with ``M`` the library and each array a
    tensor of it (``from_numpy`` of a copy)."""
    def make(M, wrap):
        env = {"M": M, "np": np, **{k: wrap(v.copy()) for k, v in arrays.items()}}
        return lambda: eval(expr, env)
    return make(tt, tt.from_numpy), make(torch, torch.from_numpy)


F32 = np.arange(6, dtype=np.float32).reshape(2, 3)
I64 = np.arange(6).reshape(2, 3)
B = np.array([True, False])

REFUSED = {
    # accepted where torch raises
    "int64 @ float32": ("i @ x.T", dict(i=I64, x=F32), ["int64", "float32"]),
    "float16 @ float32": ("h @ x.T", dict(h=F32.astype(np.float16), x=F32), ["float16"]),
    "bool @ bool": ("b @ b", dict(b=B), ["Bool"]),
    "bool - int": ("b - i[0, :2]", dict(b=B, i=I64), ["Subtraction", "bool"]),
    "bool - bool": ("b - b", dict(b=B), ["two bool tensors"]),
    "int - True": ("i - True", dict(i=I64), ["Subtraction"]),
    "-bool": ("-b", dict(b=B), ["Negation", "bool"]),
    "int var": ("i.var()", dict(i=I64), ["int64"]),
    "int std": ("i.std(0)", dict(i=I64), ["int64"]),
    "x[::-1]": ("x[::-1]", dict(x=F32), ["step", "-1"]),
    "x[:, ::-2]": ("x[:, ::-2]", dict(x=F32), ["step", "-2"]),
    "x[::0]": ("x[::0]", dict(x=F32), ["step", "0"]),
    "max(dim=())": ("x.max(dim=())", dict(x=F32), ["dim", "()"]),
    "reshape(2.0, 3)": ("x.reshape(2.0, 3)", dict(x=F32), ["shape", "2.0"]),
    "reshape('a')": ("x.reshape('a')", dict(x=F32), ["shape", "'a'"]),
    "transpose(0, 3) of 0-d": ("x[0, 0].transpose(0, 3)", dict(x=F32), ["3"]),
    "relu of bool": ("b.relu()", dict(b=B), ["Boolean"]),
    "maximum(x, 2.0)": ("x.maximum(2.0)", dict(x=F32), ["other", "float"]),
    # errors that leaked out of NumPy
    "x.max((0, 1))": ("x.max((0, 1))", dict(x=F32), ["dim", "(0, 1)"]),
    "argmax of empty": ("e.argmax()", dict(e=np.zeros(0, np.float32)), ["empty"]),
    "argmin of empty": ("e.argmin()", dict(e=np.zeros((0, 2), np.float32)), ["empty"]),
    "x[0.5:2]": ("x[0.5:2]", dict(x=F32), ["0.5"]),
    "x[:, 1:2.0]": ("x[:, 1:2.0]", dict(x=F32), ["2.0"]),
    "x[0:1:1.5]": ("x[0:1:1.5]", dict(x=F32), ["1.5"]),
    "ones(dtype='flot32')": ("M.ones(2, dtype='flot32')", {}, ["flot32"]),
}
for _op in ("sum", "mean", "amax", "amin", "max", "min", "prod", "var", "std", "logsumexp",
            "argmax", "argmin", "all", "any", "nansum", "count_nonzero", "cumsum", "median"):
    REFUSED[f"{_op}(1.5)"] = (f"x.{_op}(1.5)", dict(x=F32), ["1.5"])


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_as_torch(case):
    expr, arrays, words = REFUSED[case]
    ours, theirs = _lib_pair(expr, **arrays)
    both_raise(ours, theirs, *words)


# ============================================================================ Tensor(...) construction

@pytest.mark.parametrize("data,words", [
    (np.array([object()]), ["object"]),
    (np.array(["a"]), ["<U1"]),
    (np.array(["2020-01-01"], dtype="datetime64[D]"), ["datetime64"]),
    (np.array([1 + 2j]), ["complex"]),
    ([1j, 2], ["complex"]),
    ([[1, 2], [3]], ["ragged", "[[1, 2], [3]]"]),
    ([[1.0], [2.0, 3.0]], ["ragged"]),
    ("abc", ["<U3"]),
])
def test_tensor_refuses_what_torch_tensor_refuses(data, words):
    """Ragged lists, object/str/datetime arrays and complex data (refused: no backward here takes
    the conjugate a complex gradient needs) are our TypeError/ValueError, not NumPy's."""
    if not (isinstance(data, np.ndarray) and data.dtype.kind == "c") and not (
            isinstance(data, list) and any(isinstance(v, complex) for v in data)):
        with pytest.raises(Exception):
            torch.tensor(data, device=DEVICE)
    if isinstance(data, np.ndarray):
        raised_by_us(lambda: tt.Tensor(data), *words)
    else:       # Python data: torch.Tensor's legacy constructor, its words checked in test_surface_legacy.py
        raised_by_us(lambda: tt.Tensor(data))


def test_complex_dtypes_refused_everywhere_a_dtype_is_named():
    raised_by_us(lambda: tt.ones(2, dtype=tt.complex64), "complex")
    raised_by_us(lambda: tt.ones(2).to(tt.complex128), "complex")
    raised_by_us(lambda: tt.ones(2).to("complex64"), "complex")
    raised_by_us(lambda: tt.Tensor([1.0], dtype=np.complex64), "complex")
    raised_by_us(lambda: tt.ones(2) + 1j, "complex")


def test_factories_refuse_complex_data():
    for make in (lambda: tt.tensor([1j]), lambda: tt.tensor([1.0, 2j]), lambda: tt.from_numpy(np.array([1j])),
                 lambda: tt.as_tensor(np.array([1j], dtype=np.complex64)), lambda: tt.tensor(np.complex128(1j)),
                 lambda: tt.full((2,), 2 + 1j), lambda: tt.linspace(1 + 1j, 2, 3), lambda: tt.tensor([1 + 2j, 3])):
        with pytest.raises(TypeError, match="complex tensors are not supported"):
            make()


def test_tensor_copies_as_torch_tensor_and_from_numpy_shares():
    a = np.ones(3)
    t, ref = tt.Tensor(a), torch.tensor(a, device=DEVICE)
    shared, ref_shared = tt.from_numpy(a), torch.from_numpy(a).to(DEVICE)
    a[0] = 5.0
    np.testing.assert_array_equal(t.numpy(), ref.cpu().numpy())         # a copy: unchanged
    assert t.numpy()[0] == 1.0
    np.testing.assert_array_equal(shared.numpy(), ref_shared.cpu().numpy())   # shares: sees the edit
    assert shared.numpy()[0] == 5.0
    src = tt.Tensor(np.arange(3.0))
    again = src.detach().clone()
    alias = tt.Tensor(src)                # torch.Tensor(t) is an alias of t (the legacy constructor)
    src._data[0] = 7.0
    assert again.numpy()[0] == 0.0 and alias.numpy()[0] == 7.0
    # as_tensor shares an array of the same dtype and copies to convert one, as torch's
    b = np.zeros(2)
    assert tt.as_tensor(b).numpy() is b or np.shares_memory(tt.as_tensor(b).numpy(), b)
    assert not np.shares_memory(tt.as_tensor(b, dtype=tt.float32).numpy(), b)


def test_tensor_of_a_transposed_or_strided_array_keeps_the_layout_torch_tensor_keeps():
    a = np.arange(12.0).reshape(3, 4)[:, ::2].T
    t, ref = tt.Tensor(a), torch.tensor(a, device=DEVICE)
    assert t.is_contiguous() == ref.is_contiguous() and t.stride() == ref.stride()
    np.testing.assert_array_equal(t.numpy(), ref.cpu().numpy())


@pytest.mark.parametrize("make", [
    lambda: np.broadcast_to(np.float64(1.0), (3,)),
    lambda: np.frombuffer(np.ones(3).tobytes()),          # read-only
], ids=["broadcast", "read-only"])
def test_optimizer_steps_on_parameters_built_from_read_only_or_broadcast_arrays(make):
    """Tensor(a) copies, so the parameter owns a writable array and the step updates it."""
    p = tt.Tensor(make(), requires_grad=True)
    q = torch.tensor(make(), requires_grad=True, device=DEVICE)
    for lib, w, opt in ((tt, p, optim.SGD([p], lr=0.5)), (torch, q, torch.optim.SGD([q], lr=0.5))):
        (w * lib.tensor([1.0, 2.0, 3.0], dtype=w.dtype)).sum().backward()
        opt.step()
    np.testing.assert_array_equal(p.detach().numpy(), q.detach().cpu().numpy())


# ============================================================================ silent wrong values

def _grads(lib, fn, arrays, cot):
    xs = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lib, *xs)
    out.backward(lib.tensor(cot))
    return out.detach().numpy(), [x.grad.numpy() for x in xs]


NAN = np.nan
NAN_CASES = {
    "relu": (lambda M, x: x.relu(), [np.array([NAN, 1.0, -1.0, 0.0])]),
    "maximum": (lambda M, a, b: M.maximum(a, b), [np.array([NAN, 1.0, NAN, 2.0, 1.0]),
                                                  np.array([1.0, NAN, NAN, 2.0, 0.0])]),
    "minimum": (lambda M, a, b: M.minimum(a, b), [np.array([NAN, 1.0, NAN, 2.0, 1.0]),
                                                  np.array([1.0, NAN, NAN, 2.0, 0.0])]),
}


@pytest.mark.parametrize("case", list(NAN_CASES))
def test_gradient_at_nan_as_torch(case):
    """torch's rule passes g through where an input is NaN (relu: "0 where y <= 0", max: "0 where
    self < other", and no comparison with NaN holds); random cotangent, float64."""
    fn, arrays = NAN_CASES[case]
    cot = np.random.default_rng(0).standard_normal(arrays[0].shape)
    out, grads = _grads(tt, fn, arrays, cot)
    out_t, grads_t = _grads(torch, fn, arrays, cot)
    np.testing.assert_array_equal(out, out_t)
    for g, gt in zip(grads, grads_t):
        np.testing.assert_allclose(g, gt, rtol=1e-12)


@pytest.mark.parametrize("op", ["std", "var"])
def test_float32_variance_without_overflow(op):
    """(x − μ)² of float32 overflows from 1.8e19: the squares are taken in float64, as torch's
    result (5.77e19 for std, not inf) says it must; gradients with a random cotangent agree."""
    x = np.array([[0.0, 0.0, 1e20], [1.0, 2.0, 4.0]], dtype=np.float32)
    ours = getattr(tt.from_numpy(x), op)(1).numpy()
    want = getattr(torch.from_numpy(x).to(DEVICE), op)(1).cpu().numpy()
    assert np.isfinite(ours).all() if op == "std" else True
    np.testing.assert_allclose(ours, want, rtol=2e-7)
    y = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32) * 1e19
    cot = np.random.default_rng(2).standard_normal(3).astype(np.float32)
    fn = lambda M, t: getattr(t, op)(1)   # noqa: E731
    out, (g,) = _grads(tt, fn, [y], cot)
    out_t, (gt,) = _grads(torch, fn, [y], cot)
    np.testing.assert_allclose(out, out_t, rtol=1e-6)
    np.testing.assert_allclose(g, gt, rtol=1e-5, atol=1e-6 * np.abs(gt).max())


def test_list_of_lists_index_is_a_tuple_of_indices_with_torchs_warning():
    """torch 2.13 still reads a short list holding a sequence as a tuple of indices (deprecated since
    2.9, with a UserWarning): ``x[[[0, 1], [2]]]`` is ``x[[0, 1], [2]]``, the two index lists
    broadcasting; NumPy's 'inhomogeneous shape' error no longer leaks, and the warning is torch's."""
    import torch
    import warnings
    from reference.testing import DEVICE
    for index in ([[0, 1], [2]], [slice(None), 0], [None, 0]):
        with warnings.catch_warnings(record=True) as ours:
            warnings.simplefilter("always")
            got = tt.arange(9.0).reshape(3, 3)[index].numpy()
        with warnings.catch_warnings(record=True) as theirs:
            warnings.simplefilter("always")
            want = torch.arange(9.0, device=DEVICE).reshape(3, 3)[index].cpu().numpy()
        np.testing.assert_array_equal(got, want)
        assert [str(w.message)[:80] for w in ours] == [str(w.message)[:80] for w in theirs]
        assert len(ours) == 1 and ours[0].filename == __file__, (index, ours)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tt.ones(3, 3)[[0, 1]]     # a list of numbers is one index array: no warning
