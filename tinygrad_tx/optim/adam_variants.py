"""Adamax, NAdam and RAdam (``torch.optim.Adamax`` / ``NAdam`` / ``RAdam``): Adam's moment estimates
with another norm, Nesterov momentum, or a rectified warmup.

Each class has torch's signature, defaults, errors, state names and ``state_dict`` layout, and
its update is torch's single-tensor algorithm (the one torch runs on the CPU) on NumPy arrays,
in place, in torch's order of operations. State ``step`` (and NAdam's ``mu_product``) are float32
0-d arrays (float64 under a float64 default: ``optimizer.step_dtype``), as torch keeps them. ``foreach`` is accepted and changes nothing; ``capturable`` and
``differentiable`` only in their default (False).
"""
from __future__ import annotations

import numpy as np

from .adam import lerp_
from .adaptive import _scalar_step, check_cpu_flags, check_non_negative, decay_weights, ema_square_, init_state
from .optimizer import Optimizer, check_betas, step_dtype


def _check_adam_args(lr, eps, betas, weight_decay):
    check_non_negative(lr, "learning rate", "lr")
    check_non_negative(eps, "epsilon value", "eps")
    betas = check_betas(betas)
    check_non_negative(weight_decay, "weight_decay value", "weight_decay")
    return betas


