"""The engine itself: dtype rules, graph bookkeeping, grad mode, errors and the Function API.

Where torch defines the behaviour (dtypes, accumulation, hooks, error types) the
test runs the same program through torch and compares.
"""
from __future__ import annotations

import gc
import re

import numpy as np
import pytest
import torch

import tinygrad_tx as tg
from tinygrad_tx import SavedMemory
from tinygrad_tx.autograd import ArrayFunction
from reference.testing import DEVICE


# ============================================================================ dtype rules vs torch

# Each case builds the same tensor with ``m`` = tinygrad_tx or torch.
DTYPE_CASES = {
    "python float": lambda m: m.tensor(1.5),
    "list of floats": lambda m: m.tensor([1.0, 2.5]),
    "mixed int/float list": lambda m: m.tensor([1, 2.5]),
    "python int": lambda m: m.tensor(3),
    "list of ints": lambda m: m.tensor([1, 2]),
    "bool": lambda m: m.tensor(True),
    "list of bools": lambda m: m.tensor([True, False]),
    "float64 ndarray": lambda m: m.tensor(np.ones(2)),
    "float32 ndarray": lambda m: m.tensor(np.ones(2, np.float32)),
    "int32 ndarray": lambda m: m.tensor(np.ones(2, np.int32)),
    "numpy float64 scalar": lambda m: m.tensor(np.float64(2.0)),
    "int * 2.5": lambda m: m.tensor([1, 2]) * 2.5,
    "2.5 - int": lambda m: 2.5 - m.tensor([1, 2]),
    "int * 2": lambda m: m.tensor([1, 2]) * 2,
    "int / int": lambda m: m.tensor([1, 2]) / m.tensor([2, 4]),
    "int / 2": lambda m: m.tensor([1, 2]) / 2,
    "2 / int": lambda m: 2 / m.tensor([1, 2]),
    "int ** 2": lambda m: m.tensor([1, 2]) ** 2,
    "int ** 2.0": lambda m: m.tensor([1, 2]) ** 2.0,
    "2 ** int": lambda m: 2 ** m.tensor([1, 2]),
    "2.0 ** int": lambda m: 2.0 ** m.tensor([1, 2]),
    "int + float32 tensor": lambda m: m.tensor([1, 2]) + m.tensor([0.5, 0.5]),
    "int + float64 tensor": lambda m: m.tensor([1, 2]) + m.tensor(np.ones(2)),
    "bool + 1": lambda m: m.tensor([True, False]) + 1,
    "bool * 1.5": lambda m: m.tensor([True, False]) * 1.5,
    "float32 + float64": lambda m: m.tensor([1.0, 2.0]) + m.tensor(np.ones(2)),
    "float32 + 0-d float64": lambda m: m.tensor([1.0, 2.0]) + m.tensor(np.float64(3.0)),
    "0-d float64 * float32": lambda m: m.tensor(np.float64(3.0)) * m.tensor([1.0, 2.0]),
    "float64 + 0-d float32": lambda m: m.tensor(np.ones(2)) + m.tensor(np.float32(3.0)),
    "float32 * 3 (int scalar)": lambda m: m.tensor([1.0, 2.0]) * 3,
    "float64 * 2.5": lambda m: m.tensor(np.ones(2)) * 2.5,
    "float32 ** 2": lambda m: m.tensor([1.0, 2.0]) ** 2,
    "int.exp()": lambda m: m.tensor([1, 2]).exp(),
    "int.sqrt()": lambda m: m.tensor([1, 4]).sqrt(),
    "int.sigmoid()": lambda m: m.tensor([1, 4]).sigmoid(),
    "-int": lambda m: -m.tensor([1, 2]),
    "int.relu()": lambda m: m.tensor([-1, 2]).relu(),
    "int.sum()": lambda m: m.tensor([1, 2]).sum(),
    "bool.sum()": lambda m: m.tensor([True, True]).sum(),
    "int.max()": lambda m: m.tensor([1, 2]).max(),
    "int.clamp(min=0.5)": lambda m: m.tensor([0, 2]).clamp(min=0.5),
    "int.clamp(min=1)": lambda m: m.tensor([0, 2]).clamp(min=1),
    "int @ int": lambda m: m.tensor([1, 2]) @ m.tensor([3, 4]),
    "cat(int, float32)": lambda m: m.cat([m.tensor([1]), m.tensor([1.5])]),
    "cat(float32, float64)": lambda m: m.cat([m.tensor([1.0]), m.tensor(np.ones(1))]),
    "stack(bool, int)": lambda m: m.stack([m.tensor([True]), m.tensor([2])]),
    "where(c, int, 0.5)": lambda m: m.where(m.tensor([True, False]), m.tensor([1, 2]), 0.5),
    "where(c, float32, float64)": lambda m: m.where(m.tensor([True, False]), m.tensor([1.0, 2.0]),
                                                   m.tensor(np.ones(2))),
    "float32 > 1.5": lambda m: m.tensor([1.0, 2.0]) > 1.5,
    "x.double()": lambda m: m.tensor([1.0]).double(),
    "x.long()": lambda m: m.tensor([1.7, -1.7]).long(),
    "x.float()": lambda m: m.tensor(np.ones(1)).float(),
    "zeros": lambda m: m.zeros(2, 3),
    "ones(dtype=float64)": lambda m: m.ones(2, dtype=m.float64),
    "arange(int)": lambda m: m.arange(4),
    "arange(float)": lambda m: m.arange(0.0, 1.0, 0.25),
    "full(float)": lambda m: m.full((2,), 1.5),
    "full(int)": lambda m: m.full((2,), 7),
}


