"""Learning-rate schedules with ``torch.optim.lr_scheduler``'s semantics.

A scheduler owns a counter ``last_epoch`` (the number of ``scheduler.step()``
calls so far; torch's name, though it usually counts optimizer steps) and
writes ``group["lr"]`` of every parameter group. It is created *after* the
optimizer and immediately applies the schedule's value for ``last_epoch = 0``;
call ``scheduler.step()`` after each ``optimizer.step()``::

    opt = AdamW(params, lr=3e-4)
    sched = LambdaLR(opt, warmup_cosine(warmup_steps=100, total_steps=5000, min_lr_ratio=0.1))
    for batch in data:
        ...; opt.step(); sched.step()

Each group's starting lr is remembered as ``group["initial_lr"]`` (saved with
the optimizer's state) and in ``scheduler.base_lrs``. To resume, load the
optimizer state and build the scheduler with ``last_epoch=<steps done> - 1``
(torch's convention), or restore ``scheduler.load_state_dict(...)``.
"""
from __future__ import annotations

import math
import numbers
import types
from bisect import bisect_right
from collections import Counter

from .optimizer import Optimizer


class NotAnOptimizerError(TypeError, AttributeError):
    """A scheduler given something other than an Optimizer. torch raises TypeError from
    ``LRScheduler`` and AttributeError (``'int' object has no attribute 'param_groups'``)
    from the schedulers that read ``param_groups`` first, such as ``LambdaLR``; this is both."""


def _check_optimizer(optimizer, op: str) -> Optimizer:
    if not isinstance(optimizer, Optimizer):
        raise NotAnOptimizerError(f"{op}: {type(optimizer).__name__} is not an Optimizer "
                                  f"(argument 'optimizer' = {optimizer!r})")
    return optimizer


def _check_number(value, op: str, arg: str):
    """``value`` if it is a real number (torch's schedules also run with float step counts),
    else a TypeError naming ``arg``. torch stores these unchecked and fails at the first
    ``step()`` with a message about operand types; we refuse them at construction."""
    if not isinstance(value, numbers.Real):
        raise TypeError(f"{op}: {arg} must be a number, got {type(value).__name__} ({value!r})")
    return value


class LRScheduler:
    """Base class: subclasses define ``get_lr()``, the lrs for the current ``last_epoch``."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        self.optimizer = _check_optimizer(optimizer, type(self).__name__)
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                                   f"a scheduler with last_epoch={last_epoch} >= 0: load the optimizer's "
                                   f"state before creating the scheduler")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """The step the constructor takes (``last_epoch`` -1 -> 0), flagged as initial."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:  # pragma: no cover - abstract
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The lrs the last ``step()`` wrote into the parameter groups."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advance ``last_epoch`` by one (or set it to ``epoch``) and write the new lrs.

        With ``epoch`` given, a scheduler that has a closed form
        (``_get_closed_form_lr``) uses it, as torch does.
        """
        self._step_count += 1
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            values = closed() if closed is not None else self.get_lr()
        self._write(values)

    def _write(self, values) -> None:
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        """Every attribute except the optimizer (plain Python values)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)


_LRScheduler = LRScheduler   # torch's older name, still used by custom schedulers


class LambdaLR(LRScheduler):
    """``lr = initial_lr * lr_lambda(last_epoch)``, one lambda for all groups or one per group.

    ``state_dict`` stores the attributes of lambdas that are callable objects
    (such as the one :func:`warmup_cosine` returns) and ``None`` for plain
    functions, exactly like torch.
    """

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1):
        self.optimizer = _check_optimizer(optimizer, "LambdaLR")
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        for i, fn in enumerate(self.lr_lambdas):   # torch fails on calling it, in its first step()
            if not callable(fn):
                raise TypeError(f"LambdaLR: lr_lambda must be a function (or a list of them, one per group) "
                                f"of the step count; lr_lambda[{i}] is {type(fn).__name__} ({fn!r}), not callable")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base_lr * fn(self.last_epoch) for fn, base_lr in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self) -> dict:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else dict(fn.__dict__)
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for fn, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


