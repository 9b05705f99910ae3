"""RMSprop, Adagrad and Adadelta (``torch.optim.RMSprop`` / ``Adagrad`` / ``Adadelta``): per-coordinate
step sizes from a running sum or average of squared gradients.

Each class has torch's signature, defaults, errors, state names and ``state_dict`` layout, and
its update is torch's single-tensor algorithm (the one torch runs on the CPU), written on NumPy
arrays in place, in torch's order of operations. ``foreach`` is accepted and changes nothing
(there is one loop here); ``capturable`` and ``differentiable`` exist for torch's signature: only
their default (False) is supported.
"""
from __future__ import annotations

import numpy as np

from .adam import lerp_
from .optimizer import Optimizer, check_hyperparameter, step_dtype


def check_non_negative(value, what: str, arg: str):
    """torch's ``if not 0.0 <= value: raise ValueError(f"Invalid {what}: {value}")``, with the
    argument named and a non-number refused as a TypeError (``check_hyperparameter``)."""
    if not 0.0 <= check_hyperparameter(value, what, arg):
        raise ValueError(f"Invalid {what}: {value} ({arg} must be >= 0)")
    return value


def check_cpu_flags(cls: str, capturable: bool, differentiable: bool) -> None:
    if capturable:
        raise ValueError(f"{cls}: capturable=True is for CUDA graphs; tinygrad_tx runs on the CPU "
                         "(torch also refuses it for CPU parameters)")
    if differentiable:
        raise ValueError(f"{cls}: differentiable=True (backpropagating through the optimizer step) is not "
                         "supported: the step updates the parameter arrays in place")


def init_state(state: dict, p, *names: str) -> dict:
    """At a parameter's first step: ``step`` (a 0-d array of ``step_dtype()``, as torch keeps it) and a zero
    array in the parameter's dtype for each of ``names``."""
    if len(state) == 0:
        state["step"] = np.zeros((), dtype=step_dtype())
        for name in names:
            state[name] = np.zeros_like(p._data)
    return state


def decay_weights(p, grad, lr: float, weight_decay: float, decoupled: bool = False):
    """Weight decay λ: ``g + λ θ`` (an L2 penalty), or with ``decoupled`` θ <- θ (1 − γ λ) in place."""
    if weight_decay == 0:
        return grad
    if decoupled:
        p._data *= 1 - lr * weight_decay
        return grad
    return grad + weight_decay * p._data


def ema_square_(avg: np.ndarray, grad: np.ndarray, decay: float) -> np.ndarray:
    """``avg <- decay · avg + (1 − decay) g²`` in place (torch's ``mul_(decay).addcmul_(g, g, 1 − decay)``)."""
    avg *= decay
    avg += (1 - decay) * grad * grad
    return avg


def _scalar_step(state: dict) -> float:
    """Increment ``state["step"]`` (a 0-d array of ``step_dtype()``, as torch keeps it) and return it."""
    state["step"] += 1
    return float(state["step"])


class RMSprop(Optimizer):
    r"""``torch.optim.RMSprop`` (Hinton's lecture 6e; ``centered`` as in Graves 2013).

    State per parameter: ``step``, ``square_avg`` (v), ``momentum_buffer`` (b, when
    ``momentum > 0``) and ``grad_avg`` (ḡ, when ``centered``). One step (lr γ, smoothing α,
    momentum μ, weight decay λ)::

        g <- -g                              if maximize
        g <- g + λ θ                          if weight_decay != 0
        v <- α v + (1 − α) g²
        ḡ <- lerp(ḡ, g, 1 − α) = α ḡ + (1 − α) g       if centered
        d <- sqrt(v − ḡ²) + eps   if centered,  else  sqrt(v) + eps
        b <- μ b + g / d;  θ <- θ − γ b       if momentum > 0
        θ <- θ − γ g / d                      otherwise

    Dividing by the root-mean-square of recent gradients gives every coordinate a step of
    about γ whatever its gradient's scale; centering divides by the standard deviation instead.
    """

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0,
                 momentum: float = 0, centered: bool = False, capturable: bool = False, foreach=None,
                 maximize: bool = False, differentiable: bool = False):
        check_non_negative(lr, "learning rate", "lr")
        check_non_negative(eps, "epsilon value", "eps")
        check_non_negative(momentum, "momentum value", "momentum")
        check_non_negative(weight_decay, "weight_decay value", "weight_decay")
        check_non_negative(alpha, "alpha value", "alpha")
        check_cpu_flags("RMSprop", capturable, differentiable)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Update every parameter that has a gradient; return ``closure()``'s loss if given."""
        loss = self._evaluate_closure(closure)
        for group in self.param_groups:
            lr, alpha, eps = float(group["lr"]), float(group["alpha"]), float(group["eps"])
            weight_decay, momentum, centered = float(group["weight_decay"]), float(group["momentum"]), group["centered"]
            for p, grad in self._params_with_grad(group):  # grad already negated if maximize
                state = init_state(self.state[p], p, "square_avg", *(["momentum_buffer"] if momentum > 0 else []),
                                   *(["grad_avg"] if centered else []))
                _scalar_step(state)
                grad = decay_weights(p, grad, lr, weight_decay)
                square_avg = ema_square_(state["square_avg"], grad, alpha)
                if centered:
                    grad_avg = lerp_(state["grad_avg"], grad, 1 - alpha)
                    avg = np.sqrt(square_avg - grad_avg * grad_avg)
                else:
                    avg = np.sqrt(square_avg)
                avg += eps
                if momentum > 0:
                    buf = state["momentum_buffer"]
                    buf *= momentum
                    buf += grad / avg
                    p._data += -lr * buf
                else:
                    p._data += -lr * grad / avg
                p._bump()
        return loss


