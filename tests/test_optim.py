"""Optimizers, schedules and gradient clipping against ``torch.optim`` / ``torch.nn.utils``.

The optimizer property tests start ours and torch's from identical parameters,
feed both the same random gradient at every step (``p.grad = g``; a gradient
may be ``None`` at a step, which both skip) and compare after N steps:

* float64: every parameter and every state array within 1e-12 of torch's, relative to the
  largest value it took along the way (``trajectory_err``).
* float32: a torch float64 run from the same (float32) parameters and
  gradients is the oracle. Our float32 error against it must not exceed
  ``F32_RATIO`` (4) times torch-float32's own error plus ``n_steps`` times
  ``F32_FLOOR`` (8 float32 ulps): the parity harness's rule, with its floor
  growing by one allowance per step because each step adds its own rounding
  (measured: our mean error equals torch's; single runs where torch is
  luckily exact exceed 4x torch by up to ~5 ulps). Where that fails, the kit's
  second yardstick: the oracle's conditioning (``update_conditioning``), since an
  update that cancels to near zero amplifies one ulp of its inputs.
"""
from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

import tinygrad_tx as tg
from tinygrad_tx import optim
from reference.testing import DEVICE, F32_FLOOR, F32_RATIO, _conditioning, rel_err
from tinygrad_tx.testing.compare import check_f32
from tinygrad_tx.testing.strategies import seeds, shapes

F64_RTOL = 1e-12

OURS = {"SGD": optim.SGD, "Adam": optim.Adam, "AdamW": optim.AdamW}
THEIRS = {"SGD": torch.optim.SGD, "Adam": torch.optim.Adam, "AdamW": torch.optim.AdamW}

# ----------------------------------------------------------------------------- strategies

maybe_zero = st.one_of(st.just(0.0), st.floats(0.0, 0.5))


@st.composite
def sgd_kwargs(draw):
    kw = dict(lr=draw(st.floats(1e-3, 1.0)), weight_decay=draw(maybe_zero), maximize=draw(st.booleans()))
    if draw(st.booleans()):
        kw.update(momentum=draw(st.floats(0.05, 0.99)), nesterov=True)  # nesterov: dampening must be 0
    else:
        kw.update(momentum=draw(st.one_of(st.just(0.0), st.floats(0.0, 0.99))),
                  dampening=draw(st.one_of(st.just(0.0), st.floats(0.0, 0.9))))
    return kw


@st.composite
def adam_kwargs(draw, adamw=False):
    kw = dict(lr=draw(st.floats(1e-4, 0.5)),
              betas=(draw(st.floats(0.0, 0.99)), draw(st.floats(0.5, 0.9999))),
              eps=10.0 ** draw(st.floats(-10, -2)),
              weight_decay=draw(maybe_zero), amsgrad=draw(st.booleans()), maximize=draw(st.booleans()))
    if not adamw:
        kw["decoupled_weight_decay"] = draw(st.booleans())
    return kw


KWARGS = {"SGD": sgd_kwargs(), "Adam": adam_kwargs(), "AdamW": adam_kwargs(adamw=True)}


@st.composite
def problems(draw, name):
    """An optimizer configuration, parameter shapes, grouping, step count and data seed."""
    return dict(name=name, kwargs=draw(KWARGS[name]),
                shapes=draw(st.lists(shapes(0, 3, max_side=4), min_size=1, max_size=4)),
                split=draw(st.booleans()), group_lr=draw(st.floats(1e-3, 0.5)),
                group_wd=draw(maybe_zero), n_steps=draw(st.integers(1, 20)),
                none_prob=draw(st.sampled_from([0.0, 0.25])), seed=draw(seeds))


def make_data(pb, dtype):
    """Initial parameters and a list (per step) of gradients (None = no gradient this step)."""
    rng = np.random.default_rng(pb["seed"])
    init = [rng.standard_normal(s).astype(dtype) for s in pb["shapes"]]
    grads = [[None if rng.random() < pb["none_prob"] else rng.standard_normal(s).astype(dtype)
              for s in pb["shapes"]] for _ in range(pb["n_steps"])]
    return init, grads


def groups_of(pb, params):
    """One group with the defaults, or two: the first half with its own lr and weight decay."""
    if not pb["split"] or len(params) < 2:
        return params
    k = len(params) // 2
    return [{"params": params[:k], "lr": pb["group_lr"], "weight_decay": pb["group_wd"]},
            {"params": params[k:]}]