class CosineAnnealingLR(LRScheduler):
    r"""Cosine annealing from ``initial_lr`` to ``eta_min`` over ``T_max`` steps (no restarts).

    The schedule is :math:`\eta_t = \eta_{min} + (\eta_0 - \eta_{min}) (1 + \cos(\pi t / T_{max})) / 2`.
    Like torch, ``step()`` applies it *recursively* to the current lr,

    .. math:: \eta_t = \eta_{min} + (\eta_{t-1} - \eta_{min})
              \frac{1 + \cos(\pi t / T_{max})}{1 + \cos(\pi (t-1) / T_{max})},

    so that another scheduler changing the lr in between is respected; the
    ratio is the closed form's ``(eta_t - eta_min) / (eta_{t-1} - eta_min)``.
    Where its denominator is 0 (``t - 1`` an odd multiple of ``T_max``, the
    minimum) the increment of the closed form is added instead. Past
    ``T_max`` the lr climbs back along the cosine, as in torch.
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        if _check_number(T_max, "CosineAnnealingLR", "T_max") <= 0:
            raise ValueError(f"T_max must be a positive number of steps, got {T_max}")
        _check_number(eta_min, "CosineAnnealingLR", "eta_min")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        groups = self.optimizer.param_groups
        t, T, eta_min = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and t > 0:
            return self._get_closed_form_lr()
        if (t - 1 - T) % (2 * T) == 0:
            return [group["lr"] + (base_lr - eta_min) * (1 - math.cos(math.pi / T)) / 2
                    for base_lr, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
                * (group["lr"] - eta_min) + eta_min for group in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


class WarmupCosine:
    """The multiplier of :func:`warmup_cosine` (a callable object, so ``LambdaLR.state_dict`` saves it)."""

    def __init__(self, warmup_steps: int, total_steps: int, min_lr_ratio: float = 0.0):
        if warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {warmup_steps}")
        if total_steps < warmup_steps or total_steps <= 0:
            raise ValueError(f"total_steps must be positive and >= warmup_steps, got total_steps={total_steps}, "
                             f"warmup_steps={warmup_steps}")
        if not 0.0 <= min_lr_ratio <= 1.0:
            raise ValueError(f"min_lr_ratio must be in [0, 1], got {min_lr_ratio}")
        self.warmup_steps = int(warmup_steps)
        self.total_steps = int(total_steps)
        self.min_lr_ratio = float(min_lr_ratio)

    def __call__(self, step: int) -> float:
        if step < self.warmup_steps:
            return (step + 1) / self.warmup_steps
        if step >= self.total_steps:
            return self.min_lr_ratio
        progress = (step - self.warmup_steps) / (self.total_steps - self.warmup_steps)
        return self.min_lr_ratio + (1.0 - self.min_lr_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))

    def __repr__(self):
        return (f"warmup_cosine(warmup_steps={self.warmup_steps}, total_steps={self.total_steps}, "
                f"min_lr_ratio={self.min_lr_ratio})")


def warmup_cosine(warmup_steps: int, total_steps: int, min_lr_ratio: float = 0.0) -> WarmupCosine:
    """An lr multiplier for :class:`LambdaLR`: linear warmup, then cosine decay to ``min_lr_ratio``.

    * step ``s < warmup_steps``: ``(s + 1) / warmup_steps`` (so the first
      update already moves, and step ``warmup_steps - 1`` reaches the full lr);
    * ``warmup_steps <= s < total_steps``: ``r + (1 - r) (1 + cos(pi p)) / 2``
      with ``p = (s - warmup_steps) / (total_steps - warmup_steps)`` going from
      0 to 1 and ``r = min_lr_ratio``;
    * ``s >= total_steps``: ``min_lr_ratio``.
    """
    return WarmupCosine(warmup_steps, total_steps, min_lr_ratio)


# ============================================================================ torch's other schedules
# Each get_lr() is torch's recursive rule (it multiplies the lr the groups hold now, so
# schedulers can be chained); _get_closed_form_lr() is the value as a function of last_epoch,
# used by step(epoch). Both give the same sequence; the recursive one is what step() uses.

def _current(optimizer) -> list[float]:
    return [group["lr"] for group in optimizer.param_groups]


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` steps: ``lr = initial_lr · gamma^(t // step_size)``."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        self.step_size = _check_number(step_size, "StepLR", "step_size")
        self.gamma = _check_number(gamma, "StepLR", "gamma")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _current(self.optimizer)
        return [lr * self.gamma for lr in _current(self.optimizer)]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each milestone step (a milestone listed twice counts twice)."""

    def __init__(self, optimizer: Optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        if isinstance(milestones, (str, bytes)) or not hasattr(milestones, "__iter__"):
            raise TypeError(f"MultiStepLR: milestones must be a list of step counts, got "
                            f"{type(milestones).__name__} ({milestones!r})")
        milestones = list(milestones)
        for i, m in enumerate(milestones):
            _check_number(m, "MultiStepLR", f"milestones[{i}]")
        self.milestones = Counter(milestones)
        self.gamma = _check_number(gamma, "MultiStepLR", "gamma")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch not in self.milestones:
            return _current(self.optimizer)
        return [lr * self.gamma ** self.milestones[self.last_epoch] for lr in _current(self.optimizer)]

    def _get_closed_form_lr(self) -> list[float]:
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch) for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every step: ``lr = initial_lr · gamma^t``."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = _check_number(gamma, "ExponentialLR", "gamma")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return _current(self.optimizer)
        return [lr * self.gamma for lr in _current(self.optimizer)]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """The lr factor goes linearly from ``start_factor`` to ``end_factor`` over ``total_iters`` steps,
    then stays: ``lr = initial_lr · (s + (e − s) · min(t, T) / T)``.

    Recursively (torch's rule), step t multiplies the current lr by
    ``1 + (e − s) / (T s + (t − 1)(e − s))``, the ratio of consecutive closed-form factors.
    """

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):
        _check_number(total_iters, "LinearLR", "total_iters")
        if _check_number(start_factor, "LinearLR", "start_factor") > 1.0 or start_factor <= 0:
            raise ValueError(f"LinearLR: starting multiplicative factor expected to be greater than 0 and less "
                             f"or equal to 1, got start_factor={start_factor}")
        if _check_number(end_factor, "LinearLR", "end_factor") > 1.0 or end_factor < 0:
            raise ValueError(f"LinearLR: ending multiplicative factor expected to be between 0 and 1, got "
                             f"end_factor={end_factor}")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in _current(self.optimizer)]
        if self._is_initial or self.last_epoch > self.total_iters:
            return _current(self.optimizer)
        s, e, T = self.start_factor, self.end_factor, self.total_iters
        return [lr * (1.0 + (e - s) / (T * s + (self.last_epoch - 1) * (e - s))) for lr in _current(self.optimizer)]

    def _get_closed_form_lr(self) -> list[float]:
        s, e, T = self.start_factor, self.end_factor, self.total_iters
        return [base_lr * (s + (e - s) * min(T, self.last_epoch) / T) for base_lr in self.base_lrs]