class Adagrad(Optimizer):
    r"""``torch.optim.Adagrad`` (Duchi, Hazan & Singer 2011).

    State per parameter, created with the optimizer (as torch does): ``step`` and ``sum`` (s,
    starting at ``initial_accumulator_value``). One step t (lr γ, lr decay η, weight decay λ)::

        g <- -g                              if maximize
        g <- g + λ θ                          if weight_decay != 0
        γ_t = γ / (1 + (t − 1) η)
        s <- s + g²
        θ <- θ − γ_t g / (sqrt(s) + eps)

    The sum never decays, so the step of a coordinate shrinks with every large gradient it has
    seen: large early on for rare features, small for frequent ones.
    ``fused`` is accepted (torch has a fused CPU kernel): the result is the same.
    """

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach=None, *, maximize: bool = False,
                 differentiable: bool = False, fused=None):
        check_non_negative(lr, "learning rate", "lr")
        check_non_negative(lr_decay, "lr_decay value", "lr_decay")
        check_non_negative(weight_decay, "weight_decay value", "weight_decay")
        check_non_negative(initial_accumulator_value, "initial_accumulator_value value", "initial_accumulator_value")
        check_non_negative(eps, "epsilon value", "eps")
        check_cpu_flags("Adagrad", False, differentiable)
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p)

    def _init_state(self, p) -> dict:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = np.zeros((), dtype=step_dtype())
            state["sum"] = np.full_like(p._data, float(self.defaults["initial_accumulator_value"]))
        return state

    def step(self, closure=None):
        """Update every parameter that has a gradient; return ``closure()``'s loss if given."""
        loss = self._evaluate_closure(closure)
        for group in self.param_groups:
            lr, lr_decay, eps = float(group["lr"]), float(group["lr_decay"]), float(group["eps"])
            weight_decay = float(group["weight_decay"])
            for p, grad in self._params_with_grad(group):  # grad already negated if maximize
                state = self._init_state(p)   # a parameter added with add_param_group
                step = _scalar_step(state)
                grad = decay_weights(p, grad, lr, weight_decay)
                clr = lr / (1 + (step - 1) * lr_decay)
                state_sum = state["sum"]
                state_sum += grad * grad
                std = np.sqrt(state_sum)
                std += eps
                p._data += -clr * grad / std
                p._bump()
        return loss


class Adadelta(Optimizer):
    r"""``torch.optim.Adadelta`` (Zeiler 2012).

    State per parameter: ``step``, ``square_avg`` (v, squared gradients) and ``acc_delta``
    (u, squared updates). One step (lr γ, decay ρ, weight decay λ)::

        g <- -g                              if maximize
        g <- g + λ θ                          if weight_decay != 0
        v <- ρ v + (1 − ρ) g²
        Δ = sqrt(u + eps) / sqrt(v + eps) · g
        u <- ρ u + (1 − ρ) Δ²
        θ <- θ − γ Δ

    The ratio of the two root-mean-squares gives the update the parameter's units, so the
    method needs no learning rate in principle (torch's default γ = 1).
    """

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0,
                 foreach=None, *, capturable: bool = False, maximize: bool = False, differentiable: bool = False):
        check_non_negative(lr, "learning rate", "lr")
        if not 0.0 <= check_hyperparameter(rho, "rho value", "rho") <= 1.0:
            raise ValueError(f"Invalid rho value: {rho} (rho must be in [0, 1])")
        check_non_negative(eps, "epsilon value", "eps")
        check_non_negative(weight_decay, "weight_decay value", "weight_decay")
        check_cpu_flags("Adadelta", capturable, differentiable)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Update every parameter that has a gradient; return ``closure()``'s loss if given."""
        loss = self._evaluate_closure(closure)
        for group in self.param_groups:
            lr, rho, eps, weight_decay = (float(group[k]) for k in ("lr", "rho", "eps", "weight_decay"))
            for p, grad in self._params_with_grad(group):  # grad already negated if maximize
                state = init_state(self.state[p], p, "square_avg", "acc_delta")
                _scalar_step(state)
                grad = decay_weights(p, grad, lr, weight_decay)
                std = np.sqrt(ema_square_(state["square_avg"], grad, rho) + eps)
                delta = np.sqrt(state["acc_delta"] + eps)
                delta /= std
                delta *= grad
                ema_square_(state["acc_delta"], delta, rho)
                p._data += -lr * delta
                p._bump()
        return loss
