"""RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam and SGD(nesterov), and the schedulers StepLR,
MultiStepLR, ExponentialLR, OneCycleLR, ReduceLROnPlateau, CosineAnnealingWarmRestarts, LinearLR,
SequentialLR and ChainedScheduler, against torch.optim.

Optimizers: a small model's parameters (float64, several shapes, two parameter groups) get the
same random gradients in both engines for 25 steps; the parameters agree to 1e-10 relative after
every step. Halfway, each side's ``state_dict`` is loaded into a fresh optimizer of the *other*
engine and the run goes on there, still equal. Signatures, defaults (``param_groups``) and
errors are torch's. Schedulers: the lr of every group after each of 25 steps equals torch's, and a
scheduler rebuilt from ``state_dict`` halfway continues identically.
"""
from __future__ import annotations

import copy
import inspect

import numpy as np
import pytest
import torch

import tinygrad_tx as tg
from reference.testing import DEVICE
from tinygrad_tx import optim
from tinygrad_tx.optim import lr_scheduler as L

TL = torch.optim.lr_scheduler
RTOL = 1e-10
SHAPES = [(4, 3), (3,), (2, 2, 2), ()]
STEPS = 25


def make_params(seed):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in SHAPES]
    ours = [tg.nn.Parameter(a.copy()) for a in arrays]
    theirs = [torch.nn.Parameter(torch.tensor(a.copy(), device=DEVICE)) for a in arrays]
    return ours, theirs


def groups(params, lr2):
    """Two parameter groups, the second with its own lr (and the rest of the defaults)."""
    return [{"params": params[:2]}, {"params": params[2:], "lr": lr2}]


def to_torch_state(sd):
    def conv(n, v):   # torch keeps a non-capturable "step" on the CPU; the rest follows the parameters
        if not isinstance(v, np.ndarray):
            return copy.deepcopy(v)
        return torch.tensor(np.array(v), device="cpu" if n == "step" else DEVICE)
    return {"state": {k: {n: conv(n, v) for n, v in s.items()} for k, s in sd["state"].items()},
            "param_groups": copy.deepcopy(sd["param_groups"])}


def to_ours_state(sd):
    def conv(v):
        return v.detach().cpu().numpy().copy() if isinstance(v, torch.Tensor) else copy.deepcopy(v)
    return {"state": {k: {n: conv(v) for n, v in s.items()} for k, s in sd["state"].items()},
            "param_groups": copy.deepcopy(sd["param_groups"])}


def rel_err(ours, theirs):
    a, b = ours.detach().numpy(), theirs.detach().cpu().numpy()
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


OPTIMIZERS = [
    ("RMSprop", dict()),
    ("RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-6, weight_decay=0.1, momentum=0.8, centered=True)),
    ("RMSprop", dict(centered=True, maximize=True)),
    ("Adagrad", dict()),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.01, initial_accumulator_value=0.3, eps=1e-8)),
    ("Adagrad", dict(maximize=True, fused=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1, maximize=True)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1, maximize=True)),
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict()),
    ("RAdam", dict(lr=0.01, betas=(0.5, 0.9), weight_decay=0.1)),     # rho_t > 5 from step 1 on
    ("RAdam", dict(weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.05, momentum=0.5, nesterov=True, weight_decay=0.1, maximize=True)),
]