class ConstantLR(LRScheduler):
    """``lr = initial_lr · factor`` for the first ``total_iters`` steps, then ``initial_lr``."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch: int = -1):
        _check_number(total_iters, "ConstantLR", "total_iters")
        if _check_number(factor, "ConstantLR", "factor") > 1.0 or factor < 0:
            raise ValueError(f"ConstantLR: constant multiplicative factor expected to be between 0 and 1, "
                             f"got factor={factor}")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.factor for lr in _current(self.optimizer)]
        if self.last_epoch != self.total_iters:
            return _current(self.optimizer)
        return [lr * (1.0 / self.factor) for lr in _current(self.optimizer)]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base_lr in self.base_lrs]


def _per_group(name: str, optimizer: Optimizer, value) -> list:
    """One value per parameter group (a list/tuple must have one entry per group)."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has "
                             f"{len(value)} values, param_groups has {len(optimizer.param_groups)}.")
        return list(value)
    return [value] * len(optimizer.param_groups)


class OneCycleLR(LRScheduler):
    """The 1cycle policy: the lr rises from ``max_lr / div_factor`` to ``max_lr`` over the first
    ``pct_start`` of ``total_steps``, then anneals to ``initial_lr / final_div_factor``
    (``three_phase``: back to the initial lr first, then down to the minimum). Each phase
    interpolates with ``anneal_strategy`` 'cos' (``end + (start − end)(1 + cos πp)/2``) or
    'linear' over the fraction p of the phase done. With ``cycle_momentum`` the momentum
    (SGD) or beta1 (Adam) moves the opposite way, between ``max_momentum`` and ``base_momentum``.
    """

    def __init__(self, optimizer: Optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start: float = 0.3, anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum=0.85, max_momentum=0.95, div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1):
        self.optimizer = _check_optimizer(optimizer, "OneCycleLR")
        for arg, v in (("div_factor", div_factor), ("final_div_factor", final_div_factor)):
            _check_number(v, "OneCycleLR", arg)
        for i, m in enumerate(max_lr if isinstance(max_lr, (list, tuple)) else [max_lr]):
            _check_number(m, "OneCycleLR", "max_lr" if not isinstance(max_lr, (list, tuple)) else f"max_lr[{i}]")
        if total_steps is not None:
            if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        n = self.total_steps
        if three_phase:
            self._schedule_phases = [
                dict(end_step=float(pct_start * n) - 1, start_lr="initial_lr", end_lr="max_lr",
                     start_momentum="max_momentum", end_momentum="base_momentum"),
                dict(end_step=float(2 * pct_start * n) - 2, start_lr="max_lr", end_lr="initial_lr",
                     start_momentum="base_momentum", end_momentum="max_momentum"),
                dict(end_step=n - 1, start_lr="initial_lr", end_lr="min_lr",
                     start_momentum="max_momentum", end_momentum="max_momentum")]
        else:
            self._schedule_phases = [
                dict(end_step=float(pct_start * n) - 1, start_lr="initial_lr", end_lr="max_lr",
                     start_momentum="max_momentum", end_momentum="base_momentum"),
                dict(end_step=n - 1, start_lr="max_lr", end_lr="min_lr",
                     start_momentum="base_momentum", end_momentum="max_momentum")]
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for m, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = m / div_factor
                group["max_lr"] = m
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            maxes = _per_group("max_momentum", optimizer, max_momentum)
            bases = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for m, b, group in zip(maxes, bases, optimizer.param_groups):
                    self._set_momentum(group, m)
                    group["max_momentum"] = m
                    group["base_momentum"] = b
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: dict, value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step - start_step) / (end_step - start_step)
                    lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal(group[phase["start_momentum"]],
                                                               group[phase["end_momentum"]], pct))
                    break
                start_step = phase["end_step"]
        return lrs


