"""Gradients through many slices of one tensor (issue #18): indexing's backward hands the engine
a small (index, values) term (``SliceGrad``) that the engine adds into one buffer it owns
(``autograd/accumulate.py``). Every program here runs through torch too: gradients with a random
cotangent, float64 to the kit's 1e-10; and the places where the engine hands a gradient out
(hooks, ``retain_grad``, ``.grad``, ``autograd.grad``, ``create_graph=True``) must see an ordinary
array, and no array the engine does not own may be written.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

import tinygrad_tx as tg
from tinygrad_tx.core.accumulate import SliceGrad
from tinygrad_tx.ops.movement import GetItem
from reference.testing import DEVICE, F64_RTOL, assert_close, assert_nontrivial, check_double_parity, check_parity

B, T, C = 3, 7, 4


def _x(seed=0, shape=(B, T, C)):
    return np.random.default_rng(seed).standard_normal(shape)


def _flat_cat(m, *parts):
    return m.cat([p.flatten() for p in parts])


# Each program reads x (B, T, C) slice by slice; ``m`` is tinygrad_tx or torch.
PROGRAMS = {
    "x[:, t] for every t": lambda m, x: m.stack([x[:, t] * (t + 1) for t in range(T)], 1),
    "negative indices, reversed": lambda m, x: m.stack([x[:, -t - 1] for t in range(T)], 0),
    "strided and overlapping slices": lambda m, x: _flat_cat(m, x[:, ::2], x[:, 1:5:3], x[..., -3:-1].transpose(1, 2),
                                                            x[:, 2:6, None, ::2]),
    "x[t] iteration": lambda m, x: m.stack([row.sum(0) for row in x], 0),
    "unbind(1)": lambda m, x: m.stack([s.tanh() * (i - 2) for i, s in enumerate(x.unbind(1))], 0),
    "split and chunk": lambda m, x: _flat_cat(m, *(p.exp() for p in x.split([2, 1, 4], 1)),
                                               *(c * 3 for c in x.chunk(3, -1))),
    "narrow": lambda m, x: m.stack([x.narrow(1, t, 2) for t in range(T - 1)], 0),
    "slices and a dense use": lambda m, x: m.stack([x[:, t] for t in range(T)], 1) * x.sin() + x[:, 3:4],
    "advanced, repeated indices": lambda m, x: _flat_cat(m, x[:, [0, 2, 2, 6, 0]], x[[1, 1, 0]],
                                                         x[:, [[1, 1], [5, 1]], [3, 0]]),
    "mask and ints": lambda m, x: _flat_cat(m, x[x.detach() > 0.3], x[1, 2], x[0, :, 1], x[..., 0][[0, 0]]),
    "slice of a slice": lambda m, x: m.stack([x[:, t][1:, ::3] for t in range(T)], 0) + x[1:][:, 0, :3:2].sum(),
    "0-d: x[None] and x[...]": lambda m, x: x[0, 0, 0][None] * x[0, 0, 0][...] + x[0, 0, 0][None, None][0],
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_many_slices_match_torch(name):
    program = PROGRAMS[name]
    check_parity(lambda x: program(tg, x), lambda x: program(torch, x), _x(), name=name)


def test_slices_of_a_computed_tensor_match_torch():
    """x is computed (its gradient is summed in grad_of, then its producer's backward runs)."""
    program = lambda m, w: m.stack([(w * 2).tanh()[:, t] * t for t in range(T)], 0) + (w * 2).tanh()[0, 0]  # noqa: E731
    check_parity(lambda w: program(tg, w), lambda w: program(torch, w), _x(1), name="computed")


_INDICES = st.one_of(
    st.integers(-T, T - 1).map(lambda t: (slice(None), t)),
    st.tuples(st.integers(-T, T), st.integers(-T, T), st.integers(1, 3)).map(lambda a: (slice(None), slice(*a))),
    st.lists(st.integers(-T, T - 1), min_size=1, max_size=6).map(lambda ix: (slice(None), ix)),
    st.lists(st.integers(0, B - 1), min_size=1, max_size=4).map(lambda ix: (ix, slice(None), -1)),
)


@given(st.lists(_INDICES, min_size=1, max_size=12), st.booleans(), st.integers(0, 2 ** 16))
def test_random_slices_match_torch(indices, dense_use, seed):
    """Any mix of int, slice and repeated integer-list indices along the time axis (and repeated
    batch rows), each weighted, with or without a dense use of x (x[:, -1] is always read, so
    that the gradient is never all zero: a drawn slice may be empty)."""
    def program(m, x):
        parts = [x[:, -1].flatten()] + [(x[ix] * (k + 2)).flatten() for k, ix in enumerate(indices)]
        if dense_use:
            parts.append((x * x).flatten())
        return m.cat(parts)
    check_parity(lambda x: program(tg, x), lambda x: program(torch, x), _x(seed), name=f"slices {indices}",
                 seed=seed)


def test_indexing_backward_returns_a_slice_gradient():
    """The fast path is taken (what this file is about): on arrays, GetItem's backward returns the
    small term; written out it is the dense scatter of its docstring."""
    x = tg.tensor(_x(), requires_grad=True)
    for index, advanced in [((slice(None), 2), False), ((slice(None), [1, 1, 3]), True)]:
        y = x[index]
        g = np.random.default_rng(2).standard_normal(y.shape)
        term, none = GetItem.backward(y._ctx, g)
        assert type(term) is SliceGrad and none is None
        expected = np.zeros(x.shape)
        np.add.at(expected, index, g)
        np.testing.assert_array_equal(term.dense(), expected)
        np.testing.assert_array_equal(np.asarray(term), expected)


def _torch_leaf(a):
    return torch.tensor(a, requires_grad=True, device=DEVICE)


def test_hooks_and_retain_grad_see_dense_arrays():
    """A hook on a sliced (computed) tensor and on the leaf gets the summed gradient as an
    ordinary array -- the same values as torch's -- and what it returns is used."""
    a, g = _x(3), np.random.default_rng(4).standard_normal((T, B, C))
    seen = {}

    def run(m, x):
        y = x * 1.5
        def hook(name):
            def f(grad):
                seen[(m.__name__, name)] = grad
                return grad * 2 if name == "y" else None
            return f
        y.register_hook(hook("y"))
        x.register_hook(hook("x"))
        y.retain_grad()
        out = m.stack([y[:, t] for t in range(T)], 0) + y[:, -1]
        out.backward(m.tensor(g) if m is tg else torch.tensor(g, device=DEVICE))
        return x.grad, y.grad

    ours, theirs = run(tg, tg.tensor(a, requires_grad=True)), run(torch, _torch_leaf(a))
    for name in ("y", "x"):
        got = seen[("tinygrad_tx", name)]
        assert type(got._data) is np.ndarray and got.shape == (B, T, C)
        assert_nontrivial(seen[("torch", name)].numpy(), name)
        assert_close(got._data, seen[("torch", name)].numpy(), rtol=F64_RTOL, name=f"hook on {name}")
    for o, t, label in zip(ours, theirs, ("x.grad", "y.grad")):
        assert type(o._data) is np.ndarray
        assert_close(o._data, t.numpy(), rtol=F64_RTOL, name=label)


def test_grad_accumulates_on_a_leaf_over_two_backwards():
    a = _x(5)
    gs = [np.random.default_rng(s).standard_normal((T, B, C)) for s in (6, 7)]
    results = []
    for m, wrap in ((tg, tg.tensor), (torch, torch.tensor)):
        x = wrap(a, requires_grad=True)
        for g in gs:
            m.stack(list(x.unbind(1)), 0).backward(wrap(g))
        results.append(x.grad)
    assert_close(results[0]._data, results[1].numpy(), rtol=F64_RTOL, name="accumulated .grad")


def test_autograd_grad_of_a_sliced_intermediate_and_leaf():
    a, g = _x(8), np.random.default_rng(9).standard_normal((T, B, C))
    results = []
    for m, wrap in ((tg, tg.tensor), (torch, torch.tensor)):
        x = wrap(a, requires_grad=True)
        y = x.cos()
        out = m.stack([y[:, t] + x[:, t] for t in range(T)], 0)
        gy, gx = m.autograd.grad(out, [y, x], wrap(g))
        results.append((gy, gx))
        assert x.grad is None
    for o, t in zip(*results):
        assert type(o._data) is np.ndarray
        assert_close(o._data, t.numpy(), rtol=F64_RTOL, name="autograd.grad")


def test_create_graph_through_slices_matches_torch():
    """create_graph=True keeps the dense, recorded gradient: second order through many slices."""
    def program(m, x):
        return m.stack([(x[:, t] * x[:, t - 1]).tanh() for t in range(T)], 0) * x[:, [0, 0, 3]].sum()
    check_double_parity(lambda x: program(tg, x), lambda x: program(torch, x), _x(10), name="slices, 2nd order")


def test_no_array_the_engine_does_not_own_is_written():
    """The first term to arrive may be an alias (here: the caller's cotangent, passed on by
    reshape's and add's backward); adding the slices must not write into it."""
    a = _x(11)
    g = np.random.default_rng(12).standard_normal((B, T, C))
    kept = g.copy()
    x = tg.tensor(a, requires_grad=True)
    y = x.reshape(B, T, C)
    out = y + 0.5 * tg.stack([y[:, t] for t in range(T)], 1)
    out.backward(tg.from_numpy(g))   # shares g's memory
    np.testing.assert_array_equal(g, kept)
    xt = _torch_leaf(a)
    yt = xt.reshape(B, T, C)
    (yt + 0.5 * torch.stack([yt[:, t] for t in range(T)], 1)).backward(torch.tensor(g, device=DEVICE))
    assert_close(x.grad._data, xt.grad.numpy(), rtol=F64_RTOL, name="aliased first term")


def test_recurrent_layer_gradient_matches_torch():
    """nn.LSTM reads its input with unbind(0) and splits its gates with chunk(4)."""
    a, g = _x(13, (T, B, 5)).astype(np.float64), np.random.default_rng(14).standard_normal((T, B, 6))
    grads = []
    for m in (tg, torch):
        m.manual_seed(0)
        lstm = m.nn.LSTM(5, 6).double()
        with m.no_grad():
            for k, (_, p) in enumerate(sorted(lstm.named_parameters())):
                p.copy_(m.tensor(np.random.default_rng(20 + k).uniform(-0.4, 0.4, tuple(p.shape))))
        x = m.tensor(a, requires_grad=True)
        lstm(x)[0].backward(m.tensor(g))
        grads.append([x.grad] + [p.grad for _, p in sorted(lstm.named_parameters())])
    for o, t in zip(*grads):
        assert_nontrivial(t.numpy(), "lstm grad")
        assert_close(o._data, t.numpy(), rtol=F64_RTOL, name="lstm grad")