@pytest.mark.parametrize("name,kwargs", OPTIMIZERS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(OPTIMIZERS)])
@pytest.mark.parametrize("handover", ["ours_to_torch", "torch_to_ours"])
def test_optimizer_equals_torch_25_steps_and_state_dict(name, kwargs, handover):
    seed = OPTIMIZERS.index((name, kwargs))
    rng = np.random.default_rng(1000 + seed)
    ours_p, theirs_p = make_params(seed)
    lr2 = 0.5 * kwargs.get("lr", getattr(optim, name).__init__.__defaults__[0])
    ours = getattr(optim, name)(groups(ours_p, lr2), **kwargs)
    theirs = getattr(torch.optim, name)(groups(theirs_p, lr2), **kwargs)
    for t in range(STEPS):
        if t == STEPS // 2:   # fresh optimizers on both sides: one loads the other engine's state_dict,
            # the other its own (a reload casts float32 scalars such as NAdam's mu_product to float64, in both)
            saved_ours, saved_theirs = to_torch_state(ours.state_dict()), to_ours_state(theirs.state_dict())
            ours = getattr(optim, name)(groups(ours_p, lr2), **kwargs)
            theirs = getattr(torch.optim, name)(groups(theirs_p, lr2), **kwargs)
            if handover == "ours_to_torch":
                theirs.load_state_dict(saved_ours)
                ours.load_state_dict(to_ours_state(saved_ours))
            else:
                ours.load_state_dict(saved_theirs)
                theirs.load_state_dict(to_torch_state(saved_theirs))
        for p, q in zip(ours_p, theirs_p):
            g = rng.standard_normal(p.shape) * rng.choice([0.01, 1.0, 100.0])
            p.grad = tg.tensor(g)
            q.grad = torch.tensor(g, device=DEVICE)
        ours.step()
        theirs.step()
        for p, q in zip(ours_p, theirs_p):
            assert rel_err(p, q) <= RTOL, (t, rel_err(p, q))
    # the parameters really moved, and the state entries are torch's, same values
    assert all(rel_err(p, q) <= RTOL for p, q in zip(ours_p, theirs_p))
    assert not np.allclose(ours_p[0].detach().numpy(), make_params(seed)[0][0].detach().numpy())
    so, st = ours.state_dict(), theirs.state_dict()
    assert so["state"].keys() == st["state"].keys()
    for k in st["state"]:
        assert so["state"][k].keys() == st["state"][k].keys()
        for n, v in st["state"][k].items():
            np.testing.assert_allclose(np.asarray(so["state"][k][n], dtype=np.float64), v.double().cpu().numpy(),
                                       rtol=1e-9, atol=1e-300, err_msg=f"{name} state {k}.{n}")


NEW = ["RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam"]


@pytest.mark.parametrize("name", NEW + ["SGD"])
def test_signature_and_defaults_are_torchs(name):
    ours, theirs = inspect.signature(getattr(optim, name)), inspect.signature(getattr(torch.optim, name))
    assert list(ours.parameters) == list(theirs.parameters)
    for p in theirs.parameters.values():
        assert ours.parameters[p.name].kind == p.kind, p.name
        assert ours.parameters[p.name].default == p.default, p.name
    if name == "SGD":
        return
    op, tp = make_params(0)
    ours_groups = getattr(optim, name)(op).state_dict()["param_groups"]
    torch_groups = getattr(torch.optim, name)(tp).state_dict()["param_groups"]
    assert ours_groups == torch_groups
    if name == "Adagrad":   # Adagrad creates its state at construction
        assert getattr(optim, name)(op).state_dict()["state"].keys() == \
            getattr(torch.optim, name)(tp).state_dict()["state"].keys()