class _SchedulerSequence(LRScheduler):
    """What SequentialLR and ChainedScheduler share: the checks of the schedulers they are given,
    and a ``state_dict`` holding each scheduler's own (torch's layout)."""

    def _check_schedulers(self, schedulers, optimizer, what: str = "scheduler") -> None:
        name = type(self).__name__
        if isinstance(schedulers, (str, bytes)) or not hasattr(schedulers, "__len__"):
            raise TypeError(f"{name}: schedulers must be a list of schedulers, got {type(schedulers).__name__}")
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one {what}, but got no scheduler.")
        for i, scheduler in enumerate(schedulers):
            if not hasattr(scheduler, "optimizer"):
                raise TypeError(f"{name} at index {i} should have `optimizer` as its attribute.")
            if isinstance(scheduler, ReduceLROnPlateau):
                raise ValueError(f"{name} does not support `ReduceLROnPlateau` scheduler as it requires additional "
                                 f"kwargs to be specified when calling `step`, but got one at index {i} in the "
                                 "given schedulers sequence.")
            if scheduler.optimizer is not optimizer:
                raise ValueError(f"{name} expects all schedulers to belong to the same optimizer, but got "
                                 f"scheduler {type(scheduler).__name__} at index {i} with a different optimizer")

    def state_dict(self) -> dict:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        schedulers = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for scheduler, saved in zip(self._schedulers, schedulers):
            scheduler.load_state_dict(saved)


