"""Adam and AdamW (``torch.optim.Adam`` / ``torch.optim.AdamW``), with AMSGrad."""
from __future__ import annotations

import numbers

import numpy as np

from .optimizer import Optimizer


def lerp_(start: np.ndarray, end: np.ndarray, weight: float) -> np.ndarray:
    """``start <- start + weight * (end - start)`` in place, with torch.lerp's two-sided formula.

    For ``|weight| >= 0.5`` torch evaluates the same line from the other end,
    ``end - (end - start) * (1 - weight)``, which is exact at ``weight = 1``
    and better conditioned near it. The weight is rounded to the array's dtype
    first, as torch's kernel does.
    """
    w = start.dtype.type(weight)
    if abs(w) < 0.5:
        start += w * (end - start)
    else:
        start[...] = end - (end - start) * (1 - w)
    return start


class Adam(Optimizer):
    r"""``torch.optim.Adam``: same signature, defaults, update and state.

    State per parameter: ``step`` (a float32 0-d array, as torch keeps it),
    ``exp_avg`` (m), ``exp_avg_sq`` (v) and, with ``amsgrad``, ``max_exp_avg_sq``.
    One step, t = step count after incrementing::

        g <- -g                                   if maximize
        theta <- theta * (1 - lr * lambda)        if weight_decay and decoupled_weight_decay (AdamW)
        g <- g + lambda * theta                   if weight_decay and not decoupled (L2 penalty)
        m <- beta1 m + (1 - beta1) g              (computed as lerp(m, g, 1 - beta1))
        v <- beta2 v + (1 - beta2) g * g
        v_max <- max(v_max, v)                    if amsgrad; then v_max replaces v below
        theta <- theta - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

    The last line is ``theta - lr * m_hat / (sqrt(v_hat) + eps)`` with the
    bias-corrected moments ``m_hat = m / (1 - beta1^t)`` and
    ``v_hat = v / (1 - beta2^t)``: the moving averages start at 0, so at step
    t their expectation is ``(1 - beta^t)`` times that of the gradient moment;
    dividing undoes that shrinkage. It is arranged as torch arranges it, with
    ``eps`` added to ``sqrt(v) / sqrt(1 - beta2^t)``, so results agree to
    rounding.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, maximize: bool = False,
                 decoupled_weight_decay: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if len(betas) != 2 or not all(isinstance(b, numbers.Real) for b in betas):
            raise ValueError(f"betas must be a pair of floats, got {betas!r}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=(float(betas[0]), float(betas[1])), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Update every parameter that has a gradient; return ``closure()``'s loss if given."""
        loss = self._evaluate_closure(closure)
        for group in self.param_groups:
            beta1, beta2 = (float(b) for b in group["betas"])
            lr, eps, weight_decay = float(group["lr"]), float(group["eps"]), float(group["weight_decay"])
            amsgrad, decoupled = group["amsgrad"], group["decoupled_weight_decay"]
            for p, grad in self._params_with_grad(group):  # grad already negated if maximize
                state = self._init_state(p, amsgrad)
                state["step"] += 1
                step = float(state["step"])

                if weight_decay != 0:
                    if decoupled:
                        p.data *= 1 - lr * weight_decay
                    else:
                        grad = grad + weight_decay * p.data

                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                lerp_(exp_avg, grad, 1 - beta1)
                exp_avg_sq *= beta2
                exp_avg_sq += (1 - beta2) * grad * grad

                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                step_size = lr / bias_correction1
                bias_correction2_sqrt = bias_correction2 ** 0.5

                if amsgrad:
                    second = np.maximum(state["max_exp_avg_sq"], exp_avg_sq, out=state["max_exp_avg_sq"])
                else:
                    second = exp_avg_sq
                denom = np.sqrt(second) / bias_correction2_sqrt + eps
                p.data += -step_size * exp_avg / denom
        return loss

    def _init_state(self, p, amsgrad: bool) -> dict:
        """The state of ``p``, created at its first step (zeros in ``p``'s dtype)."""
        state = self.state[p]
        if len(state) == 0:
            state["step"] = np.zeros((), dtype=np.float32)
            state["exp_avg"] = np.zeros_like(p.data)
            state["exp_avg_sq"] = np.zeros_like(p.data)
            if amsgrad:
                state["max_exp_avg_sq"] = np.zeros_like(p.data)
        elif not isinstance(state["step"], np.ndarray) or state["step"].ndim != 0:
            state["step"] = np.asarray(float(np.asarray(state["step"]).reshape(())), dtype=np.float32)
        if amsgrad and "max_exp_avg_sq" not in state:
            raise ValueError("amsgrad=True but the loaded optimizer state of a parameter of shape "
                             f"{p.shape} has no 'max_exp_avg_sq' (it was saved with amsgrad=False)")
        return state


class AdamW(Adam):
    """``torch.optim.AdamW``: Adam with decoupled weight decay, default ``weight_decay=1e-2``.

    The decay shrinks the parameter directly, ``theta <- theta (1 - lr lambda)``,
    instead of adding ``lambda theta`` to the gradient, so it is not rescaled by
    the adaptive denominator (Loshchilov & Hutter, "Decoupled Weight Decay
    Regularization").
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True)

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
