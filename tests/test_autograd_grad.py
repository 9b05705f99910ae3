"""``autograd.grad`` / ``autograd.backward`` / ``Tensor.backward`` with torch's semantics and errors,
and the create_graph machinery itself (the op-by-op second-order parity lives in
test_double_backward_*.py)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tinygrad_tx as tg
from reference.testing import DEVICE, check_double_parity

RNG = np.random.default_rng(0)


def _pair(a, requires_grad=True):
    return (tg.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad, device=DEVICE))


def _np(t):
    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


def test_grad_returns_gradients_and_leaves_dot_grad_alone():
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((4,))
    (x, tx), (w, tw) = _pair(a), _pair(b)
    g = RNG.standard_normal((3, 4))
    ours = tg.autograd.grad((x * w).exp(), (x, w), tg.tensor(g))
    ref = torch.autograd.grad((tx * tw).exp(), (tx, tw), torch.tensor(g, device=DEVICE))
    assert isinstance(ours, tuple) and len(ours) == 2
    for o, r in zip(ours, ref):
        np.testing.assert_allclose(_np(o), _np(r), rtol=1e-12)
        assert np.any(_np(r) != 0)
    assert x.grad is None and w.grad is None


def test_grad_of_a_non_leaf_and_several_outputs():
    a = RNG.standard_normal((5,))
    (x, tx) = _pair(a)
    outs = []
    for lib, t in ((tg, x), (torch, tx)):
        h = t * 3.0
        y1, y2 = (h * h).sum(), (h * t).sum()
        outs.append(lib.autograd.grad([y1, y2], [h, t]))
    for o, r in zip(*outs):
        np.testing.assert_allclose(_np(o), _np(r), rtol=1e-12)


def test_unused_input_needs_allow_unused_and_materialize_grads_gives_zeros():
    (x, tx), (z, tz) = _pair(RNG.standard_normal(3)), _pair(RNG.standard_normal(3))
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        tg.autograd.grad((x * x).sum(), [x, z])
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        torch.autograd.grad((tx * tx).sum(), [tx, tz])
    gx, gz = tg.autograd.grad((x * x).sum(), [x, z], allow_unused=True)
    assert gz is None and gx is not None
    gx, gz = tg.autograd.grad((x * x).sum(), [x, z], materialize_grads=True)
    np.testing.assert_array_equal(gz.numpy(), np.zeros(3))
    with pytest.raises(ValueError, match="allow_unused"):
        tg.autograd.grad((x * x).sum(), [x, z], materialize_grads=True, allow_unused=False)


def test_argument_errors_as_torch():
    x, tx = _pair(RNG.standard_normal((2, 3)))
    for lib, t in ((tg, x), (torch, tx)):
        with pytest.raises(RuntimeError, match="scalar outputs"):
            lib.autograd.grad(t * 2, t)
        with pytest.raises(RuntimeError, match="does not require grad"):
            lib.autograd.grad((t * 2).sum(), lib.ones(2, 3) if lib is tg else torch.ones(2, 3, device=DEVICE))
        with pytest.raises(RuntimeError, match="Mismatch in shape"):
            lib.autograd.grad(t * 2, t, lib.ones(3) if lib is tg else torch.ones(3, device=DEVICE))
    with pytest.raises(NotImplementedError, match="is_grads_batched"):
        tg.autograd.grad((x * 2).sum(), x, is_grads_batched=True)


def test_second_backward_needs_retain_graph():
    x, tx = _pair(RNG.standard_normal(3))
    for lib, t in ((tg, x), (torch, tx)):
        y = (t.exp() * t).sum()
        lib.autograd.grad(y, t)
        with pytest.raises(RuntimeError, match="a second time"):
            lib.autograd.grad(y, t)
        y = (t.exp() * t).sum()
        g1 = lib.autograd.grad(y, t, retain_graph=True)
        g2 = lib.autograd.grad(y, t)
        np.testing.assert_array_equal(_np(g1[0]), _np(g2[0]))


def test_backward_inputs_restricts_accumulation():
    (x, tx), (w, tw) = _pair(RNG.standard_normal(3)), _pair(RNG.standard_normal(3))
    for t, v in ((x, w), (tx, tw)):
        h = t * v
        h.retain_grad() if isinstance(h, torch.Tensor) else None
        (h * h).sum().backward(inputs=[v])
        assert t.grad is None
    np.testing.assert_allclose(w.grad.numpy(), _np(tw.grad), rtol=1e-12)
    with pytest.raises(RuntimeError, match="cannot be empty"):
        (x * w).sum().backward(inputs=[])


def test_backward_inputs_may_be_a_non_leaf():
    x, tx = _pair(RNG.standard_normal(4))
    grads = []
    for t in (x, tx):
        h = t.exp()
        (h * h).sum().backward(inputs=[h])
        grads.append(h.grad)
        assert t.grad is None
    np.testing.assert_allclose(grads[0].numpy(), _np(grads[1]), rtol=1e-12)


def test_autograd_backward_with_several_tensors():
    x, tx = _pair(RNG.standard_normal(3))
    g = RNG.standard_normal(3)
    for lib, t in ((tg, x), (torch, tx)):
        gt = lib.tensor(g) if lib is tg else torch.tensor(g, device=DEVICE)
        lib.autograd.backward([(t * t).sum(), t.exp()], [None, gt])
    np.testing.assert_allclose(x.grad.numpy(), _np(tx.grad), rtol=1e-12)


def test_create_graph_grad_has_history_and_retains_the_graph():
    x, tx = _pair(RNG.standard_normal(3))
    y = (x * x * x).sum()
    y.backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.grad_fn is not None
    first = x.grad
    y.backward(create_graph=True)   # retain_graph defaulted to True with create_graph: it works again
    assert x.grad is not first      # accumulated out of place, keeping its history
    (gg,) = tg.autograd.grad(x.grad.sum(), x)
    ty = (tx * tx * tx).sum()
    ty.backward(create_graph=True)
    ty.backward(create_graph=True)
    (tgg,) = torch.autograd.grad(tx.grad.sum(), tx)
    np.testing.assert_allclose(gg.numpy(), _np(tgg), rtol=1e-12)
    np.testing.assert_allclose(x.grad.detach().numpy(), _np(tx.grad), rtol=1e-12)


def test_third_derivative():
    x = tg.tensor([0.3, -1.2, 2.0], dtype=tg.float64, requires_grad=True)
    tx = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64, requires_grad=True, device=DEVICE)
    outs = []
    for lib, t in ((tg, x), (torch, tx)):
        y = (t.tanh() * t.exp()).sum()
        (g1,) = lib.autograd.grad(y, t, create_graph=True)
        (g2,) = lib.autograd.grad(g1.sum(), t, create_graph=True)
        (g3,) = lib.autograd.grad(g2.sum(), t)
        outs.append(g3)
    np.testing.assert_allclose(_np(outs[0]), _np(outs[1]), rtol=1e-10)


def test_newton_method_on_one_variable():
    """x ← x − f'(x)/f''(x) for f(x) = exp(x) − 2x (minimum at ln 2), both derivatives by autograd."""
    x = tg.tensor(1.5, dtype=tg.float64, requires_grad=True)
    for _ in range(8):
        f = x.exp() - 2 * x
        (d1,) = tg.autograd.grad(f, x, create_graph=True)
        (d2,) = tg.autograd.grad(d1, x)
        x = (x - d1 / d2).detach().requires_grad_()
    assert abs(x.item() - np.log(2.0)) < 1e-14


