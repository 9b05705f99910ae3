"""``tinygrad_tx.autograd.functional`` against ``torch.autograd.functional``: jacobian, hessian,
vjp, jvp, hvp, vhp on functions of one and several inputs and outputs, the same output structure
(a Tensor, a tuple, a tuple of tuples), float64 values within 1e-10, create_graph and strict."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tinygrad_tx as tg

pytestmark = pytest.mark.cpu_only(reason="the same functions run on torch as written (CPU tensors)")

RNG = np.random.default_rng(1)
A, B = RNG.standard_normal(3), RNG.standard_normal((2, 3))
V3, V23 = RNG.standard_normal(3), RNG.standard_normal((2, 3))


def f_one(x):                      # R^3 -> R^3
    return x.exp() * x - x.tanh()


def f_scalar(x):                   # R^3 -> R
    return (x.exp() * x).sum() + (x * x * x).sum() / 3


def f_two_out(x, w):               # (R^3, R^{2x3}) -> (R^{2x3}, R)
    return (w * x).tanh(), (x * x).sum()


def f_two_in(x, w):                # (R^3, R^{2x3}) -> R
    return (w * x.exp()).sum() / (x * x + 1).sum() + ((w - x) * (w - x)).tanh().sum()


CASES = {
    "jacobian_one": lambda F, t: F.jacobian(f_one, t(A)),
    "jacobian_two_by_two": lambda F, t: F.jacobian(f_two_out, (t(A), t(B))),
    "jacobian_tuple_of_one": lambda F, t: F.jacobian(f_one, (t(A),)),
    "jacobian_vectorize": lambda F, t: F.jacobian(f_two_out, (t(A), t(B)), vectorize=True),
    "hessian_one": lambda F, t: F.hessian(f_scalar, t(A)),
    "hessian_two": lambda F, t: F.hessian(f_two_in, (t(A), t(B))),
    "vjp_two": lambda F, t: F.vjp(f_two_out, (t(A), t(B)), (t(V23), t(np.array(0.7)))),
    "vjp_scalar_v_none": lambda F, t: F.vjp(f_scalar, t(A)),
    "jvp_two": lambda F, t: F.jvp(f_two_out, (t(A), t(B)), (t(V3), t(V23))),
    "jvp_one": lambda F, t: F.jvp(f_one, t(A), t(V3)),
    "hvp_two": lambda F, t: F.hvp(f_two_in, (t(A), t(B)), (t(V3), t(V23))),
    "vhp_two": lambda F, t: F.vhp(f_two_in, (t(A), t(B)), (t(V3), t(V23))),
    "hvp_one": lambda F, t: F.hvp(f_scalar, t(A), t(V3)),
}


def _tree(x):
    if isinstance(x, tuple):
        return tuple(_tree(e) for e in x)
    assert isinstance(x, (torch.Tensor, tg.Tensor)), type(x)
    return x.detach().numpy()


def _compare(ref, ours):
    assert type(ref) is type(ours)
    if isinstance(ref, tuple):
        assert len(ref) == len(ours)
        for r, o in zip(ref, ours):
            _compare(r, o)
    else:
        assert ref.shape == ours.shape and ref.dtype == ours.dtype
        np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_equal_to_torch(name):
    ref = _tree(CASES[name](torch.autograd.functional, torch.tensor))
    ours = _tree(CASES[name](tg.autograd.functional, tg.tensor))
    _compare(ref, ours)


def test_create_graph_results_can_be_differentiated_again():
    """A gradient penalty on a Hessian-vector product and on a Jacobian (create_graph=True)."""
    outs = []
    for lib in (torch, tg):
        x = lib.tensor(A, requires_grad=True)
        w = lib.tensor(B, requires_grad=True)
        _, (hx, hw) = lib.autograd.functional.hvp(f_two_in, (x, w), (lib.tensor(V3), lib.tensor(V23)),
                                                  create_graph=True)
        jac = lib.autograd.functional.jacobian(f_one, x, create_graph=True)
        assert hx.requires_grad and jac.requires_grad
        gx, gw = lib.autograd.grad((hx * hx).sum() + (hw * hw).sum() + (jac * jac).sum(), (x, w))
        outs.append((gx.numpy(), gw.numpy()))
    for r, o in zip(*outs):
        np.testing.assert_allclose(o, r, rtol=1e-10)


def test_without_create_graph_results_are_detached():
    for lib in (torch, tg):
        x = lib.tensor(A, requires_grad=True)
        out, v = lib.autograd.functional.vjp(f_one, x, lib.tensor(V3))
        assert not out.requires_grad and not v.requires_grad


@pytest.mark.parametrize("call, message", [
    (lambda F, t: F.jacobian(lambda x, w: (x * 2, w * 0 + 1), (t(A), t(B)), strict=True),
     "Output 0 of the user-provided function is independent of input 1"),
    (lambda F, t: F.vjp(lambda x, w: x * 2, (t(A), t(B)), t(V3), strict=True),
     "The output of the user-provided function is independent of input 1"),
    (lambda F, t: F.hessian(lambda x: (x * 2).sum(), t(A), strict=True),
     "the jacobian of the user-provided function with respect to input 0 is independent of the input"),
    (lambda F, t: F.hvp(f_scalar, t(A), t(V23)), "v has invalid size: should be"),
    (lambda F, t: F.vjp(f_one, t(A)), "The vector v can only be None if the user-provided function returns"),
    (lambda F, t: F.hessian(f_one, t(A)), "should contain a single element"),
    (lambda F, t: F.jacobian(f_one, t(A), strict=True, vectorize=True),
     "`strict=True` and `vectorized=True` are not supported together"),
])
def test_errors_as_torch(call, message):
    for lib in (torch, tg):
        with pytest.raises(RuntimeError) as info:
            call(lib.autograd.functional, lib.tensor)
        assert message in str(info.value), (lib.__name__, str(info.value))


def test_non_tensor_inputs_are_a_type_error():
    for lib in (torch, tg):
        with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
            lib.autograd.functional.jacobian(f_one, (lib.tensor(A), 3.0))
