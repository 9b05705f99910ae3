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
import types

from .optimizer import Optimizer


class LRScheduler:
    """Base class: subclasses define ``get_lr()``, the lrs for the current ``last_epoch``."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
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
        self._step_count = 0
        self._is_initial = True
        self.step()
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
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            values = closed() if closed is not None else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        """Every attribute except the optimizer (plain Python values)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)


class LambdaLR(LRScheduler):
    """``lr = initial_lr * lr_lambda(last_epoch)``, one lambda for all groups or one per group.

    ``state_dict`` stores the attributes of lambdas that are callable objects
    (such as the one :func:`warmup_cosine` returns) and ``None`` for plain
    functions, exactly like torch.
    """

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1):
        self.optimizer = optimizer
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
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
        if T_max <= 0:
            raise ValueError(f"T_max must be a positive number of steps, got {T_max}")
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
