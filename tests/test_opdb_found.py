"""Regressions for the engine bugs the op database (reference/opdb.py, tests/test_opdb.py) found, each
small and against torch, with a random cotangent."""
import numpy as np
import pytest
import torch

import tinygrad_tx as tt
from reference.testing import DEVICE, to_numpy, to_torch


def _both(fn, *arrays, g):
    """fn(lib, *leaves) on both engines: (ours value, ours grads, torch value, torch grads)."""
    ours_in = [tt.from_numpy(a.copy()).requires_grad_() for a in arrays]
    ref_in = [to_torch(a, requires_grad=True) for a in arrays]
    ours, ref = fn(tt, *ours_in), fn(torch, *ref_in)
    ours.backward(tt.from_numpy(g))
    ref.backward(to_torch(g))
    return ours, [t.grad.numpy() for t in ours_in], to_numpy(ref), [to_numpy(t.grad) for t in ref_in]


def test_backward_from_a_view_after_a_sibling_view_was_edited_in_place():
    """``a`` and ``b`` are views of ``y``; ``b.exp_()`` changes ``a``'s values too, so a gradient
    from ``a`` must go through exp. Ours kept ``a``'s history from before the edit (its node was
    rebuilt only when ``a`` fed another op, not when it was the root of backward)."""
    def fn(lib, x):
        y = x * 1.5
        a, b = y[:, :2], y.t()
        b.exp_()
        return a
    x = np.random.default_rng(0).standard_normal((2, 3))
    g = np.random.default_rng(1).standard_normal((2, 2))
    ours, ours_g, ref, ref_g = _both(fn, x, g=g)
    np.testing.assert_allclose(ours.detach().numpy(), ref, rtol=1e-12)
    assert np.abs(ref_g[0]).max() > 0
    np.testing.assert_allclose(ours_g[0], ref_g[0], rtol=1e-12)


def test_size_one_contiguous_is_the_same_tensor_and_sees_the_edit():
    """The opdb case: (x*1.5).transpose(0, -1).contiguous() of a (1, 3) is a view (size-1 dims'
    strides do not matter), so an in-place edit through its transpose reaches it."""
    def fn(lib, x):
        base = (x * 1.5).transpose(0, -1).contiguous()
        base.transpose(0, -1).exp_()
        return base
    x = np.array([[-0.5, 0.3, -1.2]])
    g = np.array([[1.0], [2.0], [3.0]])
    ours, ours_g, ref, ref_g = _both(fn, x, g=g)
    np.testing.assert_allclose(ours.detach().numpy(), ref, rtol=1e-12)
    np.testing.assert_allclose(ours_g[0], ref_g[0], rtol=1e-12)


def test_grad_fn_of_a_stale_view_is_rebuilt():
    x = tt.randn(2, 3, dtype=tt.float64, requires_grad=True)
    y = x * 1.0
    a = y[0]
    y.t().mul_(2.0)
    seen, stack = [], [a.grad_fn]       # torch: a's grad_fn now starts from the edited base
    while stack:
        node = stack.pop()
        if node is not None:
            seen.append(node.fn.__name__ if getattr(node, "fn", None) else "")
            stack.extend(n for n, _ in node.next_functions)
    assert "CopySlices" in seen, seen
    (a * 1.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[2.0] * 3, [0.0] * 3])


def test_in_place_through_a_view_of_a_0d_tensor():
    """atleast_1d(s) of a 0-d s is a view; an in-place edit of it crashed in CopySlices (NumPy:
    "multiple indices are not supported for 0d arrays")."""
    def fn(lib, s, w):
        b = s * 3.0
        lib.atleast_2d(b).mul_(w)
        return b
    ours, ours_g, ref, ref_g = _both(fn, np.array(2.0), np.array(-0.7), g=np.array(1.5))
    np.testing.assert_allclose(ours.detach().numpy(), ref, rtol=1e-12)
    for o, r in zip(ours_g, ref_g):
        np.testing.assert_allclose(o, r, rtol=1e-12)


def test_diag_of_a_matrix_is_a_copy_as_torchs():
    x = tt.from_numpy(np.arange(12.0).reshape(3, 4))
    d = tt.diag(x)
    d.mul_(10.0)
    assert x.numpy()[0, 0] == 0.0 and x.numpy()[1, 1] == 5.0    # the matrix did not change
    assert not torch.diag(torch.arange(12.0, device=DEVICE).reshape(3, 4))._is_view()


@pytest.mark.parametrize("split", [lambda t: t.split(2), lambda t: t.chunk(2), lambda t: t.unbind()])
def test_a_multi_view_output_whose_base_changed_is_refused_as_torch(split):
    """torch cannot rebuild one output of split/chunk/unbind after its base changed in place and
    raises at its next use; ours rebuilt it silently."""
    for lib in (torch, tt):
        x = (to_torch if lib is torch else tt.from_numpy)(np.ones((4, 3))).requires_grad_()
        y = x * 1.0
        v = split(y)[0]
        y.add_(1.0)
        with pytest.raises(RuntimeError, match="returns multiple views"):
            (v * 1.0).sum().backward()


def test_explain_finds_addr_by_running_it():
    """``explain addr`` said "unknown op": its probe inputs had no (matrix, vector, vector) triple,
    the only call addr accepts. Its page shows the Functions addr's graph holds (the outer
    product's Mul of broadcast vectors, and Add)."""
    import importlib
    explain = importlib.import_module("tinygrad_tx.viz.explain")
    kind, found = explain.find_op("addr")
    assert kind == "primitive"
    assert {"Add", "Mul"} <= {c.__name__ for c in found}