def test_gradient_penalty_matches_torch():
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((3,))
    res = []
    for lib in (tg, torch):
        kw = {"device": DEVICE} if lib is torch else {}
        x = lib.tensor(a, requires_grad=True, **kw)
        w = lib.tensor(b, requires_grad=True, **kw)
        out = ((x * w).tanh() * x).sum()
        (gx,) = lib.autograd.grad(out, x, create_graph=True)
        penalty = ((gx * gx).sum() - 1.0) * ((gx * gx).sum() - 1.0)
        penalty.backward()
        res.append((w.grad, x.grad))
    for o, r in zip(*res):
        np.testing.assert_allclose(_np(o), _np(r), rtol=1e-10)
        assert np.any(_np(r) != 0)


def test_not_yet_twice_differentiable_op_raises_naming_it():
    class Square(tg.autograd.ArrayFunction):   # differentiable_backward left False
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    (g,) = tg.autograd.grad(Square.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [2.0, 4.0])   # first order is fine
    assert g.requires_grad
    with pytest.raises(RuntimeError, match="Square.*cannot be differentiated"):
        tg.autograd.grad(g.sum(), x)


def test_intermediate_saved_array_refused_never_a_silent_constant():
    class Cube(tg.autograd.ArrayFunction):
        differentiable_backward = True   # wrongly: it saves x*x, an intermediate

        @staticmethod
        def forward(ctx, x):
            sq = x * x
            ctx.save_for_backward(sq)
            return sq * x

        @staticmethod
        def backward(ctx, g):
            (sq,) = ctx.saved_tensors
            return 3 * g * sq

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="computed inside its forward"):
        tg.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)