ERRORS = [
    ("RMSprop", dict(lr=-1), "Invalid learning rate"), ("RMSprop", dict(alpha=-0.1), "Invalid alpha value"),
    ("RMSprop", dict(momentum=-1), "Invalid momentum value"), ("RMSprop", dict(eps=-1), "Invalid epsilon value"),
    ("Adagrad", dict(lr_decay=-1), "Invalid lr_decay value"),
    ("Adagrad", dict(initial_accumulator_value=-1), "Invalid initial_accumulator_value value"),
    ("Adadelta", dict(rho=1.5), "Invalid rho value"), ("Adadelta", dict(weight_decay=-1), "Invalid weight_decay"),
    ("Adamax", dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0"),
    ("NAdam", dict(momentum_decay=-1), "Invalid momentum_decay value"),
    ("RAdam", dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1"),
    ("SGD", dict(momentum=0.9, nesterov=True, dampening=0.1), "Nesterov momentum requires"),
]


@pytest.mark.parametrize("name,kwargs,message", ERRORS)
def test_errors_like_torch(name, kwargs, message):
    with pytest.raises(ValueError, match=message):
        getattr(optim, name)(make_params(0)[0], **kwargs)
    with pytest.raises(ValueError, match=message.split(" requires")[0]):
        getattr(torch.optim, name)(make_params(0)[1], **kwargs)


@pytest.mark.parametrize("name", NEW)
def test_bad_types_and_unsupported_flags_are_named(name):
    with pytest.raises(TypeError, match="lr"):
        getattr(optim, name)(make_params(0)[0], lr="0.1")
    if "differentiable" in inspect.signature(getattr(optim, name)).parameters:
        with pytest.raises(ValueError, match="differentiable"):
            getattr(optim, name)(make_params(0)[0], differentiable=True)
    with pytest.raises(ValueError, match="empty parameter list"):
        getattr(optim, name)([])


def test_parameters_without_grad_are_skipped_and_closure_returns_loss():
    for name in NEW:
        ours_p, theirs_p = make_params(3)
        ours, theirs = getattr(optim, name)(ours_p), getattr(torch.optim, name)(theirs_p)
        ours_p[0].grad = tg.ones(4, 3, dtype=tg.float64)
        theirs_p[0].grad = torch.ones(4, 3, dtype=torch.float64, device=DEVICE)
        assert ours.step(lambda: 7.0) == 7.0
        theirs.step()
        assert all(rel_err(p, q) <= RTOL for p, q in zip(ours_p, theirs_p))
        assert np.array_equal(ours_p[1].detach().numpy(), make_params(3)[0][1].detach().numpy())


def test_float32_parameters_keep_float32_state():
    p = tg.nn.Parameter(np.ones(3, dtype=np.float32))
    for name in NEW:
        opt = getattr(optim, name)([p])
        p.grad = tg.ones(3)
        opt.step()
        assert p.dtype == tg.float32
        assert all(v.dtype == (np.float32) for v in opt.state[p].values())


# ============================================================================ schedulers

def _sched_pair(make, lr=0.1, opt="SGD", **opt_kw):
    ours_p, theirs_p = make_params(0)
    ours_opt = getattr(optim, opt)(groups(ours_p, lr / 2), lr=lr, **opt_kw)
    theirs_opt = getattr(torch.optim, opt)(groups(theirs_p, lr / 2), lr=lr, **opt_kw)
    return ours_opt, theirs_opt, make(L, ours_opt), make(TL, theirs_opt)


SCHEDULERS = {
    "StepLR": lambda S, o: S.StepLR(o, step_size=4, gamma=0.5),
    "MultiStepLR": lambda S, o: S.MultiStepLR(o, milestones=[3, 7, 7, 15], gamma=0.3),
    "ExponentialLR": lambda S, o: S.ExponentialLR(o, gamma=0.9),
    "LinearLR": lambda S, o: S.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=10),
    "OneCycleLR": lambda S, o: S.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=30, pct_start=0.25),
    "OneCycleLR-linear-3phase": lambda S, o: S.OneCycleLR(o, max_lr=0.8, epochs=5, steps_per_epoch=6,
                                                          anneal_strategy="linear", three_phase=True),
    "CosineAnnealingWarmRestarts": lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.01),
    "CosineAnnealingWarmRestarts-1": lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=4),
    "SequentialLR": lambda S, o: S.SequentialLR(
        o, [S.LinearLR(o, start_factor=0.1, total_iters=5), S.ExponentialLR(o, gamma=0.8),
            S.StepLR(o, step_size=3, gamma=0.5)], milestones=[5, 12]),
    "ChainedScheduler": lambda S, o: S.ChainedScheduler(
        [S.ConstantLR(o, factor=0.5, total_iters=4), S.ExponentialLR(o, gamma=0.9), S.MultiStepLR(o, [6, 10])]),
    "ChainedScheduler-optimizer": lambda S, o: S.ChainedScheduler(
        [S.LinearLR(o, start_factor=0.5, total_iters=6), S.StepLR(o, step_size=5)], optimizer=o),
}