def run_ours(pb, init, grads, dtype):
    params = [tg.Tensor(a.astype(dtype), requires_grad=True) for a in init]
    opt = OURS[pb["name"]](groups_of(pb, params), **pb["kwargs"])
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = None if g is None else tg.Tensor(g.astype(dtype))
        opt.step()
    return [p._data for p in params], opt


def run_torch(pb, init, grads, dtype, scales=None):
    """torch's parameters after the steps, and the optimizer. ``scales`` (a dict): filled with
    the largest |value| each parameter (key i) and each of its state arrays (key (i, name)) takes
    along the way."""
    params = [torch.tensor(a.astype(dtype), requires_grad=True, device=DEVICE) for a in init]
    opt = THEIRS[pb["name"]](groups_of(pb, params), **pb["kwargs"])
    for step_grads in [None] + list(grads):
        if step_grads is not None:
            for p, g in zip(params, step_grads):
                p.grad = None if g is None else torch.tensor(g.astype(dtype), device=DEVICE)
            opt.step()
        if scales is not None:
            for i, p in enumerate(params):
                scales[i] = max(scales.get(i, 0.0), float(p.detach().abs().max()) if p.numel() else 0.0)
                for k, v in opt.state.get(p, {}).items():   # and each state array's (exp_avg, ...)
                    if isinstance(v, torch.Tensor) and v.is_floating_point() and k != "step" and v.numel():
                        scales[(i, k)] = max(scales.get((i, k), 0.0), float(v.abs().max()))
    return [p.detach().cpu().numpy() for p in params], opt


def trajectory_err(ours, ref, scale):
    """max |ours - ref| relative to the largest |value| the parameter took (``scale``, from
    ``run_torch``) or has now: each step rounds at the parameter's size at that step, so a
    parameter that ends near zero is not judged against its small final value (seed 715621:
    Adam took a 0-d parameter from 0.52 to 0.00026 in 19 steps; ours and torch's ended 2.6e-16
    apart, two ulps at 0.5 but "1.0e-12 relative" to the end value)."""
    diff = float(np.max(np.abs(ours - ref), initial=0.0))
    scale = max(scale, float(np.max(np.abs(ref), initial=0.0)))
    return diff / scale if scale > 0 else (0.0 if diff == 0 else float("inf"))


def torch_state_numpy(opt):
    """torch's optimizer state_dict with tensors as NumPy arrays."""
    sd = opt.state_dict()
    state = {i: {k: (v.numpy().copy() if isinstance(v, torch.Tensor) else v) for k, v in s.items()}
             for i, s in sd["state"].items()}
    return {"state": state, "param_groups": copy.deepcopy(sd["param_groups"])}


def numpy_state_torch(sd):
    """Our optimizer state_dict with arrays as torch tensors (what torch's load_state_dict expects)."""
    state = {i: {k: (torch.tensor(v, device=DEVICE) if isinstance(v, np.ndarray) else v) for k, v in s.items()}
             for i, s in sd["state"].items()}
    return {"state": state, "param_groups": copy.deepcopy(sd["param_groups"])}


def assert_states_equal(ours_sd, torch_sd, rtol, scales=None):
    """Same state keys, dtypes and values: float arrays within ``rtol`` by ``trajectory_err``
    (``scales``: from ``run_torch``, keyed (parameter, state key); a running average such as
    exp_avg can end near zero as a parameter can)."""
    assert sorted(ours_sd["state"]) == sorted(torch_sd["state"]), "different parameters have state"
    for i, s in torch_sd["state"].items():
        assert sorted(ours_sd["state"][i]) == sorted(s), f"state keys of parameter {i}"
        for k, v in s.items():
            ov = ours_sd["state"][i][k]
            if isinstance(v, np.ndarray):
                assert ov.dtype == v.dtype, f"state {i}.{k}: dtype {ov.dtype} vs torch {v.dtype}"
                e = trajectory_err(ov, v, (scales or {}).get((i, k), 0.0))
                assert e <= rtol, f"state {i}.{k}: relative error {e:.3g}"
            else:
                assert ov == v
    for og, tgp in zip(ours_sd["param_groups"], torch_sd["param_groups"]):
        for k, v in og.items():
            assert tgp[k] == v, f"param group key {k}: {v} vs torch {tgp[k]}"


# ----------------------------------------------------------------------------- parity after N steps

