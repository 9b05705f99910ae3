"""PyTorch-style custom ``autograd.Function`` (``tinygrad_tx.autograd.Function``): every form is
written once, as a function of the library (``lib.autograd.Function``, ``x.exp()``...), and run
with torch and with tinygrad_tx: values, gradients (random cotangents, float64) and gradients of
gradients equal, and the same errors."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch

import tinygrad_tx as tg

pytestmark = pytest.mark.cpu_only(reason="the same custom Function classes run on torch as written (CPU tensors)")

LIBS = (torch, tg)
RNG = np.random.default_rng(0)


def _np(t):
    return None if t is None else t.detach().numpy()


def _leaf(lib, a):
    return lib.tensor(np.array(a, dtype=np.float64), requires_grad=True)


def _close(a, b, rtol=1e-10):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-13)


def _both(case, *arrays, **kw):
    """``case(lib, *leaves)`` for both libraries; returns (torch's, ours) as nested arrays."""
    outs = []
    for lib in LIBS:
        out = case(lib, *[_leaf(lib, a) for a in arrays], **kw)
        outs.append(_tree(out))
    return outs


def _tree(x):
    if isinstance(x, (tuple, list)):
        return [_tree(e) for e in x]
    if isinstance(x, (torch.Tensor, tg.Tensor)):
        return _np(x)
    return x


def _assert_same(ref, ours):
    if isinstance(ref, list):
        assert isinstance(ours, list) and len(ref) == len(ours)
        for r, o in zip(ref, ours):
            _assert_same(r, o)
    elif isinstance(ref, np.ndarray):
        assert isinstance(ours, np.ndarray) and ref.shape == ours.shape and ref.dtype == ours.dtype
        _close(ours, ref)
    else:
        assert ref == ours


# --------------------------------------------------------------------------- the classes, once

def exp_fn(lib):
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y
    return Exp


def scaled_product_fn(lib, seen):
    """Two Tensor inputs, a float and a keyword argument, two outputs, ctx attributes."""
    class ScaledProduct(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, k, shift=0.5):
            seen.append(("forward", lib.is_grad_enabled(), tuple(ctx.needs_input_grad)))
            ctx.save_for_backward(a, b)
            ctx.k = k
            return a * b * k + shift, (a - b).tanh()

        @staticmethod
        def backward(ctx, g_prod, g_tanh):
            a, b = ctx.saved_tensors
            seen.append(("backward", tuple(ctx.needs_input_grad)))
            t = (a - b).tanh()
            d = g_tanh * (1 - t * t)
            return g_prod * b * ctx.k + d, g_prod * a * ctx.k - d, None, None
    return ScaledProduct


def test_forward_gets_tensors_without_recording_and_the_gradients_match():
    a, w = RNG.standard_normal(4), RNG.standard_normal(4)

    def case(lib, x, v):
        y = exp_fn(lib).apply(x)
        assert type(y) is type(x) and y.requires_grad and not y.is_leaf
        (gx,) = lib.autograd.grad(y, x, v)
        return y, gx
    ref, ours = [], []
    for lib, out in ((torch, ref), (tg, ours)):
        x, v = _leaf(lib, a), lib.tensor(w)
        out.append(_tree(case(lib, x, v)))
    _assert_same(ref, ours)


def test_backward_written_with_tensor_ops_is_differentiable_again():
    """grad(<grad(Exp(x)^2, x, create_graph=True), w>, x) and a third derivative, as torch."""
    a, w = RNG.standard_normal(5), RNG.standard_normal(5)

    def case(lib, x):
        y = exp_fn(lib).apply(x)
        (g,) = lib.autograd.grad((y * y).sum(), x, create_graph=True)
        assert g.requires_grad
        (h,) = lib.autograd.grad((g * lib.tensor(w)).sum(), x, create_graph=True)
        (t,) = lib.autograd.grad(h.sum(), x)
        return g, h, t
    _assert_same(*_both(case, a))


@pytest.mark.parametrize("record", [True, False])
def test_several_outputs_non_tensor_arguments_and_ctx_attributes(record):
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    v1, v2 = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    logs = {}

    def case(lib, x, y):
        seen = logs.setdefault(lib.__name__, [])
        fn = scaled_product_fn(lib, seen)
        if not record:
            with lib.no_grad():
                p, t = fn.apply(x, y, 3.0, shift=0.25)
            assert not p.requires_grad and not t.requires_grad
            return p, t
        p, t = fn.apply(x, y, 3.0, shift=0.25)
        gx, gy = lib.autograd.grad((p, t), (x, y), (lib.tensor(v1), lib.tensor(v2)), create_graph=True)
        hx, hy = lib.autograd.grad((gx * gy).sum(), (x, y))
        return p, t, gx, gy, hx, hy
    _assert_same(*_both(case, a, b))
    assert logs["torch"] == logs["tinygrad_tx"]


def test_one_output_unused_gets_zeros_or_none_without_materialize():
    a = RNG.standard_normal(3)

    def make(lib, materialize, got):
        class Two(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                got.append([None if g is None else _np(g) for g in (g1, g2)])
                return (g1 if g1 is not None else 0) + (g2 if g2 is not None else 0)
        return Two
    for materialize in (True, False):
        got = {}
        for lib in LIBS:
            x = _leaf(lib, a)
            two = make(lib, materialize, got.setdefault(lib.__name__, []))
            _, second = two.apply(x)
            (g,) = lib.autograd.grad(second.sum(), x)
            got[lib.__name__].append(_np(g))
        _assert_same(_tree(got["torch"]), _tree(got["tinygrad_tx"]))


def test_mark_non_differentiable_and_integer_outputs():
    a = RNG.standard_normal(4)

    def case(lib, x):
        got = []

        class SortLike(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y, mask = x * 2, x * 0 + 1
                ctx.mark_non_differentiable(mask)
                return y, mask, x.argmax()

            @staticmethod
            def backward(ctx, g, g_mask, g_idx):
                got.extend([_np(g_mask), _np(g_idx)])
                return g * 2
        y, mask, idx = SortLike.apply(x)
        assert y.requires_grad and not mask.requires_grad and not idx.requires_grad
        (g,) = lib.autograd.grad(y.sum(), x)
        return got + [g, idx]
    _assert_same(*_both(case, a))


def test_mark_dirty_in_place_forward():
    a = RNG.standard_normal(3)

    def case(lib, x):
        class TimesTwoInPlace(lib.autograd.Function):
            @staticmethod
            def forward(ctx, t):
                t.mul_(2)
                ctx.mark_dirty(t)
                return t

            @staticmethod
            def backward(ctx, g):
                return g * 2
        h = x * 1.5
        out = TimesTwoInPlace.apply(h)
        assert out is h and h.requires_grad and h._version == 2
        (g,) = lib.autograd.grad((out * out).sum(), x)
        return out, g
    _assert_same(*_both(case, a))


def test_setup_context_form_with_defaults_and_keywords():
    a = RNG.standard_normal(3)

    def case(lib, x):
        seen = []

        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(x, k=2.0):
                seen.append(lib.is_grad_enabled())
                return x * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                seen.append((lib.is_grad_enabled(), len(inputs), inputs[1], tuple(ctx.needs_input_grad)))
                ctx.k = inputs[1]

            @staticmethod
            def backward(ctx, g):
                return g * ctx.k, None
        y1, y2 = Scale.apply(x), Scale.apply(x, k=5.0)
        (g,) = lib.autograd.grad((y1 * y2).sum(), x)
        return y1, y2, g, seen
    _assert_same(*_both(case, a))


def once_fn(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            assert not lib.is_grad_enabled()
            return 2 * g * x
    return Square


def test_once_differentiable_first_order_works_second_order_raises():
    a = RNG.standard_normal(3)
    _assert_same(*_both(lambda lib, x: lib.autograd.grad(once_fn(lib).apply(x).sum(), x), a))
    for lib in LIBS:
        x = _leaf(lib, a)
        (g,) = lib.autograd.grad(once_fn(lib).apply(x).exp().sum(), x, create_graph=True)
        assert g.requires_grad
        with pytest.raises(RuntimeError, match="differentiate twice a function that was marked with @once_differentiable"):
            g.sum().backward()
        x = _leaf(lib, a)   # the first node's incoming gradient needs no grad: nothing recorded, as torch
        (g,) = lib.autograd.grad(once_fn(lib).apply(x).sum(), x, create_graph=True)
        assert not g.requires_grad


def test_a_saved_tensor_changed_in_place_is_refused_at_backward():
    a = RNG.standard_normal(3)
    for lib in LIBS:
        x = _leaf(lib, a)
        h = x * 1
        y = once_fn(lib).apply(h)
        h.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
        y = exp_fn(lib).apply(x)      # the saved output changed
        y.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation.*output 0 of Exp"):
            y.sum().backward()


def test_saved_tensors_freed_after_backward():
    for lib in LIBS:
        x = _leaf(lib, [0.5, 1.0])
        y = exp_fn(lib).apply(x)
        y.sum().backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            y.sum().backward()


def _bad(lib, kind):
    class Bad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            if kind == "save_number":
                ctx.save_for_backward(x, 3)
            if kind == "dirty_not_returned":
                x.mul_(2)
                ctx.mark_dirty(x)
            return x * k

        @staticmethod
        def backward(ctx, g):
            return {"too_few": g, "too_many": (g, None, g), "extra_none": (g, None, None),
                    "number": (3.0, None), "non_tensor_input": (g, g),
                    "shape": (g.sum().reshape(1).expand(4), None)}.get(kind, (g, None))
    return Bad


@pytest.mark.parametrize("kind, error, message", [
    ("too_few", RuntimeError, "function BadBackward returned an incorrect number of gradients (expected 2, got 1)"),
    ("too_many", RuntimeError, "function BadBackward returned an incorrect number of gradients (expected 2, got 3)"),
    ("number", RuntimeError, "expected Variable or None (got float)"),
    ("non_tensor_input", RuntimeError, "function BadBackward returned a gradient different than None at position 2, "
                                       "but the corresponding forward input was not a Variable"),
    ("shape", RuntimeError, "Function BadBackward returned an invalid gradient at index 0 - got [4] but expected "
                            "shape compatible with [3]"),
    ("save_number", TypeError, "save_for_backward can only save variables, but argument 1 is of type int"),
    ("dirty_not_returned", RuntimeError, "Some elements marked as dirty during the forward method were not returned"),
])
def test_errors_as_torch(kind, error, message):
    for lib in LIBS:
        x = _leaf(lib, [0.1, 0.2, 0.3])
        with pytest.raises(error) as info:
            y = _bad(lib, kind).apply(x * 1, 2.0)
            lib.autograd.grad(y.sum(), x)
        assert message in str(info.value), (lib.__name__, str(info.value))


def test_extra_none_gradients_are_allowed_and_legacy_calls_refused():
    for lib in LIBS:
        x = _leaf(lib, [0.1, 0.2])
        (g,) = lib.autograd.grad(_bad(lib, "extra_none").apply(x, 2.0).sum(), x)
        assert _np(g).tolist() == [1.0, 1.0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward method"):
                exp_fn(lib)()(x)

        class NoBackward(lib.autograd.Function):
            @staticmethod
            def forward(ctx, t):
                return t * 2
        with pytest.raises(NotImplementedError, match="You must implement either the backward or vjp method"):
            NoBackward.apply(x).sum().backward()


def test_grad_fn_is_named_after_the_class_and_torch_names_resolve():
    x = _leaf(tg, [1.0])
    for lib in LIBS:
        assert exp_fn(lib).apply(_leaf(lib, [1.0])).grad_fn.name() == "ExpBackward"
    assert exp_fn(tg).apply(x).grad_fn.fn.__name__ == "Exp"
    from tinygrad_tx.autograd.function import Function, once_differentiable   # torch.autograd.function's names
    assert Function is tg.autograd.Function and once_differentiable is tg.autograd.once_differentiable


def test_anomaly_mode_names_the_custom_function_and_the_users_line():
    class NaNBackward(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")
    x = _leaf(tg, [1.0, 2.0])
    with tg.autograd.detect_anomaly():
        y = NaNBackward.apply(x); line = _line()   # noqa: E702 - the line the error must name
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
    msg = str(info.value)
    assert "Function 'NaNBackwardBackward' returned nan values in its 0th output" in msg
    assert re.search(rf"test_autograd_function\.py:{line}\b", msg), msg
    y = NaNBackward.apply(_leaf(tg, [1.0]))   # without anomaly mode: no check
    y.sum().backward()


def _line():
    import inspect
    return inspect.currentframe().f_back.f_lineno