def test_numpy_call_without_tensor_twin_raises_in_a_differentiated_backward():
    class Bad(tg.autograd.ArrayFunction):
        differentiable_backward = True

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return np.asarray(g) * 2   # leaves the graph

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match="turned into a NumPy array"):
        tg.autograd.grad(Bad.apply(x).sum(), x, create_graph=True)
    # without create_graph the same backward is plain NumPy and fine
    (g,) = tg.autograd.grad(Bad.apply(x).sum(), x)
    np.testing.assert_array_equal(g.numpy(), [2.0, 2.0])


def test_hooks_see_tensors_under_create_graph():
    x = tg.tensor([1.0, -2.0], dtype=tg.float64, requires_grad=True)
    seen = []
    h = x * x
    h.register_hook(lambda g: seen.append(type(g)) or g * 2)
    (g,) = tg.autograd.grad(h.sum(), x, create_graph=True)
    (gg,) = tg.autograd.grad(g.sum(), x)
    assert seen == [tg.Tensor]
    np.testing.assert_allclose(gg.numpy(), [4.0, 4.0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_double_parity_of_the_flagged_elementwise_ops(dtype):
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((4,)) + 3.0
    for f in (lambda x, y: x * y, lambda x, y: x / y, lambda x, y: (x * y).exp(),
              lambda x, y: (x - y).tanh() * x, lambda x, y: (y.log() - x) * x):
        check_double_parity(f, f, a, b, dtype=dtype, name="elementwise")


def test_detect_anomaly_names_the_op_and_the_user_line():
    x = tg.tensor([0.0, 1.0], requires_grad=True)
    with tg.autograd.detect_anomaly():
        y = (x.log() * 0 + x).sum()   # d log / dx at 0 is inf; times 0 is nan
        with pytest.raises(RuntimeError, match=r"Backward' returned (nan|inf).*test_autograd_grad.py:\d+"):
            y.backward()
    assert not tg.autograd.is_anomaly_enabled()


def test_grad_fn_is_a_node_to_walk_by_hand_as_in_torch():
    """The classic lesson: follow grad_fn.next_functions from the loss back to the leaves."""
    names = []
    for lib in (tg, torch):
        kw = {"device": DEVICE} if lib is torch else {}
        x = lib.tensor([1.0, 2.0], requires_grad=True, **kw)
        w = lib.tensor([0.5, -1.0], requires_grad=True, **kw)
        c = lib.tensor([3.0, 4.0], **kw)
        loss = ((x * w).exp() + c).sum()
        walked, node = [], loss.grad_fn
        while node is not None:
            walked.append(node.name())
            nxt = [n for n, _ in node.next_functions if n is not None]
            if node.name().startswith("Mul"):
                leaves = sorted(id(n.variable) for n in nxt)
                assert leaves == sorted([id(x), id(w)])
                assert all(n.name() == "torch::autograd::AccumulateGrad" for n in nxt)
                break
            node = nxt[0]
        assert [n for n, _ in loss.grad_fn.next_functions][0].next_functions[1] == (None, 0)   # c: no grad
        names.append(walked)
    assert names[0] == names[1] == ["SumBackward0", "AddBackward0", "ExpBackward0", "MulBackward0"]