def update_conditioning(pb, init32, grads32, oracle):
    """The kit's conditioning (``reference.testing._conditioning``) of the float64 oracle's final
    parameters: how far they move when the initial parameters and every gradient move by up to one
    float32 ulp. An update p - lr*g that cancels to near zero (seed 0: 0.1257 - 0.2031*0.6404 =
    -0.00436) is ill-conditioned: one ulp of p is 1.7e-6 of the result, and torch is closer only
    because its add(alpha=) rounds once (a fused multiply-add) where ours rounds lr*g first."""
    shapes = [np.shape(a) for a in init32]
    flat = [a.astype(np.float64) for a in init32] + [g.astype(np.float64) for step in grads32
                                                      for g in step if g is not None]

    def run_oracle(arrays):
        it = iter(arrays[len(init32):])
        moved = [[None if g is None else next(it) for g in step] for step in grads32]
        return run_torch(pb, list(arrays[:len(shapes)]), moved, np.float64)[0]

    return _conditioning(oracle, flat, [True] * len(flat), run_oracle, pb["seed"])


def check_optimizer(pb):
    init64, grads64 = make_data(pb, np.float64)
    ours, our_opt = run_ours(pb, init64, grads64, np.float64)
    scales = {}
    ref, ref_opt = run_torch(pb, init64, grads64, np.float64, scales=scales)
    for i, (o, r) in enumerate(zip(ours, ref)):
        scale = scales[i]
        assert o.dtype == np.float64
        e = trajectory_err(o, r, scale)
        assert e <= F64_RTOL, f"{pb['name']} float64 parameter {i}: relative error {e:.3g} > {F64_RTOL:g}"
    assert_states_equal(our_opt.state_dict(), torch_state_numpy(ref_opt), F64_RTOL, scales)

    init32, grads32 = make_data(pb, np.float32)
    ours32, our_opt32 = run_ours(pb, init32, grads32, np.float32)
    ref32, _ = run_torch(pb, init32, grads32, np.float32)
    oracle, _ = run_torch(pb, init32, grads32, np.float64)
    floor = pb["n_steps"] * F32_FLOOR
    errs = [(rel_err(o, r), rel_err(t, r)) for o, t, r in zip(ours32, ref32, oracle)]
    conds = [0.0] * len(errs)
    if any(not e_o <= F32_RATIO * e_t + floor for e_o, e_t in errs):
        conds = update_conditioning(pb, init32, grads32, oracle)
    for i, ((e_ours, e_torch), c) in enumerate(zip(errs, conds)):
        assert ours32[i].dtype == np.float32
        check_f32(f"{pb['name']} parameter {i}", e_ours, e_torch, cond=c, floor=floor)
    for s in our_opt32.state.values():
        for k, v in s.items():
            if isinstance(v, np.ndarray) and k != "step":
                assert v.dtype == np.float32, f"float32 parameter got {v.dtype} state {k}"


@given(problems("SGD"))
def test_sgd_matches_torch(pb):
    check_optimizer(pb)


@given(problems("Adam"))
def test_adam_matches_torch(pb):
    check_optimizer(pb)


@given(problems("AdamW"))
def test_adamw_matches_torch(pb):
    check_optimizer(pb)


@pytest.mark.parametrize("name", list(OURS))
def test_defaults_match_torch(name):
    """Same default hyperparameters (torch's implementation-only flags aside)."""
    ours = OURS[name]([tg.Tensor(np.zeros(2), requires_grad=True)], **({"lr": 0.1} if name == "SGD" else {}))
    theirs = THEIRS[name]([torch.zeros(2, requires_grad=True, device=DEVICE)], **({"lr": 0.1} if name == "SGD" else {}))
    for k, v in ours.defaults.items():
        assert theirs.defaults[k] == v, f"{name} default {k}: ours {v}, torch {theirs.defaults[k]}"
    assert OURS["SGD"]([tg.Tensor(np.zeros(2), requires_grad=True)]).defaults["lr"] == 1e-3


def test_weight_decay_flavours_differ():
    """Adam's L2 penalty and AdamW's decoupled decay are different updates (a test that can fail)."""
    pb = dict(name="Adam", kwargs=dict(lr=0.1, weight_decay=0.3), shapes=[(3,)], split=False, group_lr=0.1,
              group_wd=0.0, n_steps=5, none_prob=0.0, seed=3)
    init, grads = make_data(pb, np.float64)
    l2, _ = run_ours(pb, init, grads, np.float64)
    decoupled, _ = run_ours(dict(pb, name="AdamW"), init, grads, np.float64)
    assert rel_err(l2[0], decoupled[0]) > 1e-3


# ----------------------------------------------------------------------------- state_dict and resuming

@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
                                         ("Adam", dict(lr=0.05, amsgrad=True, weight_decay=0.1)),
                                         ("AdamW", dict(lr=0.05))])