@pytest.mark.parametrize("source", ["ours", "torch"])
@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_equals_torch_25_steps_and_state_dict(name, source):
    ours_opt, theirs_opt, ours, theirs = _sched_pair(SCHEDULERS[name])
    assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12)
    for t in range(STEPS):
        if t == STEPS // 2:   # rebuild ours from a state_dict (its own, or torch's scheduler's) and go on
            state = copy.deepcopy(ours.state_dict() if source == "ours" else theirs.state_dict())
            opt_state = copy.deepcopy(ours_opt.state_dict())
            ours_p = [p for g in ours_opt.param_groups for p in g["params"]]
            ours_opt = optim.SGD(groups(ours_p, 0.05), lr=0.1)   # torch's resume order: build both, then
            ours = SCHEDULERS[name](L, ours_opt)                   # load the optimizer, then the scheduler
            ours_opt.load_state_dict(opt_state)
            ours.load_state_dict(state)
            assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12)
        ours_opt.step()
        theirs_opt.step()
        ours.step()
        theirs.step()
        want = [g["lr"] for g in theirs_opt.param_groups]
        assert [g["lr"] for g in ours_opt.param_groups] == pytest.approx(want, rel=1e-12, abs=1e-15), t
        assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12, abs=1e-15)
        if name.startswith("OneCycleLR"):
            assert [g["momentum"] for g in ours_opt.param_groups] == \
                pytest.approx([g["momentum"] for g in theirs_opt.param_groups], rel=1e-12)
    assert set(ours.state_dict()) <= set(theirs.state_dict())   # torch's names (torch adds one flag of its own)


def test_one_cycle_with_adam_cycles_beta1():
    ours_opt, theirs_opt, ours, theirs = _sched_pair(lambda S, o: S.OneCycleLR(o, max_lr=0.01, total_steps=25),
                                                     opt="Adam")
    for _ in range(STEPS - 1):
        ours_opt.step()
        theirs_opt.step()
        ours.step()
        theirs.step()
        assert [g["betas"][0] for g in ours_opt.param_groups] == \
            pytest.approx([g["betas"][0] for g in theirs_opt.param_groups], rel=1e-12)
        assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12)
    with pytest.raises(ValueError, match="Tried to step 26 times"):
        ours.step()
        ours.step()


@pytest.mark.parametrize("mode,threshold_mode,cooldown,min_lr", [("min", "rel", 0, 0), ("max", "abs", 2, 0.004),
                                                                 ("min", "abs", 1, [0.01, 0.002])])
def test_reduce_lr_on_plateau_equals_torch_and_state_dict(mode, threshold_mode, cooldown, min_lr):
    rng = np.random.default_rng(5)
    metrics = np.cumsum(rng.standard_normal(STEPS) * 0.1) * (1 if mode == "min" else -1) + 5
    metrics[10:] = metrics[10]          # a plateau
    kw = dict(mode=mode, factor=0.5, patience=2, threshold=0.01, threshold_mode=threshold_mode, cooldown=cooldown,
              min_lr=min_lr)
    ours_opt, theirs_opt, ours, theirs = _sched_pair(lambda S, o: S.ReduceLROnPlateau(o, **kw))
    changed = 0
    for t, m in enumerate(metrics):
        if t == STEPS // 2:
            state = copy.deepcopy(ours.state_dict())
            ours = L.ReduceLROnPlateau(ours_opt, **kw)
            ours.load_state_dict(state)
        before = [g["lr"] for g in theirs_opt.param_groups]
        ours.step(float(m))
        theirs.step(float(m))
        changed += before != [g["lr"] for g in theirs_opt.param_groups]
        assert [g["lr"] for g in ours_opt.param_groups] == [g["lr"] for g in theirs_opt.param_groups], t
        assert ours.get_last_lr() == theirs.get_last_lr()
        assert (ours.num_bad_epochs, ours.cooldown_counter, ours.best) == \
            (theirs.num_bad_epochs, theirs.cooldown_counter, theirs.best)
    assert changed >= 2        # the schedule did reduce the lr, more than once


def test_chained_and_sequential_errors_like_torch():
    p = make_params(0)[0]
    o1, o2 = optim.SGD(p, lr=0.1), optim.SGD(make_params(1)[0], lr=0.1)
    with pytest.raises(ValueError, match="expects at least one scheduler"):
        L.ChainedScheduler([])
    with pytest.raises(ValueError, match="same optimizer"):
        L.ChainedScheduler([L.StepLR(o1, 2), L.StepLR(o2, 2)])
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        L.ChainedScheduler([L.ReduceLROnPlateau(o1)])
    with pytest.raises(TypeError, match="should have `optimizer`"):
        L.ChainedScheduler([3], optimizer=o1)
    with pytest.raises(TypeError, match="schedulers must be a list"):
        L.ChainedScheduler(L.StepLR(o1, 2))
    with pytest.raises(ValueError, match="number of milestone points"):
        L.SequentialLR(o1, [L.StepLR(o1, 2), L.StepLR(o1, 3)], milestones=[])
    assert optim.ChainedScheduler is L.ChainedScheduler