@pytest.mark.parametrize("case", list(DTYPE_CASES))
def test_dtype_rules_match_torch(case):
    ours, ref = DTYPE_CASES[case](tg), DTYPE_CASES[case](torch)
    assert str(ours.dtype).replace("tinygrad_tx.", "") == str(ref.dtype).replace("torch.", ""), f"{case}: ours {ours.dtype}, torch {ref.dtype}"
    assert ours.shape == tuple(ref.shape)
    np.testing.assert_allclose(ours._data.astype(np.float64), ref.cpu().numpy().astype(np.float64), rtol=1e-6)


def test_randn_and_rand_are_float32_and_seeded():
    tg.manual_seed(0)
    a, u = tg.randn(3, 4), tg.rand(5)
    tg.manual_seed(0)
    b = tg.randn(3, 4)
    assert a.dtype == np.float32 and u.dtype == np.float32
    np.testing.assert_array_equal(a._data, b._data)
    assert np.all((u._data >= 0) & (u._data < 1))


def _chain(x, w):
    """A long mixed chain of primitives."""
    h = (x @ w).gelu() * 0.5 + 1.0
    h = tg.cat([h.sigmoid(), h.tanh() ** 2], dim=1)
    h = h[:, ::2].exp().log() - h.var(dim=1, keepdim=True)
    h = (h.max(dim=0).values ** 2 + 1.0).sqrt() + h.mean() / 3.0
    return tg.stack([h, h.clamp(min=1.0)]).sum()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dtype_preserved_through_a_chain(dtype):
    """float64 stays float64 end to end and float32 stays float32 (Python scalars never widen),
    in every intermediate, the output and the gradients."""
    rng = np.random.default_rng(0)
    x = tg.Tensor(rng.standard_normal((4, 3)).astype(dtype), requires_grad=True)
    w = tg.Tensor(rng.standard_normal((3, 5)).astype(dtype), requires_grad=True)
    seen = []
    tg.autograd._backward_observers.append(lambda ctx, g, grads: seen.extend(
        [g.dtype] + [gi.dtype for gi in grads if gi is not None]))
    try:
        out = _chain(x, w)
        out.backward()
    finally:
        tg.autograd._backward_observers.pop()
    assert out.dtype == dtype and x.grad.dtype == dtype and w.grad.dtype == dtype
    assert seen and set(seen) == {np.dtype(dtype)}