@pytest.mark.parametrize("direction", ["torch_to_ours", "ours_to_torch"])
def test_state_dict_moves_between_torch_and_ours(name, kwargs, direction):
    """Run 4 steps on one side, move the state to the other, run 4 more on both: same parameters."""
    pb = dict(name=name, kwargs=kwargs, shapes=[(3, 2), (2,), ()], split=True, group_lr=0.02, group_wd=0.0,
              n_steps=8, none_prob=0.0, seed=11)
    init, grads = make_data(pb, np.float64)
    ref, _ = run_torch(pb, init, grads, np.float64)  # 8 uninterrupted steps

    first = dict(pb, n_steps=4)
    if direction == "torch_to_ours":
        mid, opt = run_torch(first, init, grads[:4], np.float64)
        state = torch_state_numpy(opt)
        params = [tg.Tensor(a.copy(), requires_grad=True) for a in mid]
        resumed = OURS[name](groups_of(pb, params), **kwargs)
        resumed.load_state_dict(state)
        to_grad = tg.Tensor
    else:
        mid, opt = run_ours(first, init, grads[:4], np.float64)
        state = numpy_state_torch(copy.deepcopy(opt.state_dict()))
        params = [torch.tensor(a.copy(), requires_grad=True, device=DEVICE) for a in mid]
        resumed = THEIRS[name](groups_of(pb, params), **kwargs)
        resumed.load_state_dict(state)
        to_grad = torch.tensor
    for step_grads in grads[4:]:
        for p, g in zip(params, step_grads):
            p.grad = to_grad(g.copy())
        resumed.step()
    for p, r in zip(params, ref):
        out = p._data if isinstance(p, tg.Tensor) else p.detach().numpy()
        assert rel_err(out, r) <= F64_RTOL


def test_state_dict_structure():
    ps = [tg.Tensor(np.ones((2, 2)), requires_grad=True), tg.Tensor(np.ones(2), requires_grad=True),
          tg.Tensor(np.ones(3), requires_grad=True)]
    opt = optim.Adam([{"params": ps[:2]}, {"params": ps[2:], "lr": 0.5}], lr=0.1)
    ps[1].grad = tg.Tensor(np.ones(2))
    opt.step()
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert [g["lr"] for g in sd["param_groups"]] == [0.1, 0.5]
    assert list(sd["state"]) == [1]  # only the parameter that had a gradient
    assert sorted(sd["state"][1]) == ["exp_avg", "exp_avg_sq", "step"]
    assert sd["state"][1]["step"].dtype == np.float32 and float(sd["state"][1]["step"]) == 1.0


def test_load_state_dict_rejects_mismatches():
    def make(shapes, groups=1):
        ps = [tg.Tensor(np.ones(s), requires_grad=True) for s in shapes]
        opt = optim.Adam(ps if groups == 1 else [{"params": ps[:1]}, {"params": ps[1:]}], lr=0.1)
        for p in ps:
            p.grad = tg.Tensor(np.ones(p.shape))
        opt.step()
        return opt
    sd = make([(2, 3), (4,)]).state_dict()
    with pytest.raises(ValueError, match="shape"):
        make([(3, 2), (4,)]).load_state_dict(copy.deepcopy(sd))
    with pytest.raises(ValueError, match="number of parameter groups"):
        make([(2, 3), (4,)], groups=2).load_state_dict(copy.deepcopy(sd))
    with pytest.raises(ValueError, match="size of optimizer's group"):
        make([(2, 3), (4,), (1,)]).load_state_dict(copy.deepcopy(sd))
    with pytest.raises(ValueError, match="'state' and 'param_groups'"):
        make([(2, 3), (4,)]).load_state_dict({"state": {}})
    bad = copy.deepcopy(sd)
    bad["state"][7] = bad["state"][0]
    with pytest.raises(ValueError, match="parameter index 7"):
        make([(2, 3), (4,)]).load_state_dict(bad)
    noams = make([(2, 3), (4,)])
    noams.param_groups[0]["amsgrad"] = True
    with pytest.raises(ValueError, match="max_exp_avg_sq"):
        noams.step()