def test_scheduler_signatures_are_torchs():
    for name in ("StepLR", "MultiStepLR", "ExponentialLR", "OneCycleLR", "ReduceLROnPlateau",
                 "CosineAnnealingWarmRestarts", "LinearLR", "SequentialLR", "ChainedScheduler"):
        ours, theirs = inspect.signature(getattr(L, name)), inspect.signature(getattr(TL, name))
        assert list(ours.parameters) == list(theirs.parameters), name
        for p in theirs.parameters.values():
            assert ours.parameters[p.name].default == p.default, (name, p.name)


SCHEDULER_ERRORS = {
    "StepLR step_size str": lambda S, o: S.StepLR(o, "3"),
    "MultiStepLR milestones int": lambda S, o: S.MultiStepLR(o, 3),
    "ExponentialLR gamma str": lambda S, o: S.ExponentialLR(o, "0.9"),
    "LinearLR start 0": lambda S, o: S.LinearLR(o, start_factor=0),
    "LinearLR end 2": lambda S, o: S.LinearLR(o, end_factor=2.0),
    "OneCycleLR no steps": lambda S, o: S.OneCycleLR(o, max_lr=0.1),
    "OneCycleLR total 0": lambda S, o: S.OneCycleLR(o, max_lr=0.1, total_steps=0),
    "OneCycleLR pct 1.5": lambda S, o: S.OneCycleLR(o, max_lr=0.1, total_steps=10, pct_start=1.5),
    "OneCycleLR anneal": lambda S, o: S.OneCycleLR(o, max_lr=0.1, total_steps=10, anneal_strategy="exp"),
    "OneCycleLR max_lr list": lambda S, o: S.OneCycleLR(o, max_lr=[0.1, 0.2, 0.3], total_steps=10),
    "CosineAnnealingWarmRestarts T_0 0": lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=0),
    "CosineAnnealingWarmRestarts T_mult 0": lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0),
    "CosineAnnealingWarmRestarts eta_min str": lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=2, eta_min="0"),
    "ReduceLROnPlateau factor 1": lambda S, o: S.ReduceLROnPlateau(o, factor=1.0),
    "ReduceLROnPlateau mode": lambda S, o: S.ReduceLROnPlateau(o, mode="avg"),
    "ReduceLROnPlateau threshold_mode": lambda S, o: S.ReduceLROnPlateau(o, threshold_mode="x"),
    "ReduceLROnPlateau min_lr list": lambda S, o: S.ReduceLROnPlateau(o, min_lr=[0.1, 0.2, 0.3]),
    "SequentialLR milestones": lambda S, o: S.SequentialLR(o, [S.StepLR(o, 2)], milestones=[3]),
    "not an optimizer": lambda S, o: S.StepLR(3, 2),
}


@pytest.mark.parametrize("name", list(SCHEDULER_ERRORS))
def test_scheduler_errors_like_torch(name):
    """Our error is torch's type (or a subclass); where torch stores a bad value unchecked and fails
    only at the first step(), ours refuses it at construction, naming the argument."""
    ours_p, theirs_p = make_params(0)
    with pytest.raises(Exception) as ours:
        SCHEDULER_ERRORS[name](L, optim.SGD(groups(ours_p, 0.05), lr=0.1))
    theirs_opt = torch.optim.SGD(groups(theirs_p, 0.05), lr=0.1)
    try:
        sched = SCHEDULER_ERRORS[name](TL, theirs_opt)
    except Exception as e:   # noqa: BLE001 - torch's type is what is compared
        assert isinstance(ours.value, type(e)), (ours.value, e)
        return
    with pytest.raises(type(ours.value)):   # torch: the same error type, one step later
        theirs_opt.step()
        sched.step()