def test_mixed_float32_float64_grads_in_each_inputs_dtype():
    rng = np.random.default_rng(1)
    a32, b64 = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 3))
    s64 = np.float64(1.7)
    g = rng.standard_normal((2, 3))
    ours = [tg.Tensor(a32, requires_grad=True), tg.Tensor(b64, requires_grad=True), tg.Tensor(s64, requires_grad=True)]
    refs = [torch.tensor(v, requires_grad=True, device=DEVICE) for v in (a32, b64, s64)]
    outs = []
    for a, b, s in (ours, refs):
        y = a * b + a * s  # float32*float64 -> float64; float32 * 0-d float64 -> float32
        outs.append(y)
    assert outs[0].dtype == np.float64 and str(outs[1].dtype) == "torch.float64"
    outs[0].backward(g)
    outs[1].backward(torch.tensor(g, device=DEVICE))
    for o, r in zip(ours, refs):
        assert o.grad.dtype == o.dtype
        assert str(r.grad.dtype).replace("torch.", "") == str(o.grad.dtype).replace("tinygrad_tx.", "")
        np.testing.assert_allclose(o.grad, r.grad.cpu().numpy(), rtol=1e-6)


# ============================================================================ accumulation and graph lifetime

def test_leaf_grads_accumulate_across_backwards_like_torch():
    x_np = np.array([1.0, -2.0, 3.0])
    results = []
    for m in (tg, torch):
        x = m.tensor(x_np, requires_grad=True)
        (x * x).sum().backward()
        (x * 3.0 + x).sum().backward()  # x used twice in one graph: both paths add up
        results.append(np.asarray(x.grad))
    np.testing.assert_allclose(results[0], results[1])
    np.testing.assert_allclose(results[0], 2 * x_np + 4)


def test_first_grad_is_a_copy_not_an_alias():
    x = tg.Tensor(np.ones(3), requires_grad=True)
    g = np.array([1.0, 2.0, 3.0])
    x.backward(g)
    g[:] = 0
    np.testing.assert_array_equal(x.grad, [1.0, 2.0, 3.0])


def test_retain_graph_allows_a_second_backward():
    x = tg.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(x.grad, 2 * first)
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_second_backward_through_freed_graph_raises():
    x = tg.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    h = x.exp()
    y = (h * 2.0).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time.*retain_graph=True"):
        y.backward()
    with pytest.raises(RuntimeError, match="second time"):  # a new graph on top of a freed node
        (h * 3.0).sum().backward()
    with pytest.raises(RuntimeError, match="second time"):  # a Function asking for its freed arrays
        h._ctx.saved_tensors


def test_intermediate_grads_not_kept_unless_retained():
    x = tg.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    h = x * 3.0
    k = h.exp()
    k.retain_grad()
    assert k.retains_grad and not h.retains_grad
    (k * k).sum().backward()
    assert h.grad is None and not h.is_leaf and x.is_leaf
    np.testing.assert_allclose(k.grad, 2 * k._data)
    np.testing.assert_allclose(x.grad, 2 * k._data * k._data * 3.0)
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        tg.Tensor(np.ones(2)).retain_grad()


def test_backward_from_a_leaf_and_with_a_tensor_gradient():
    x = tg.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    x.backward(tg.Tensor(np.array([3.0, 4.0])))
    np.testing.assert_array_equal(x.grad, [3.0, 4.0])
    y = tg.Tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    (y * 2.0).backward(np.array([1.0, 1.0]))  # a float64 gradient is cast to the output's dtype
    assert y.grad.dtype == np.float32


def test_diamond_graphs_accumulate_before_propagating():
    """y <- (y*a + y*b) 1,000 times: every node's backward must run once, after both of its
    consumers; d out/d x = (a+b)^1000."""
    x = tg.Tensor(np.array([1.0]), requires_grad=True)
    y = x
    calls = []
    tg.autograd._backward_observers.append(lambda ctx, g, grads: calls.append(ctx.fn.__name__))
    try:
        for _ in range(1000):
            y = y * 0.6 + y * 0.401
        y.backward(np.ones(1))
    finally:
        tg.autograd._backward_observers.pop()
    np.testing.assert_allclose(x.grad, [1.001 ** 1000], rtol=1e-11)
    assert len(calls) == 3000


