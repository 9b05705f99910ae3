"""Issue 35's in-place methods and deprecated overloads, against torch 2.13.

* Every in-place method of ``torch.Tensor`` (a public name ending in ``_``, from torch's own
  ``dir()``) exists here or is in :data:`EXCLUDED` with the reason; the new ones are checked
  against torch (values, version counters, gradients with a random cotangent).
* The scalar-first overloads torch still accepts with a warning (``p.data.add_(-lr, grad)``) give
  torch's result and torch's warning text.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import tinygrad_tx as tg
from reference.testing import DEVICE, check_parity

# torch's in-place methods this engine does not have, and why (every other one exists)
EXCLUDED = {
    # the out-of-place op is missing altogether here: its in-place twin comes with it
    "digamma_": "no digamma op (special functions: a separate op, with its derivation)",
    "lgamma_": "no lgamma op (special functions)",
    "polygamma_": "no polygamma op (special functions)",
    "mvlgamma_": "no mvlgamma op (special functions)",
    "i0_": "no i0 op (special functions)",
    "igamma_": "no igamma op (special functions)",
    "igammac_": "no igammac op (special functions)",
    "heaviside_": "no heaviside op (torch gives it no derivative)",
    "nextafter_": "no nextafter op (torch gives it no derivative)",
    "bitwise_left_shift_": "no bitwise shift ops",
    "bitwise_right_shift_": "no bitwise shift ops",
    "renorm_": "no renorm op",
    "index_reduce_": "no index_reduce op",
    "put_": "no put op (flat-index writes)",
    "as_strided_": "no as_strided op",
    # storage models this engine does not have
    "set_": "re-points a tensor at another storage (torch's Storage objects): the memory model here is NumPy arrays",
    "resize_as_sparse_": "sparse layouts do not exist here",
    "sparse_resize_": "sparse layouts do not exist here",
    "sparse_resize_and_clear_": "sparse layouts do not exist here",
}


def _torch_in_place_names():
    return sorted(n for n in dir(torch.Tensor) if n.endswith("_") and not n.startswith("_"))


def test_every_torch_in_place_method_exists_or_is_excluded_with_a_reason():
    names = _torch_in_place_names()
    assert len(names) >= 150
    missing = [n for n in names if not hasattr(tg.Tensor, n)]
    unexplained = [n for n in missing if n not in EXCLUDED]
    assert not unexplained, f"torch's in-place methods missing here without a reason: {unexplained}"
    stale = [n for n in EXCLUDED if n not in missing]
    assert not stale, f"excluded but present (drop them from EXCLUDED): {stale}"
    assert len(missing) <= 19


# ---------------------------------------------------------------------------- value in-place twins

_RNG = np.random.default_rng(11)
_UNARY = {   # name -> input values torch's op is defined on
    "arccos_": lambda s: np.tanh(_RNG.standard_normal(s)), "arcsin_": lambda s: np.tanh(_RNG.standard_normal(s)),
    "arctan_": lambda s: _RNG.standard_normal(s), "arcsinh_": lambda s: _RNG.standard_normal(s),
    "arccosh_": lambda s: 1.5 + np.abs(_RNG.standard_normal(s)), "arctanh_": lambda s: 0.9 * np.tanh(_RNG.standard_normal(s)),
    "absolute_": lambda s: _RNG.standard_normal(s) + 0.1, "exp2_": lambda s: _RNG.standard_normal(s),
    "erfc_": lambda s: _RNG.standard_normal(s), "erfinv_": lambda s: 0.9 * np.tanh(_RNG.standard_normal(s)),
    "sinc_": lambda s: _RNG.standard_normal(s) + 0.05, "sgn_": lambda s: _RNG.standard_normal(s),
    "fix_": lambda s: 3 * _RNG.standard_normal(s), "deg2rad_": lambda s: _RNG.standard_normal(s),
    "rad2deg_": lambda s: _RNG.standard_normal(s), "logit_": lambda s: 0.1 + 0.8 * _RNG.random(s),
    "conj_physical_": lambda s: _RNG.standard_normal(s),
}


_NO_TORCH_IN_PLACE_DERIVATIVE = {"arccosh_", "arcsinh_", "arctanh_"}


@pytest.mark.parametrize("name", sorted(_UNARY))
def test_new_unary_in_place_twins_match_torch(name):
    a = _UNARY[name]((3, 4))
    # the in-place op on a non-leaf: values and the gradient reaching the leaf through it (times x,
    # so that sgn_/fix_, whose own gradient is zero, give a non-trivial one). torch 2.13 has no
    # derivative for the in-place acosh_/asinh_/atanh_ ("not implemented"): there the gradient is
    # checked against its out-of-place op, which this engine's in-place twin differentiates as
    theirs_name = name[:-1] if name in _NO_TORCH_IN_PLACE_DERIVATIVE else name
    check_parity(lambda x: getattr(x * 1, name)() * x, lambda x: getattr(x * 1, theirs_name)() * x, a)
    x, t = tg.tensor(a), torch.tensor(a, device=DEVICE)
    ours, theirs = getattr(x, name)(), getattr(t, name)()
    assert ours is x and theirs is t and x._version == t._version == 1
    np.testing.assert_allclose(x.numpy(), t.cpu().numpy(), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("name, args", [
    ("cumsum_", (1,)), ("cumprod_", (0,)), ("greater_", (0.1,)), ("less_equal_", (0.0,)), ("not_equal_", (0.0,)),
    ("greater_equal_", (0.0,)), ("less_", (0.2,)),
])
def test_new_in_place_twins_with_arguments_match_torch(name, args):
    a = _RNG.standard_normal((3, 4))
    check_parity(lambda x: getattr(x * 1, name)(*args) * x, lambda x: getattr(x * 1, name)(*args) * x, a)


def test_addcmul_addcdiv_addr_addbmm_and_their_in_place_forms():
    a, b, c = (_RNG.standard_normal((3, 4)) for _ in range(3))
    c = np.abs(c) + 0.5
    check_parity(lambda x, y, z: tg.addcmul(x, y, z, value=0.3), lambda x, y, z: torch.addcmul(x, y, z, value=0.3), a, b, c)
    check_parity(lambda x, y, z: x.addcdiv(y, z, value=-2), lambda x, y, z: x.addcdiv(y, z, value=-2), a, b, c)
    check_parity(lambda x, y, z: (x * 1).addcmul_(y, z), lambda x, y, z: (x * 1).addcmul_(y, z), a, b, c)
    check_parity(lambda x, y, z: (x * 1).addcdiv_(y, z, value=0.5), lambda x, y, z: (x * 1).addcdiv_(y, z, value=0.5),
                 a, b, c)
    check_parity(lambda x, y, z: x.addcmul(y, z, value=2), lambda x, y, z: x.addcmul(y, z, value=2), a,
                 b[0], c[:, :1], dtype=np.float32)
    v1, v2 = _RNG.standard_normal(3), _RNG.standard_normal(4)
    check_parity(lambda m, p, q: tg.addr(m, p, q, beta=0.5, alpha=2), lambda m, p, q: torch.addr(m, p, q, beta=0.5, alpha=2),
                 a, v1, v2)
    check_parity(lambda m, p, q: (m * 1).addr_(p, q), lambda m, p, q: (m * 1).addr_(p, q), a, v1, v2)
    b1, b2 = _RNG.standard_normal((2, 3, 5)), _RNG.standard_normal((2, 5, 4))
    check_parity(lambda m, p, q: m.addbmm(p, q, alpha=0.7), lambda m, p, q: m.addbmm(p, q, alpha=0.7), a, b1, b2)
    for lib in (tg, torch):
        ints = lib.tensor([1, 2]) if lib is tg else torch.tensor([1, 2], device=DEVICE)
        with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
            ints.addcdiv(ints, ints)


def test_beta_zero_ignores_nan_input_as_torch():
    m = np.full((2, 3), np.nan)
    p, q, v = _RNG.standard_normal((2, 4)), _RNG.standard_normal((4, 3)), _RNG.standard_normal(3)
    check_parity(lambda m, p, q: tg.addmm(m, p, q, beta=0), lambda m, p, q: torch.addmm(m, p, q, beta=0), m, p, q,
                 allow_zero_grad=(0,))
    check_parity(lambda m, p, q: tg.addr(m, p, q, beta=0), lambda m, p, q: torch.addr(m, p, q, beta=0), m,
                 p[:, 0], v, allow_zero_grad=(0,))


def test_integer_ops_gcd_lcm_ldexp():
    a, b = np.array([4, -6, 0, 9, 12]), np.array([6, 4, 0, -3, 0])
    for name in ("gcd", "lcm"):
        ours, theirs = getattr(tg, name)(tg.tensor(a), tg.tensor(b)), getattr(torch, name)(
            torch.tensor(a, device=DEVICE), torch.tensor(b, device=DEVICE))
        np.testing.assert_array_equal(ours.numpy(), theirs.cpu().numpy())
        x, t = tg.tensor(a), torch.tensor(a, device=DEVICE)
        getattr(x, name + "_")(tg.tensor(b))
        getattr(t, name + "_")(torch.tensor(b, device=DEVICE))
        np.testing.assert_array_equal(x.numpy(), t.cpu().numpy())
        with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for \'Float\''):
            getattr(tg, name)(tg.tensor([1.0]), tg.tensor([2.0]))
    ours = tg.ldexp(tg.tensor([3, 1]), tg.tensor([2, -1]))
    theirs = torch.ldexp(torch.tensor([3, 1], device=DEVICE), torch.tensor([2, -1], device=DEVICE))
    assert ours.dtype == tg.float32 and theirs.dtype == torch.float32
    np.testing.assert_array_equal(ours.numpy(), theirs.cpu().numpy())
    check_parity(lambda x, e: tg.ldexp(x, e), lambda x, e: torch.ldexp(x, e), _RNG.standard_normal(4),
                 _RNG.standard_normal(4))


@pytest.mark.cpu_only(reason="fill_diagonal_, apply_, map_ and map2_ are CPU methods in torch")
def test_fill_diagonal_apply_map_as_torch():
    for shape, wrap in (((3, 3), False), ((7, 3), True), ((7, 3), False), ((3, 5), False), ((3, 3, 3), False)):
        a = _RNG.standard_normal(shape)
        x, t = tg.tensor(a), torch.tensor(a, device=DEVICE).cpu()
        x.fill_diagonal_(-2.5, wrap=wrap)
        t.fill_diagonal_(-2.5, wrap=wrap)
        np.testing.assert_array_equal(x.numpy(), t.numpy())
    check_parity(lambda x: (x * 1).fill_diagonal_(0.5) * x, lambda x: (x * 1).fill_diagonal_(0.5) * x,
                 _RNG.standard_normal((4, 4)))
    a = _RNG.standard_normal(5)
    x, t = tg.tensor(a), torch.tensor(a, device=DEVICE).cpu()
    x.apply_(lambda v: v * v + 1)
    t.apply_(lambda v: v * v + 1)
    np.testing.assert_allclose(x.numpy(), t.numpy(), rtol=1e-15)
    x.map_(tg.tensor(a), lambda u, v: u - 3 * v)
    t.map_(torch.tensor(a, device=DEVICE).cpu(), lambda u, v: u - 3 * v)
    np.testing.assert_allclose(x.numpy(), t.numpy(), rtol=1e-15)
    x.map2_(tg.tensor(a), tg.tensor(a[:1]), lambda u, v, w: u + v * w)
    t.map2_(torch.tensor(a, device=DEVICE).cpu(), torch.tensor(a[:1], device=DEVICE).cpu(), lambda u, v, w: u + v * w)
    np.testing.assert_allclose(x.numpy(), t.numpy(), rtol=1e-15)
    m = tg.zeros(2, 3)
    assert m.resize_as_(tg.zeros(3, 2)).shape == (3, 2)


# ---------------------------------------------------------------------------- in-place view ops

_VIEW_OPS = [("unsqueeze_", (1,)), ("unsqueeze_", (-1,)), ("squeeze_", ()), ("squeeze_", (1,)), ("transpose_", (0, 2)),
             ("swapdims_", (2, 1)), ("swapaxes_", (0, -1)), ("t_", ())]


@pytest.mark.parametrize("name, args", _VIEW_OPS)
def test_in_place_view_ops_match_torch(name, args):
    shape = (3, 4) if name == "t_" else (2, 1, 3)
    a = _RNG.standard_normal(shape)
    # history: y takes the op's node; the gradient reaching x is the op's backward (random cotangent)
    check_parity(lambda x: getattr(x * 2, name)(*args), lambda x: getattr(x * 2, name)(*args), a)
    x, t = tg.tensor(a), torch.tensor(a, device=DEVICE)
    vx, vt = x[0], t[0]                      # a view taken before
    assert getattr(x, name)(*args) is x and getattr(t, name)(*args) is t
    assert x.shape == tuple(t.shape) and x._version == t._version == 1
    np.testing.assert_array_equal(x.numpy(), t.cpu().numpy())
    x.mul_(2)                                # the same memory: the earlier view sees it
    t.mul_(2)
    np.testing.assert_array_equal(vx.numpy(), vt.cpu().numpy())
    if name != "t_":
        assert x.stride() == t.stride()


@pytest.mark.parametrize("name, args", _VIEW_OPS[:3])
def test_in_place_view_op_refusals_and_no_grad(name, args):
    for lib in (tg, torch):
        w = lib.ones(2, 1, 3, requires_grad=True) if lib is tg else torch.ones(2, 1, 3, requires_grad=True, device=DEVICE)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
            getattr(w, name)(*args)
        with lib.no_grad():
            getattr(w, name)(*args)
        assert w._version == 1 and w.requires_grad
    x = tg.ones(2, 3)
    with pytest.raises(IndexError):
        x.unsqueeze_(5)
    with pytest.raises(IndexError):
        torch.ones(2, 3, device=DEVICE).unsqueeze_(5)


def test_view_of_view_in_place_reshape_keeps_writing_through():
    """``v = b.view(6); v.unsqueeze_(0)``: v stays a view of b (torch's ``_base``), writes reach b."""
    for lib in (tg, torch):
        base = (lib.arange(6.0) if lib is tg else torch.arange(6.0, device=DEVICE)).reshape(2, 3)
        v = base.reshape(6)
        v.unsqueeze_(0)
        v[0, 1] = 10.0
        assert tuple(v.shape) == (1, 6) and float(base[0, 1]) == 10.0
    a = _RNG.standard_normal((2, 3))
    check_parity(lambda x: _write_through_view(x), lambda x: _write_through_view(x), a)


def _write_through_view(x):
    y = x * 1
    v = y.view(6)
    v.unsqueeze_(0)
    v.mul_(3)           # through the reshaped view: y's history becomes CopySlices of it
    return y * x


# ---------------------------------------------------------------------------- deprecated overloads

def _torch_warning(fn):
    """torch's warning text for ``fn()`` (torch warns once per process unless warn_always)."""
    torch.set_warn_always(True)
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = fn()
    finally:
        torch.set_warn_always(False)
    return out, [str(m.message).split(" (Triggered internally")[0] for m in w]


def _ours_warning(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(m.message) for m in w]


_DEPRECATED = [
    "x.add(0.5, y)", "x.add_(-0.5, y)", "lib.add(x, 2.0, y)", "x.sub(3, y)", "x.sub_(0.25, y)", "lib.sub(x, 2.0, y)",
    "x.addcmul(0.5, y, z)", "x.addcmul_(0.5, y, z)", "lib.addcmul(x, 0.5, y, z)", "x.addcdiv(0.5, y, z)",
    "x.addcdiv_(-1.5, y, z)", "lib.addcdiv(x, 0.5, y, z)", "M.addmm(0.5, M, M)", "M.addmm(0.5, 0.3, M, M)",
    "M.addmm_(0.5, M, M)", "x.addmv(0.5, M, x)", "M.addr(0.5, x, y)", "M.addr_(0.5, 2.0, x, y)",
    "B.baddbmm(0.5, B, B)", "M.addbmm(2.0, B, B)",
]


@pytest.mark.parametrize("expr", _DEPRECATED)
def test_deprecated_overloads_give_torchs_result_and_warning(expr):
    rng = np.random.default_rng(len(expr))
    arrays = {k: rng.standard_normal(s) for k, s in (("x", 3), ("y", 3), ("z", 3), ("M", (3, 3)), ("B", (2, 3, 3)))}
    arrays["z"] = np.abs(arrays["z"]) + 0.5
    env_t = {k: torch.tensor(v, device=DEVICE) for k, v in arrays.items()}
    env_o = {k: tg.tensor(v) for k, v in arrays.items()}
    theirs, t_msgs = _torch_warning(lambda: eval(expr, {"lib": torch, **env_t}))
    ours, o_msgs = _ours_warning(lambda: eval(expr, {"lib": tg, **env_o}))
    assert t_msgs and o_msgs == t_msgs
    np.testing.assert_allclose(ours.numpy(), theirs.cpu().numpy(), rtol=1e-12)


def test_deprecated_overload_gradient_and_sgd_step():
    a, b = _RNG.standard_normal(4), _RNG.standard_normal(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_parity(lambda x, y: x.add(-0.3, y), lambda x, y: x.add(-0.3, y), a, b)
        check_parity(lambda x, y: tg.sub(x, 2, y), lambda x, y: torch.sub(x, 2, y), a, b)
        check_parity(lambda x, y: x.addcmul(0.5, y, x), lambda x, y: x.addcmul(0.5, y, x), a, b)
        # an old tutorial's SGD step, p.data.add_(-lr, p.grad.data), equals torch's
        steps = []
        for lib in (tg, torch):
            p = tg.tensor(a, requires_grad=True) if lib is tg else torch.tensor(a, requires_grad=True, device=DEVICE)
            for _ in range(3):
                loss = (p * p * (tg.tensor(b) if lib is tg else torch.tensor(b, device=DEVICE))).sum()
                loss.backward()
                p.data.add_(-0.1, p.grad.data)
                p.grad.data.zero_()
            steps.append(p.detach().cpu().numpy() if lib is torch else p.detach().numpy())
        np.testing.assert_allclose(steps[0], steps[1], rtol=1e-12)


@pytest.mark.parametrize("expr", ["x.add(2, y, alpha=3)", "x.add(y, 2.0)", "x.add_(y, 2.0)", "x.sub(x, y)",
                                  "x.addcmul(y, z, 0.5)", "lib.add(x, y, 1, 2)"])
def test_not_an_overload_raises_type_error_as_torch(expr):
    x, y, z = (torch.ones(3, device=DEVICE) for _ in range(3))
    with pytest.raises(TypeError):
        eval(expr, {"lib": torch, "x": x, "y": y, "z": z})
    x, y, z = (tg.ones(3) for _ in range(3))
    name = expr.split("(")[0].split(".")[-1]
    with pytest.raises(TypeError, match=rf"^{name}\(\)"):
        eval(expr, {"lib": tg, "x": x, "y": y, "z": z})