class Adamax(Optimizer):
    r"""``torch.optim.Adamax`` (Kingma & Ba 2015, section 7.1): Adam with the infinity norm.

    State per parameter: ``step``, ``exp_avg`` (m) and ``exp_inf`` (u). One step t::

        g <- -g                              if maximize
        g <- g + λ θ                          if weight_decay != 0
        m <- lerp(m, g, 1 − β1) = β1 m + (1 − β1) g
        u <- max(β2 u, |g| + eps)
        θ <- θ − γ / (1 − β1^t) · m / u

    ``u`` is the limit p → ∞ of Adam's p-th moment estimate, a decaying maximum of |g| that
    needs no bias correction.
    """

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 foreach=None, *, maximize: bool = False, differentiable: bool = False, capturable: bool = False):
        betas = _check_adam_args(lr, eps, betas, weight_decay)
        check_cpu_flags("Adamax", capturable, differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Update every parameter that has a gradient; return ``closure()``'s loss if given."""
        loss = self._evaluate_closure(closure)
        for group in self.param_groups:
            lr, eps, weight_decay = float(group["lr"]), float(group["eps"]), float(group["weight_decay"])
            beta1, beta2 = (float(b) for b in group["betas"])
            for p, grad in self._params_with_grad(group):  # grad already negated if maximize
                state = init_state(self.state[p], p, "exp_avg", "exp_inf")
                step = _scalar_step(state)
                grad = decay_weights(p, grad, lr, weight_decay)
                exp_avg = lerp_(state["exp_avg"], grad, 1 - beta1)
                exp_inf = state["exp_inf"]
                exp_inf *= beta2
                np.maximum(exp_inf, np.abs(grad) + eps, out=exp_inf)
                clr = lr / (1 - beta1 ** step)
                p._data += -clr * exp_avg / exp_inf
                p._bump()
        return loss


class NAdam(Optimizer):
    r"""``torch.optim.NAdam`` (Dozat 2016): Adam with Nesterov momentum.

    State per parameter: ``step``, ``mu_product`` (Π μ_i), ``exp_avg`` (m), ``exp_avg_sq`` (v).
    One step t (momentum decay ψ)::

        g <- -g                                     if maximize
        θ <- θ (1 − γ λ)                             if weight_decay and decoupled_weight_decay
        g <- g + λ θ                                 if weight_decay and not decoupled
        μ_t = β1 (1 − ½ · 0.96^(t ψ)),   μ_{t+1} = β1 (1 − ½ · 0.96^((t+1) ψ))
        P_t = P_{t−1} μ_t                            (``mu_product``, float32 as in torch: ``step_dtype``)
        m <- lerp(m, g, 1 − β1);   v <- β2 v + (1 − β2) g²
        d = sqrt(v / (1 − β2^t)) + eps
        θ <- θ − γ (1 − μ_t) / (1 − P_t) · g / d − γ μ_{t+1} / (1 − P_t μ_{t+1}) · m / d

    The second term looks one step ahead with the next momentum coefficient (Nesterov); μ_t
    warms up from β1/2 towards β1.
    """

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False):
        betas = _check_adam_args(lr, eps, betas, weight_decay)
        check_non_negative(momentum_decay, "momentum_decay value", "momentum_decay")
        check_cpu_flags("NAdam", capturable, differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    @staticmethod
    def _cast_state(p, idx: int, name: str, value):
        """``mu_product`` is a scalar: loaded, it takes the parameter's float dtype, as torch casts it."""
        if name == "mu_product":
            arr = np.array(value, copy=True).reshape(())
            return arr.astype(p._data.dtype) if p._data.dtype.kind == "f" else arr
        return Optimizer._cast_state(p, idx, name, value)

    def step(self, closure=None):
        """Update every parameter that has a gradient; return ``closure()``'s loss if given."""
        loss = self._evaluate_closure(closure)
        for group in self.param_groups:
            lr, eps, weight_decay = float(group["lr"]), float(group["eps"]), float(group["weight_decay"])
            beta1, beta2 = (float(b) for b in group["betas"])
            momentum_decay, decoupled = float(group["momentum_decay"]), group["decoupled_weight_decay"]
            for p, grad in self._params_with_grad(group):  # grad already negated if maximize
                state = self.state[p]
                if len(state) == 0:
                    init_state(state, p)
                    state["mu_product"] = np.ones((), dtype=step_dtype())   # torch's key order
                    state["exp_avg"], state["exp_avg_sq"] = np.zeros_like(p._data), np.zeros_like(p._data)
                step = _scalar_step(state)
                bias_correction2 = 1 - beta2 ** step
                grad = decay_weights(p, grad, lr, weight_decay, decoupled)
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                mu_product = state["mu_product"]
                mu_product *= mu                     # in the array's dtype (step_dtype), as torch's tensor
                exp_avg = lerp_(state["exp_avg"], grad, 1 - beta1)
                exp_avg_sq = ema_square_(state["exp_avg_sq"], grad, beta2)
                denom = np.sqrt(exp_avg_sq / bias_correction2)
                denom += eps
                product = float(mu_product)
                mu_product_next = product * mu_next
                p._data += (-lr * (1.0 - mu) / (1.0 - product)) * grad / denom
                p._data += ((-lr * mu_next) / (1.0 - mu_product_next)) * exp_avg / denom
                p._bump()
        return loss


class RAdam(Optimizer):
    r"""``torch.optim.RAdam`` (Liu et al. 2020, "On the Variance of the Adaptive Learning Rate").

    State per parameter: ``step``, ``exp_avg`` (m), ``exp_avg_sq`` (v). One step t::

        g <- -g                                     if maximize
        θ <- θ (1 − γ λ)                             if weight_decay and decoupled_weight_decay
        g <- g + λ θ                                 if weight_decay and not decoupled
        m <- lerp(m, g, 1 − β1);   v <- β2 v + (1 − β2) g²
        m̂ = m / (1 − β1^t)
        ρ_∞ = 2 / (1 − β2) − 1,    ρ_t = ρ_∞ − 2 t β2^t / (1 − β2^t)
        if ρ_t > 5:  r_t = sqrt((ρ_t − 4)(ρ_t − 2) ρ_∞ / ((ρ_∞ − 4)(ρ_∞ − 2) ρ_t))
                     θ <- θ − γ m̂ · sqrt(1 − β2^t) / (sqrt(v) + eps) · r_t
        else:        θ <- θ − γ m̂                   (plain momentum while v is too noisy)

    ρ_t is the length of the simple moving average that v approximates; while it is short
    the adaptive step's variance is unbounded, and r_t rectifies it.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 decoupled_weight_decay: bool = False, *, foreach=None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False):
        betas = _check_adam_args(lr, eps, betas, weight_decay)
        check_cpu_flags("RAdam", capturable, differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Update every parameter that has a gradient; return ``closure()``'s loss if given."""
        loss = self._evaluate_closure(closure)
        for group in self.param_groups:
            lr, eps, weight_decay = float(group["lr"]), float(group["eps"]), float(group["weight_decay"])
            beta1, beta2 = (float(b) for b in group["betas"])
            decoupled = group["decoupled_weight_decay"]
            for p, grad in self._params_with_grad(group):  # grad already negated if maximize
                state = init_state(self.state[p], p, "exp_avg", "exp_avg_sq")
                step = _scalar_step(state)
                grad = decay_weights(p, grad, lr, weight_decay, decoupled)
                exp_avg = lerp_(state["exp_avg"], grad, 1 - beta1)
                exp_avg_sq = ema_square_(state["exp_avg_sq"], grad, beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                bias_corrected_exp_avg = exp_avg / bias_correction1
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    adaptive_lr = (bias_correction2 ** 0.5) / (np.sqrt(exp_avg_sq) + eps)
                    p._data -= bias_corrected_exp_avg * lr * adaptive_lr * rect
                else:
                    p._data -= bias_corrected_exp_avg * lr
                p._bump()
        return loss