def test_100k_op_chain_backpropagates_without_recursion():
    x = tg.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    # SavedMemory counts every live graph in the process: an earlier test's graph left in a
    # reference cycle is freed whenever the collector runs, which the 100k nodes below trigger
    # (seen once in a -n 2 run: start 8 bytes, end 0). Collect it first; this test's own graph
    # must then be freed by backward alone.
    gc.collect()
    start = SavedMemory.current
    y = x
    for i in range(100_000):
        y = y * 1.0000001 if i % 2 else y + 0.5
    y.sum().backward()
    c = 1.0000001  # y <- (y + 0.5) * c, 50,000 times
    np.testing.assert_allclose(x.grad, [c ** 50_000] * 2, rtol=1e-10)
    np.testing.assert_allclose(y._data, np.array([1.0, 2.0]) * c ** 50_000
                               + 0.5 * sum(c ** k for k in range(1, 50_001)), rtol=1e-10)
    assert SavedMemory.current == start


# ============================================================================ grad mode

def test_no_grad_context_manager():
    x = tg.Tensor(np.ones(2), requires_grad=True)
    with tg.no_grad():
        assert not tg.is_grad_enabled()
        y = x * 2.0
        with tg.enable_grad():
            z = x * 2.0
        with tg.no_grad():
            pass
        assert not tg.is_grad_enabled()  # a nested no_grad restores the outer state
    assert tg.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad
    with pytest.raises(ZeroDivisionError):
        with tg.no_grad():
            1 / 0
    assert tg.is_grad_enabled()


def test_no_grad_decorator():
    @tg.no_grad()
    def double(t):
        """Doubles."""
        assert not tg.is_grad_enabled()
        return t * 2.0

    x = tg.Tensor(np.ones(2), requires_grad=True)
    y = double(x)
    assert not y.requires_grad and tg.is_grad_enabled()
    assert double.__name__ == "double" and double.__doc__ == "Doubles."
    np.testing.assert_array_equal(y._data, [2.0, 2.0])


def test_no_grad_records_no_saved_memory():
    start = SavedMemory.current
    x = tg.Tensor(np.ones((50, 50)), requires_grad=True)
    with tg.no_grad():
        y = (x @ x).exp()
    assert SavedMemory.current == start and y._ctx is None


# ============================================================================ requires_grad rules and bad input

@pytest.mark.parametrize("data", [[1, 2], np.array([1, 2], dtype=np.int32), [True, False]])
def test_requires_grad_on_non_float_raises_type_error(data):
    with pytest.raises(TypeError, match="floating point"):
        tg.tensor(data, requires_grad=True)
    t = tg.tensor(data)
    with pytest.raises(TypeError, match="floating point"):
        t.requires_grad_()
    with pytest.raises(RuntimeError):  # torch refuses as well
        torch.tensor(data, device=DEVICE).requires_grad_()


def test_non_float_outputs_do_not_require_grad():
    x = tg.Tensor(np.array([1.5, -2.5]), requires_grad=True)
    for ours, ref in ((x.long(), torch.tensor([1.5, -2.5], requires_grad=True, device=DEVICE).long()),
                      (x > 0, torch.tensor([1.5, -2.5], requires_grad=True, device=DEVICE) > 0)):
        assert ours.requires_grad == ref.requires_grad == False  # noqa: E712
    assert x.double().requires_grad and x.float().requires_grad


