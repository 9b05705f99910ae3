"""The fused (flat-buffer) Adam/AdamW step: the same numbers as the per-parameter step, bit for
bit, and as ``torch.optim``; when it is taken, when it is not, and what it leaves visible.

The per-parameter comparisons with torch over random problems live in ``test_optim.py`` (they
take the fused path whenever every parameter has a gradient); here each problem runs three
ways -- ``fused=False``, the default, and torch -- and the first two must agree exactly.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

import tinygrad_tx as tg
from tinygrad_tx import nn, optim
from tinygrad_tx.optim.flat import FlatParameters
from tinygrad_tx.testing.strategies import seeds, shapes
from test_optim import make_data
from reference.testing import DEVICE

OURS = {"Adam": optim.Adam, "AdamW": optim.AdamW}
THEIRS = {"Adam": torch.optim.Adam, "AdamW": torch.optim.AdamW}


def rel_err(a, b):
    return float(np.abs(np.asarray(a, np.float64) - b).max() / max(np.abs(b).max(), 1e-300))


@st.composite
def problems(draw):
    name = draw(st.sampled_from(sorted(OURS)))
    kw = dict(lr=draw(st.floats(1e-4, 0.3)), betas=(draw(st.floats(0.0, 0.99)), draw(st.floats(0.5, 0.9999))),
              eps=10.0 ** draw(st.floats(-10, -3)), weight_decay=draw(st.sampled_from([0.0, 0.01, 0.3])),
              amsgrad=draw(st.booleans()), maximize=draw(st.booleans()))
    if name == "Adam":
        kw["decoupled_weight_decay"] = draw(st.booleans())
    return dict(name=name, kwargs=kw, shapes=draw(st.lists(shapes(0, 3, max_side=4), min_size=1, max_size=5)),
                split=draw(st.booleans()), n_steps=draw(st.integers(1, 12)),
                none_prob=draw(st.sampled_from([0.0, 0.0, 0.3])), seed=draw(seeds))


def _groups(pb, params):
    """One group, or two with different lr and weight decay (the second takes the defaults)."""
    if not pb["split"] or len(params) < 2:
        return params
    k = len(params) // 2
    return [{"params": params[:k], "lr": 0.05, "weight_decay": 0.1}, {"params": params[k:]}]


def _run(pb, dtype, fused):
    init, grads = make_data(pb, dtype)
    params = [tg.Tensor(a.copy(), requires_grad=True) for a in init]
    opt = OURS[pb["name"]](_groups(pb, params), fused=fused, **pb["kwargs"])
    took_fused = 0
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = None if g is None else tg.Tensor(g.copy())
        opt.step()
        took_fused += bool(opt._flat_states) and all(
            np.shares_memory(p._data, f.params.data) for f in opt._flat_states.values() for p in f.params.params)
    return params, opt, took_fused


def _run_torch(pb, dtype):
    init, grads = make_data(pb, dtype)
    params = [torch.tensor(a, requires_grad=True, device=DEVICE) for a in init]
    opt = THEIRS[pb["name"]](_groups(pb, params), **pb["kwargs"])
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = None if g is None else torch.tensor(g, device=DEVICE)
        opt.step()
    return params, opt


@given(problems())
def test_fused_step_is_bit_identical_to_per_parameter_and_matches_torch(pb):
    for dtype in (np.float64, np.float32):
        fused, fopt, n_fused = _run(pb, dtype, None)
        plain, popt, n_plain = _run(pb, dtype, False)
        assert n_plain == 0 and not popt._flat_states
        if pb["none_prob"] == 0:
            assert n_fused == pb["n_steps"]        # every step took the flat path
        for f, p in zip(fused, plain):
            assert f._data.dtype == dtype
            np.testing.assert_array_equal(f._data, p._data)
        fsd, psd = fopt.state_dict(), popt.state_dict()
        assert sorted(fsd["state"]) == sorted(psd["state"])
        for i, s in psd["state"].items():
            assert sorted(fsd["state"][i]) == sorted(s)
            for k, v in s.items():
                assert fsd["state"][i][k].dtype == v.dtype and fsd["state"][i][k].shape == v.shape
                np.testing.assert_array_equal(fsd["state"][i][k], v)
    theirs, topt = _run_torch(pb, np.float64)
    fused, fopt, _ = _run(pb, np.float64, None)
    for f, t in zip(fused, theirs):
        assert rel_err(f._data, t.detach().numpy()) <= 1e-12
    tsd = topt.state_dict()
    assert sorted(fopt.state_dict()["state"]) == sorted(tsd["state"])   # the same parameters have state
    for i, s in tsd["state"].items():
        for k, v in s.items():
            assert rel_err(fopt.state_dict()["state"][i][k], v.numpy()) <= 1e-12, (i, k)


@pytest.mark.parametrize("name,kwargs", [("AdamW", dict(lr=0.05, weight_decay=0.1, amsgrad=True)),
                                         ("Adam", dict(lr=0.02, weight_decay=0.2, maximize=True)),
                                         ("Adam", dict(lr=0.02, betas=(0.3, 0.9)))])
def test_chunked_flat_update_is_bit_identical(monkeypatch, name, kwargs):
    """The fused step walks the flat buffers in chunks; with a chunk of 5 elements every
    parameter is cut mid-way, and the result still equals the per-parameter step exactly."""
    from tinygrad_tx.optim import adam
    monkeypatch.setattr(adam, "_CHUNK", 5)
    pb = dict(name=name, kwargs=kwargs, shapes=[(3, 4), (7,), (), (2, 3, 2)], split=True, n_steps=6,
              none_prob=0.0, seed=9)
    for dtype in (np.float32, np.float64):
        fused, _, n_fused = _run(pb, dtype, True)
        plain, _, _ = _run(pb, dtype, False)
        assert n_fused == pb["n_steps"]
        for f, p in zip(fused, plain):
            np.testing.assert_array_equal(f._data, p._data)


def _mlp_pair():
    tg.manual_seed(0)
    ours = nn.Sequential(nn.Linear(5, 8), nn.GELU(), nn.Linear(8, 3)).double()
    theirs = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.GELU(), torch.nn.Linear(8, 3)).to(DEVICE).double()
    with torch.no_grad():
        for (_, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
            q.copy_(torch.from_numpy(p._data).to(DEVICE))
    return ours, theirs


def test_training_with_engine_gradients_matches_torch():
    """Gradients from backward (fresh arrays every step, as torch's) gathered by the fused step;
    10 AdamW steps of an MLP with two parameter groups (different lr, weight decay on weights
    only) equal torch's, and gradients kept from an earlier step are never overwritten."""
    ours, theirs = _mlp_pair()
    groups = lambda m: [{"params": [p for n, p in m.named_parameters() if n.endswith("weight")], "lr": 3e-2},  # noqa: E731
                        {"params": [p for n, p in m.named_parameters() if n.endswith("bias")], "weight_decay": 0.0}]
    opt = optim.AdamW(groups(ours), lr=1e-2, weight_decay=0.1, amsgrad=True)
    topt = torch.optim.AdamW(groups(theirs), lr=1e-2, weight_decay=0.1, amsgrad=True)
    rng = np.random.default_rng(1)
    kept = None
    for step in range(10):
        x, g = rng.standard_normal((7, 5)), rng.standard_normal((7, 3))
        opt.zero_grad()
        ours(tg.Tensor(x)).backward(g)
        if step == 3:
            kept = [(p.grad, p.grad.numpy().copy()) for p in ours.parameters()]
        opt.step()
        topt.zero_grad()
        theirs(torch.tensor(x, device=DEVICE)).backward(torch.tensor(g, device=DEVICE))
        topt.step()
    assert len(opt._flat_states) == 2
    for (_, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert rel_err(p._data, q.detach().numpy()) <= 1e-12
    for grad, copy_then in kept:
        np.testing.assert_array_equal(grad, copy_then)


def test_shared_arrays_are_not_moved():
    """A parameter array that something else also refers to (another Tensor, a view, a variable)
    stays where it is: the default falls back to the per-parameter step, fused=True refuses."""
    base = np.arange(6.0).reshape(2, 3).copy()
    p = tg.from_numpy(base).requires_grad_()   # shares base, as torch.from_numpy
    q = tg.Tensor(np.ones(3), requires_grad=True)
    view = base[0]
    opt = optim.AdamW([p, q], lr=0.1)
    p.grad, q.grad = tg.Tensor(np.ones((2, 3))), tg.Tensor(np.ones(3))
    opt.step()
    assert p._data is base and not opt._flat_states
    np.testing.assert_array_equal(view, base[0])
    assert not np.array_equal(base, np.arange(6.0).reshape(2, 3))
    with pytest.raises(ValueError, match="referenced elsewhere"):
        optim.Adam([p, q], lr=0.1, fused=True).step()
    other = np.zeros((4, 3))
    r = tg.from_numpy(other[:2]).requires_grad_()   # a view into a user's array
    r.grad = tg.Tensor(np.ones((2, 3)))
    with pytest.raises(ValueError, match="view of another array"):
        optim.Adam([r], fused=True).step()
    with pytest.raises(ValueError, match="fused must be"):
        optim.Adam([q], fused="yes")


def test_flat_state_survives_state_dict_round_trip_and_rebinding():
    """state_dict() of a fused optimizer is torch's per-parameter layout; loading it (or rebinding
    a parameter's array) rebuilds the flat layout from the current values, and the run
    continues exactly as an uninterrupted one."""
    pb = dict(name="AdamW", kwargs=dict(lr=0.05, amsgrad=True, weight_decay=0.1), shapes=[(3, 2), (2,), ()],
              split=True, n_steps=8, none_prob=0.0, seed=4)
    ref, _, _ = _run(pb, np.float64, None)
    init, grads = make_data(pb, np.float64)
    params = [tg.Tensor(a.copy(), requires_grad=True) for a in init]
    opt = optim.AdamW(_groups(pb, params), **pb["kwargs"])
    for i, step_grads in enumerate(grads):
        if i == 3:
            saved = copy.deepcopy(opt.state_dict())
            opt = optim.AdamW(_groups(pb, params), **pb["kwargs"])
            opt.load_state_dict(saved)
        if i == 5:
            params[0]._data = params[0]._data.copy()
        for p, g in zip(params, step_grads):
            p.grad = tg.Tensor(g.copy())
        opt.step()
        assert opt._flat_states and all(f.current(opt.state) for f in opt._flat_states.values())
    for p, r in zip(params, ref):
        np.testing.assert_array_equal(p._data, r._data)


def test_partial_gradients_step_per_parameter_like_torch():
    ps = [tg.Tensor(np.ones(3), requires_grad=True), tg.Tensor(np.ones(2), requires_grad=True)]
    opt = optim.Adam(ps, lr=0.1)
    ps[0].grad, ps[1].grad = tg.Tensor(np.ones(3)), tg.Tensor(np.ones(2))
    opt.step()
    assert float(opt.state[ps[0]]["step"]) == float(opt.state[ps[1]]["step"]) == 1.0
    ps[1].grad = None                     # torch skips it: its step count stays behind
    opt.step()
    ps[1].grad = tg.Tensor(np.ones(2))
    opt.step()                            # counts 3 and 2: per-parameter bias corrections
    assert [float(opt.state[p]["step"]) for p in ps] == [3.0, 2.0]
    tps = [torch.ones(3, dtype=torch.float64, requires_grad=True, device=DEVICE), torch.ones(2, dtype=torch.float64, requires_grad=True, device=DEVICE)]
    topt = torch.optim.Adam(tps, lr=0.1)
    for grads in ([np.ones(3), np.ones(2)], [np.ones(3), None], [np.ones(3), np.ones(2)]):
        for p, g in zip(tps, grads):
            p.grad = None if g is None else torch.tensor(g, device=DEVICE)
        topt.step()
    for p, t in zip(ps, tps):
        assert rel_err(p._data, t.detach().numpy()) <= 1e-15


def test_flat_parameters_movable_reasons():
    a = tg.Tensor(np.ones(3, np.float32), requires_grad=True)
    assert FlatParameters.movable([a]) is None
    held = a._data
    assert "referenced elsewhere" in FlatParameters.movable([a])
    del held
    assert "floating dtype" in FlatParameters.movable([a, tg.Tensor(np.ones(2), requires_grad=True)])
    flat = FlatParameters([a])
    flat.release()                         # a view of a buffer made by FlatParameters may move again
    assert FlatParameters.movable([a]) is None