class SequentialLR(_SchedulerSequence):
    """Run ``schedulers[0]`` until ``milestones[0]``, then ``schedulers[1]`` (restarted from its
    own step 0) until ``milestones[1]``, ... — e.g. a LinearLR warmup followed by a decay."""

    def __init__(self, optimizer: Optimizer, schedulers, milestones, last_epoch: int = -1):
        self._check_schedulers(schedulers, optimizer)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be one more than the "
                             f"number of milestone points, but got number of schedulers {len(schedulers)} and the "
                             f"number of milestones to be equal to {len(milestones)}")
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:   # undo what the schedulers' constructors did
            group["lr"] = group["initial_lr"]
        for scheduler in self._schedulers:
            _undo_step(scheduler)
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = self._schedulers[idx].get_last_lr()

    def step(self) -> None:
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)    # a new phase starts from its own step 0
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_SchedulerSequence):
    """Step every scheduler of ``schedulers`` at each ``step()``, in order: their factors compose
    (e.g. a ConstantLR warmup times an ExponentialLR decay). ``optimizer`` defaults to the first
    scheduler's; every scheduler must drive that one."""

    def __init__(self, schedulers, optimizer: Optimizer | None = None):
        if not isinstance(schedulers, (str, bytes)) and hasattr(schedulers, "__len__") and len(schedulers) \
                and optimizer is None:
            optimizer = getattr(schedulers[0], "optimizer", None)
        self._check_schedulers(schedulers, optimizer, "scheduler to be chained")
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _current(self._schedulers[-1].optimizer)

    def step(self) -> None:
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = _current(self._schedulers[-1].optimizer)


def _undo_step(scheduler) -> None:
    """torch's ``recursive_undo``: take back the constructor's step (nested SequentialLRs too)."""
    if hasattr(scheduler, "_schedulers"):
        for s in scheduler._schedulers:
            _undo_step(s)
    elif hasattr(scheduler, "last_epoch"):
        scheduler.last_epoch -= 1


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from ``initial_lr`` to ``eta_min`` over T_i steps, then a restart; the
    period starts at ``T_0`` and is multiplied by ``T_mult`` at each restart:
    ``lr = eta_min + (initial_lr − eta_min)(1 + cos(π T_cur / T_i)) / 2``."""

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1):
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base_lr in self.base_lrs]

    def step(self, epoch=None) -> None:
        """Advance one step, or jump to (possibly fractional) ``epoch``: T_cur and T_i follow."""
        self._step_count += 1
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._write(self.get_lr())


class ReduceLROnPlateau(LRScheduler):
    """Multiply the lr by ``factor`` when ``step(metric)`` has not improved on the best value for
    more than ``patience`` calls ('min' mode: lower is better; ``threshold`` in 'rel' or 'abs'
    terms), then wait ``cooldown`` calls; never below ``min_lr``, and no change smaller than ``eps``."""

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0, min_lr=0,
                 eps: float = 1e-8):
        if _check_number(factor, "ReduceLROnPlateau", "factor") >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor should be < 1.0, got {factor}")
        _check_optimizer(optimizer, "ReduceLROnPlateau")
        for arg, v in (("patience", patience), ("cooldown", cooldown)):
            _check_number(v, "ReduceLROnPlateau", arg)
        for arg, v in (("threshold", threshold), ("eps", eps)):
            _check_number(v, "ReduceLROnPlateau", arg)
        self.factor = factor
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = _current(optimizer)
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _init_is_better(self, mode, threshold, threshold_mode) -> None:
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min":
            return a < (best * (1.0 - self.threshold) if self.threshold_mode == "rel" else best - self.threshold)
        return a > (best * (self.threshold + 1.0) if self.threshold_mode == "rel" else best + self.threshold)

    def step(self, metrics, epoch=None) -> None:
        current = float(metrics)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0   # bad epochs during cooldown are ignored
        if self.num_bad_epochs > self.patience:
            for i, group in enumerate(self.optimizer.param_groups):
                old = float(group["lr"])
                new = max(old * self.factor, self.min_lrs[i])
                if old - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _current(self.optimizer)

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)