def test_requires_grad_cannot_be_cleared_on_a_non_leaf():
    x = tg.Tensor(np.ones(2), requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        (x * 2.0).requires_grad = False


def test_backward_argument_errors():
    x = tg.Tensor(np.ones((2, 3)), requires_grad=True)
    y = x * 2.0
    with pytest.raises(RuntimeError, match=r"only for scalar outputs.*\(2, 3\)"):
        y.backward()
    with pytest.raises(RuntimeError, match="scalar"):  # torch raises too
        (torch.ones(2, 3, requires_grad=True, device=DEVICE) * 2).backward()
    with pytest.raises(ValueError, match=r"\(3,\).*\(2, 3\)"):
        y.backward(np.ones(3))
    with pytest.raises(RuntimeError, match="does not require grad"):
        tg.Tensor(np.ones(1)).backward()


# (name, ours, torch, substrings our message must contain)
SHAPE_ERRORS = [
    ("matmul inner", lambda m: m.ones(2, 3) @ m.ones(4, 5), ["(2, 3)", "(4, 5)"]),
    ("matmul batch", lambda m: m.ones(2, 3, 4) @ m.ones(5, 4, 2), ["(2, 3, 4)", "(5, 4, 2)"]),
    ("matmul 0-d", lambda m: m.ones(3) @ m.tensor(2.0), ["(3,)", "()"]),
    ("broadcast add", lambda m: m.ones(2, 3) + m.ones(4), ["(2, 3)", "(4,)"]),
    ("broadcast mul", lambda m: m.ones(2, 3) * m.ones(2, 1, 4), ["(2, 3)", "(2, 1, 4)"]),
    ("maximum", lambda m: m.maximum(m.ones(3), m.ones(2)), ["(3,)", "(2,)"]),
    ("reshape", lambda m: m.ones(2, 3).reshape(4, 2), ["[4, 2]", "size 6"]),
    ("view two -1", lambda m: m.ones(2, 3).view(-1, -1), ["[-1, -1]"]),
    ("cat", lambda m: m.cat([m.ones(2, 3), m.ones(2, 4)], dim=0), ["(2, 3)", "(2, 4)"]),
    ("cat rank", lambda m: m.cat([m.ones(2, 3), m.ones(3)], dim=0), ["(2, 3)", "(3,)"]),
    ("stack", lambda m: m.stack([m.ones(2, 3), m.ones(3, 2)]), ["(2, 3)", "(3, 2)"]),
    ("expand", lambda m: m.ones(2, 3).expand(4, 3), ["(2, 3)", "[4, 3]"]),
    ("expand rank", lambda m: m.ones(2, 3).expand(3), ["(2, 3)"]),
    ("permute", lambda m: m.ones(2, 3).permute(1, 0, 2), ["(2, 3)"]),
    ("permute repeat", lambda m: m.ones(2, 3).permute(1, 1), ["repeated"]),
    ("sum dim", lambda m: m.ones(2, 3).sum(dim=2), ["[-2, 1]", "2"]),
    ("masked_fill", lambda m: m.ones(2, 3).masked_fill(m.ones(4, dtype=m.bool) if m is torch else
                                                        m.tensor([True] * 4), 0.0), ["(4,)", "(2, 3)"]),
    ("where", lambda m: m.where(m.tensor([True, False]), m.ones(3), m.ones(1)), ["(2,)", "(3,)"]),
    ("split sections", lambda m: m.ones(5, 2).split([2, 2], dim=0), ["[2, 2]", "5"]),
]


@pytest.mark.parametrize("name,build,needles", SHAPE_ERRORS, ids=[e[0] for e in SHAPE_ERRORS])
def test_bad_shapes_raise_value_errors_naming_them(name, build, needles):
    with pytest.raises(Exception):  # torch rejects the same program
        build(torch)
    with pytest.raises(ValueError) as info:
        build(tg)
    for needle in needles:
        assert needle in str(info.value), f"{name}: {needle!r} not in {str(info.value)!r}"


@pytest.mark.parametrize("shape,index", [
    ((3,), 5), ((3,), -4), ((3,), [0, 9]), ((3, 3), (0, 3)), ((3, 3), (slice(None), 7)),
    ((3, 3), (np.array([0, 1]), np.array([0, 3]))), ((3,), (0, 0))],
    ids=["int", "negative int", "list", "tuple", "slice then int", "two arrays", "too many indices"])
@pytest.mark.cpu_only(reason="an out-of-range tensor index is a device-side assert on CUDA, not an IndexError")
def test_out_of_range_index_raises_index_out_of_range(shape, index):
    x = tg.Tensor(np.zeros(shape))
    with pytest.raises(tg.IndexOutOfRange, match=re.escape(str(tuple(x.shape)))) as info:
        x[index]
    assert isinstance(info.value, IndexError) and isinstance(info.value, ValueError)
    with pytest.raises(IndexError):  # torch agrees the index is out of range
        torch.zeros(x.shape)[index if not isinstance(index, tuple) else tuple(
            torch.tensor(i, device=DEVICE) if isinstance(i, np.ndarray) else i for i in index)]


def test_bad_index_types_raise_type_error():
    x = tg.Tensor(np.zeros(3))
    with pytest.raises(TypeError):
        x[1.5]
    with pytest.raises(TypeError):
        x[np.array([0.5])]


# ============================================================================ tensor API

def test_detach_item_numpy_size():
    x = tg.Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d.is_leaf and np.shares_memory(d._data, x._data)
    with pytest.raises(RuntimeError, match="detach"):
        x.numpy()
    assert d.numpy() is d._data
    assert x.size() == (2, 3) and x.size(1) == 3 and x.size(-2) == 2
    assert x.shape == (2, 3) and x.ndim == 2 and x.dim() == 2 and x.numel() == 6 and len(x) == 2
    assert x.dtype == np.float64
    s = x.sum()
    assert s.item() == 15.0 and isinstance(s.item(), float)
    assert tg.tensor([7]).item() == 7 and isinstance(tg.tensor([7]).item(), int)
    with pytest.raises(RuntimeError, match="6 elements"):
        x.item()
    with pytest.raises(ValueError):
        x.size(2)
    assert x.requires_grad_(False) is x and not x.requires_grad


def test_repr_is_readable():
    assert repr(tg.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(tg.tensor([1, 2])) == "tensor([1, 2])"
    x = tg.Tensor(np.array([1.0, 2.5]), requires_grad=True)
    assert repr(x) == "tensor([1.0000, 2.5000], dtype=tinygrad_tx.float64, requires_grad=True)"  # as torch's
    assert repr(x * 2.0) == "tensor([2., 5.], dtype=tinygrad_tx.float64, grad_fn=<MulBackward0>)"
    assert repr(tg.zeros(0)) == "tensor([])" and repr(tg.zeros(0, dtype=tg.int64)) == "tensor([], dtype=tinygrad_tx.int64)"


def test_register_hook_sees_and_replaces_grads_like_torch():
    results = []
    for m in (tg, torch):
        seen = []
        x = m.tensor(np.array([1.0, 2.0]), requires_grad=True)
        h = x * 3.0
        h.register_hook(lambda g: seen.append(np.array(g._data if m is tg else g.numpy())))
        handle = h.register_hook(lambda g: g * 10.0)
        x.register_hook(lambda g: g + 1.0)
        (h * h).sum().backward()
        handle.remove()
        results.append((seen, np.asarray(x.grad._data if m is tg else x.grad)))
    (seen_ours, grad_ours), (seen_ref, grad_ref) = results
    np.testing.assert_allclose(seen_ours[0], seen_ref[0])
    np.testing.assert_allclose(grad_ours, grad_ref)
    x = tg.Tensor(np.ones(2), requires_grad=True)
    h = x * 1.0
    handle = h.register_hook(lambda g: g * 10.0)
    handle.remove()
    h.sum().backward()
    np.testing.assert_array_equal(x.grad, [1.0, 1.0])
    with pytest.raises(RuntimeError, match="doesn't require"):
        tg.Tensor(np.ones(2)).register_hook(lambda g: g)


# ============================================================================ Function API

class CountingMul(ArrayFunction):
    """y = a * b; counts the input gradients it is asked to compute."""

    computed = []

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        ctx.note = "metadata"
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        assert ctx.note == "metadata"
        CountingMul.computed.append(ctx.needs_input_grad)
        ga = g * b if ctx.needs_input_grad[0] else None
        gb = g * a if ctx.needs_input_grad[1] else None
        return ga, gb


def test_needs_input_grad_skips_unneeded_gradients():
    CountingMul.computed.clear()
    a = tg.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    b = tg.Tensor(np.array([3.0, 4.0]))
    CountingMul.apply(a, b).sum().backward()
    assert CountingMul.computed == [(True, False)]
    np.testing.assert_array_equal(a.grad, [3.0, 4.0])
    assert b.grad is None

    # a sub-graph that needs no grad is never run backwards at all
    CountingMul.computed.clear()
    const = CountingMul.apply(b, b)
    assert not const.requires_grad and const.grad_fn is None
    (const * a).sum().backward()
    assert CountingMul.computed == []

    # with no_grad nothing is recorded, whatever the inputs
    with tg.no_grad():
        assert not CountingMul.apply(a, a).requires_grad


def test_function_scalar_arguments_and_grad_fn():
    y = CountingMul.apply(tg.Tensor(np.ones(2), requires_grad=True), 3.0)
    assert y.grad_fn.fn is CountingMul and CountingMul.name() == "CountingMul"
    CountingMul.computed.clear()
    y.sum().backward()
    assert CountingMul.computed == [(True, False)]


def _doubling_function(name, backward):
    """A Function y = 2x with the given (broken) backward."""
    return type(name, (ArrayFunction,), {"forward": staticmethod(lambda ctx, x: x * 2), "backward": staticmethod(backward)})


def test_engine_rejects_wrong_gradient_shapes_and_counts():
    WrongShape = _doubling_function("WrongShape", lambda ctx, g: g[:1])
    WrongCount = _doubling_function("WrongCount", lambda ctx, g: (g, g))
    x = tg.Tensor(np.ones((2, 3)), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"WrongShape.*\(1, 3\).*\(2, 3\)"):
        WrongShape.apply(x).sum().backward()
    with pytest.raises(RuntimeError, match="WrongCount.*2 gradients for 1 inputs"):
        WrongCount.apply(x).sum().backward()


def test_broadcast_gradients_are_reduced_by_the_engine():
    """A backward may return its gradient in the broadcast (output) shape; the engine sums it
    back to every input's shape and dtype."""
    a = tg.Tensor(np.ones((3, 1), np.float32), requires_grad=True)
    b = tg.Tensor(np.ones(4), requires_grad=True)
    (a * b).backward(np.ones((3, 4)))
    assert a.grad.shape == (3, 1) and a.grad.dtype == np.float32 and b.grad.shape == (4,)
    np.testing.assert_array_equal(a.grad, np.full((3, 1), 4.0))
    np.testing.assert_array_equal(b.grad, np.full(4, 3.0))


def test_saved_memory_returns_to_start_after_backward():
    start = SavedMemory.current
    x = tg.Tensor(np.random.default_rng(0).standard_normal((64, 32)), requires_grad=True)
    w = tg.Tensor(np.random.default_rng(1).standard_normal((32, 16)), requires_grad=True)
    SavedMemory.reset_peak()
    y = (x @ w).tanh().exp()
    held = SavedMemory.current - start
    assert held >= x._data.nbytes + w._data.nbytes  # matmul saves both operands, tanh/exp their outputs
    assert SavedMemory.peak >= SavedMemory.current
    y.sum().backward()
    assert SavedMemory.current == start

    # retain_graph keeps the arrays until the graph is dropped
    y = (x @ w).tanh()
    y.sum().backward(retain_graph=True)
    assert SavedMemory.current > start
    del y
    assert SavedMemory.current == start


@pytest.mark.cpu_only(reason="compares .numpy() of torch's .grad, which shares its CPU memory")
def test_a_second_backward_adds_into_grad_in_place_as_torch():
    """torch adds a later gradient into ``.grad`` in place: a view of ``.grad`` and its ``.numpy()``
    see the sum. The engine replaced ``.grad``'s array instead, leaving both at the first gradient."""
    out = {}
    for lib in (tg, torch):
        w = lib.ones(3, requires_grad=True)
        (w * 2).sum().backward()
        a, v, g = w.grad.numpy(), w.grad[:2], w.grad
        (w * 3).sum().backward()
        assert w.grad is g
        out[lib] = (a.tolist(), v.tolist(), w.grad._version)
    assert out[tg] == out[torch] == ([5.0, 5.0, 5.0], [5.0, 5.0], 1)