def test_load_state_dict_copies_and_casts():
    """Loaded arrays are private copies in the parameter's dtype (torch shares; we do not)."""
    p = tg.Tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    buf = np.full(3, 2.0)  # float64
    opt.load_state_dict({"state": {0: {"momentum_buffer": buf}}, "param_groups": [
        dict(lr=0.1, momentum=0.9, dampening=0, weight_decay=0, nesterov=False, maximize=False, params=[0])]})
    p.grad = tg.Tensor(np.ones(3, dtype=np.float32))
    opt.step()
    assert opt.state[p]["momentum_buffer"].dtype == np.float32
    np.testing.assert_array_equal(buf, np.full(3, 2.0))
    np.testing.assert_allclose(opt.state[p]["momentum_buffer"], 0.9 * 2.0 + 1.0, rtol=1e-6)


# ----------------------------------------------------------------------------- behaviour

def test_update_is_in_place_and_keeps_dtype():
    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    p = tg.from_numpy(base).requires_grad_()   # from_numpy shares the array (Tensor(base) copies it)
    tied = tg.from_numpy(base)  # another Tensor on the same array (tied weights)
    view = base[0]
    opt = optim.AdamW([p], lr=0.1)
    p.grad = tg.Tensor(np.ones((2, 3), dtype=np.float32))
    opt.step()
    assert p._data is base and p._data.dtype == np.float32
    assert not np.array_equal(base, np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(tied._data, base)
    np.testing.assert_array_equal(view, base[0])
    assert all(v.dtype == np.float32 for k, v in opt.state[p].items())


def test_zero_grad():
    ps = [tg.Tensor(np.ones(3), requires_grad=True), tg.Tensor(np.ones(2), requires_grad=True)]
    opt = optim.SGD(ps, lr=0.1)
    (ps[0] * 2.0).sum().backward()
    g = ps[0].grad
    opt.zero_grad(set_to_none=False)
    assert ps[0].grad is g and np.all(g.numpy() == 0) and ps[1].grad is None
    opt.zero_grad()
    assert ps[0].grad is None
    before = ps[0]._data.copy()
    opt.step()  # no gradients: nothing changes
    np.testing.assert_array_equal(ps[0]._data, before)


def test_step_with_closure_matches_torch():
    """A closure that recomputes the loss with our engine; 5 SGD-with-momentum steps vs torch."""
    rng = np.random.default_rng(0)
    a, x0 = rng.standard_normal((4, 3)), rng.standard_normal(3)
    x = tg.Tensor(x0.copy(), requires_grad=True)
    tx = torch.tensor(x0.copy(), requires_grad=True, device=DEVICE)
    opt, topt = optim.SGD([x], lr=0.05, momentum=0.9), torch.optim.SGD([tx], lr=0.05, momentum=0.9)

    def closure():
        opt.zero_grad()
        loss = ((x @ tg.Tensor(a.T)).tanh() ** 2).sum()
        loss.backward()
        return loss

    def tclosure():
        topt.zero_grad()
        loss = ((tx @ torch.tensor(a.T, device=DEVICE)).tanh() ** 2).sum()
        loss.backward()
        return loss
    for _ in range(5):
        loss, tloss = opt.step(closure), topt.step(tclosure)
        assert abs(loss.item() - tloss.item()) <= 1e-12 * abs(tloss.item())
    assert rel_err(x._data, tx.detach().cpu().numpy()) <= F64_RTOL


def test_param_groups_no_decay_on_biases_and_norms():
    rng = np.random.default_rng(1)
    named = [("w", rng.standard_normal((3, 4))), ("b", rng.standard_normal(4)), ("ln.weight", rng.standard_normal(4)),
             ("emb", rng.standard_normal((5, 3)))]
    ours = [(n, tg.Tensor(a.copy(), requires_grad=True)) for n, a in named]
    frozen = ("frozen", tg.Tensor(np.ones(2)))
    groups = optim.weight_decay_groups(ours + [frozen], 0.1)
    assert [len(g["params"]) for g in groups] == [2, 2] and [g["weight_decay"] for g in groups] == [0.1, 0.0]
    assert groups[0]["params"][0] is ours[0][1] and groups[1]["params"][0] is ours[1][1]
    theirs = [torch.tensor(a.copy(), requires_grad=True, device=DEVICE) for _, a in named]
    tgroups = [{"params": [theirs[0], theirs[3]], "weight_decay": 0.1},
               {"params": [theirs[1], theirs[2]], "weight_decay": 0.0}]
    opt, topt = optim.AdamW(groups, lr=0.1), torch.optim.AdamW(tgroups, lr=0.1)
    for _ in range(3):
        for (_, p), tp in zip(ours, theirs):
            g = rng.standard_normal(p.shape)
            p.grad, tp.grad = tg.Tensor(g), torch.tensor(g, device=DEVICE)
        opt.step()
        topt.step()
    for (_, p), tp in zip(ours, theirs):
        assert rel_err(p._data, tp.detach().numpy()) <= F64_RTOL


def test_named_parameters_are_accepted_like_torch():
    p = tg.Tensor(np.ones(2), requires_grad=True)
    opt = optim.SGD([("weight", p)], lr=0.1)
    assert opt.param_groups[0]["params"][0] is p
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight"]


def test_invalid_arguments():
    p = tg.Tensor(np.ones(2), requires_grad=True)
    with pytest.raises(ValueError, match="learning rate"):
        optim.SGD([p], lr=-1.0)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="momentum"):
        optim.SGD([p], lr=0.1, momentum=-0.5)
    with pytest.raises(ValueError, match="beta parameter at index 1"):
        optim.Adam([p], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="epsilon"):
        optim.Adam([p], eps=-1e-8)
    with pytest.raises(ValueError, match="weight_decay"):
        optim.AdamW([p], weight_decay=-0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.Adam([])
    with pytest.raises(TypeError, match="iterable of Tensors"):
        optim.Adam(p)
    with pytest.raises(TypeError, match="only optimize Tensors"):
        optim.Adam([np.ones(2)])
    with pytest.raises(TypeError, match="sets"):
        optim.Adam([{"params": {p}}])
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.Adam([{"params": [p]}, {"params": [p]}])
    with pytest.raises(ValueError, match="non-leaf"):
        optim.Adam([p * 2.0])
    opt = optim.Adam([p])
    with pytest.raises(RuntimeError, match=r"assigned grad has data of a different size"):
        p.grad = tg.Tensor(np.ones(3))
    with pytest.raises(TypeError, match=r"assigned grad expected to be a Tensor or None"):
        p.grad = np.ones(2)


# ----------------------------------------------------------------------------- gradient clipping

@given(grad_shapes=st.lists(shapes(0, 3, max_side=4), min_size=1, max_size=4),
       norm_type=st.sampled_from([2.0, 1.0, math.inf, 3.0, 0.5]),
       max_norm=st.floats(0.05, 5.0), scale=st.sampled_from([0.01, 1.0, 10.0]),
       dtype=st.sampled_from([np.float64, np.float32]), seed=seeds)
def test_clip_grad_norm_matches_torch(grad_shapes, norm_type, max_norm, scale, dtype, seed):
    rng = np.random.default_rng(seed)
    grads = [np.asarray(rng.standard_normal(s) * scale, dtype=dtype) for s in grad_shapes]
    ours = [tg.Tensor(np.zeros(s, dtype), requires_grad=True) for s in grad_shapes]
    for p, g in zip(ours, grads):
        p.grad = tg.Tensor(g.copy())
    norm = optim.clip_grad_norm_(ours, max_norm, norm_type)

    def torch_run(dt):
        ts = [torch.zeros(s, dtype=dt, requires_grad=True, device=DEVICE) for s in grad_shapes]
        for t, g in zip(ts, grads):
            t.grad = torch.tensor(g, device=DEVICE).to(dt)
        n = torch.nn.utils.clip_grad_norm_(ts, max_norm, norm_type)
        return n.cpu().numpy(), [t.grad.cpu().numpy() for t in ts]
    ref_norm, ref_grads = torch_run(torch.float64 if dtype == np.float64 else torch.float32)
    assert norm.shape == () and norm.dtype == dtype
    if dtype == np.float64:
        assert rel_err(norm, ref_norm) <= F64_RTOL
        for p, r in zip(ours, ref_grads):
            assert p.grad.dtype == dtype and rel_err(p.grad, r) <= F64_RTOL
        return
    oracle_norm, oracle_grads = torch_run(torch.float64)
    pairs = [(norm, ref_norm, oracle_norm)] + [(p.grad, r, o) for p, r, o in zip(ours, ref_grads, oracle_grads)]
    for o, t, orc in pairs:
        assert rel_err(o, orc) <= F32_RATIO * rel_err(t, orc) + F32_FLOOR


def test_clip_grad_norm_clips_to_max_norm_and_leaves_small_grads():
    p = tg.Tensor(np.zeros(4), requires_grad=True)
    p.grad = tg.Tensor(np.array([3.0, 4.0, 0.0, 0.0]))
    total = optim.clip_grad_norm_(p, 1.0)  # a single Tensor is accepted
    assert float(total) == 5.0
    assert abs(np.linalg.norm(p.grad) - 1.0) < 1e-6
    p.grad = tg.Tensor(np.array([0.3, 0.4, 0.0, 0.0]))
    optim.clip_grad_norm_([p], 1.0)
    np.testing.assert_allclose(p.grad, [0.3, 0.4, 0.0, 0.0], rtol=1e-15)


def test_clip_grad_norm_edge_cases():
    p, q = tg.Tensor(np.zeros(2), requires_grad=True), tg.Tensor(np.zeros(2), requires_grad=True)
    assert float(optim.clip_grad_norm_([p, q], 1.0)) == 0.0  # no gradients at all
    p.grad = tg.Tensor(np.array([np.inf, 1.0]))
    with pytest.raises(RuntimeError, match="non-finite"):
        optim.clip_grad_norm_([p, q], 1.0, error_if_nonfinite=True)
    t = torch.zeros(2, dtype=torch.float64, requires_grad=True, device=DEVICE)
    t.grad = torch.tensor([math.inf, 1.0], dtype=torch.float64, device=DEVICE)
    assert math.isinf(float(optim.clip_grad_norm_([p, q], 1.0)))
    assert math.isinf(torch.nn.utils.clip_grad_norm_([t], 1.0).item())
    np.testing.assert_array_equal(p.grad, t.grad.cpu().numpy())  # [nan, 0] on both sides


def test_zero_d_gradients_from_the_engine():
    """Accumulating into a 0-d parameter's grad can leave a NumPy scalar; clipping and zeroing handle it."""
    x = tg.Tensor(np.array(2.0), requires_grad=True)
    for _ in range(2):
        (x * x).backward()
    optim.clip_grad_norm_([x], 1.0)
    assert isinstance(x.grad, tg.Tensor) and abs(float(x.grad) - 1.0) < 1e-6
    (x * x).backward()
    optim.SGD([x], lr=0.1).zero_grad(set_to_none=False)
    assert float(x.grad) == 0.0


def test_clip_grad_value_matches_torch():
    g = np.random.default_rng(0).standard_normal((3, 5)) * 2
    p, t = tg.Tensor(np.zeros((3, 5)), requires_grad=True), torch.zeros(3, 5, dtype=torch.float64, requires_grad=True, device=DEVICE)
    p.grad, t.grad = tg.Tensor(g.copy()), torch.tensor(g, device=DEVICE)
    optim.clip_grad_value_([p], 0.7)
    torch.nn.utils.clip_grad_value_([t], 0.7)
    np.testing.assert_array_equal(p.grad, t.grad.cpu().numpy())


# ----------------------------------------------------------------------------- learning-rate schedules

def two_group_optimizers(lrs=(0.1, 0.03)):
    ours = optim.SGD([{"params": [tg.Tensor(np.ones(2), requires_grad=True)], "lr": lrs[0]},
                      {"params": [tg.Tensor(np.ones(2), requires_grad=True)], "lr": lrs[1]}], lr=1.0)
    theirs = torch.optim.SGD([{"params": [torch.ones(2, requires_grad=True, device=DEVICE)], "lr": lrs[0]},
                              {"params": [torch.ones(2, requires_grad=True, device=DEVICE)], "lr": lrs[1]}], lr=1.0)
    return ours, theirs


def assert_lrs_equal(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert abs(a - b) <= F64_RTOL * abs(b), f"lr {a} vs torch {b}"


def run_schedules(make_ours, make_theirs, n_steps):
    opt, topt = two_group_optimizers()
    sched, tsched = make_ours(opt), make_theirs(topt)
    history = []
    for _ in range(n_steps):
        assert_lrs_equal(sched.get_last_lr(), tsched.get_last_lr())
        assert_lrs_equal([g["lr"] for g in opt.param_groups], [g["lr"] for g in topt.param_groups])
        history.append(sched.get_last_lr()[0])
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
    return history


@given(warmup=st.integers(0, 10), extra=st.integers(1, 30), min_lr_ratio=st.floats(0.0, 1.0),
       n_steps=st.integers(1, 50))
def test_lambda_lr_warmup_cosine_matches_torch(warmup, extra, min_lr_ratio, n_steps):
    fn = optim.warmup_cosine(warmup, warmup + extra, min_lr_ratio)
    run_schedules(lambda o: optim.LambdaLR(o, fn), lambda o: torch.optim.lr_scheduler.LambdaLR(o, fn), n_steps)


@given(t_max=st.integers(1, 20), eta_min=st.sampled_from([0.0, 1e-3]), n_steps=st.integers(1, 60))
def test_cosine_annealing_matches_torch(t_max, eta_min, n_steps):
    run_schedules(lambda o: optim.CosineAnnealingLR(o, t_max, eta_min),
                  lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, t_max, eta_min), n_steps)


def test_lambda_lr_per_group_lambdas_and_epoch_argument():
    fns = [lambda e: 0.5 ** e, lambda e: 1.0 / (e + 1)]
    opt, topt = two_group_optimizers()
    sched, tsched = optim.LambdaLR(opt, fns), torch.optim.lr_scheduler.LambdaLR(topt, fns)
    cos, tcos = optim.CosineAnnealingLR(opt, 10), torch.optim.lr_scheduler.CosineAnnealingLR(topt, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in [3, 7]:
            sched.step(epoch)
            tsched.step(epoch)
            assert_lrs_equal(sched.get_last_lr(), tsched.get_last_lr())
            cos.step(epoch)
            tcos.step(epoch)
            assert_lrs_equal(cos.get_last_lr(), tcos.get_last_lr())
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas"):
        optim.LambdaLR(opt, fns[:1])


def test_warmup_cosine_shape():
    fn = optim.warmup_cosine(4, 14, 0.1)
    assert [fn(s) for s in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert fn(4) == 1.0 and abs(fn(9) - 0.55) < 1e-15 and fn(14) == 0.1 and fn(100) == 0.1
    decay = [fn(s) for s in range(4, 15)]
    assert all(a > b for a, b in zip(decay, decay[1:]))
    assert optim.warmup_cosine(0, 5)(0) == 1.0
    for bad in [(-1, 5), (6, 5), (0, 0)]:
        with pytest.raises(ValueError):
            optim.warmup_cosine(*bad)
    with pytest.raises(ValueError, match="min_lr_ratio"):
        optim.warmup_cosine(1, 5, 1.5)


def test_scheduler_state_dict_resumes():
    """Resume from state_dict (and torch's last_epoch convention) and continue identically."""
    fn = optim.warmup_cosine(3, 12, 0.2)
    opt, _ = two_group_optimizers()
    sched = optim.LambdaLR(opt, fn)
    for _ in range(5):
        sched.step()
    saved, opt_state = sched.state_dict(), copy.deepcopy(opt.state_dict())
    assert saved["lr_lambdas"] == [{"warmup_steps": 3, "total_steps": 12, "min_lr_ratio": 0.2}] * 2
    expected = []
    for _ in range(4):
        sched.step()
        expected.append(sched.get_last_lr())

    opt2, _ = two_group_optimizers()
    opt2.load_state_dict(copy.deepcopy(opt_state))
    sched2 = optim.LambdaLR(opt2, optim.warmup_cosine(1, 2))
    sched2.load_state_dict(saved)  # restores last_epoch, base_lrs and the lambda's settings
    got = []
    for _ in range(4):
        sched2.step()
        got.append(sched2.get_last_lr())
    assert got == expected

    opt3, _ = two_group_optimizers()
    opt3.load_state_dict(copy.deepcopy(opt_state))
    sched3 = optim.LambdaLR(opt3, fn, last_epoch=5)  # torch's convention: its first value is step 6's
    assert sched3.get_last_lr() == expected[0]
    with pytest.raises(KeyError, match="initial_lr"):
        optim.LambdaLR(two_group_optimizers()[0], fn, last_epoch=3)


def test_training_with_schedule_matches_torch():
    """AdamW + warmup_cosine + clipping for 12 steps: parameters equal torch's (float64)."""
    rng = np.random.default_rng(5)
    init = [rng.standard_normal((3, 3)), rng.standard_normal(3)]
    ours = [tg.Tensor(a.copy(), requires_grad=True) for a in init]
    theirs = [torch.tensor(a.copy(), requires_grad=True, device=DEVICE) for a in init]
    opt, topt = optim.AdamW(ours, lr=0.05), torch.optim.AdamW(theirs, lr=0.05)
    fn = optim.warmup_cosine(3, 10, 0.1)
    sched, tsched = optim.LambdaLR(opt, fn), torch.optim.lr_scheduler.LambdaLR(topt, fn)
    for _ in range(12):
        for p, t in zip(ours, theirs):
            g = rng.standard_normal(p.shape) * 3
            p.grad, t.grad = tg.Tensor(g), torch.tensor(g, device=DEVICE)
        optim.clip_grad_norm_(ours, 1.0)
        torch.nn.utils.clip_grad_norm_(theirs, 1.0)
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
    for p, t in zip(ours, theirs):
        assert rel_err(p._data, t.detach().cpu().numpy()) <= F64_RTOL
