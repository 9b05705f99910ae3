"""Stochastic gradient descent with momentum, Nesterov momentum and weight decay (``torch.optim.SGD``)."""
from __future__ import annotations

import numpy as np

from .. import kernels
from .optimizer import Optimizer, check_hyperparameter


class SGD(Optimizer):
    r"""``torch.optim.SGD``: same signature, defaults, update and state (``momentum_buffer``).

    One step for parameter :math:`\theta` with gradient :math:`g` (lr
    :math:`\gamma`, momentum :math:`\mu`, dampening :math:`\tau`, weight decay
    :math:`\lambda`)::

        g <- -g                         if maximize
        g <- g + lambda * theta         if weight_decay != 0  (L2 penalty lambda/2 |theta|^2)
        if momentum != 0:
            b <- g                      at the first step (no dampening applied)
            b <- mu * b + (1 - tau) g   afterwards
            g <- g + mu * b             if nesterov
            g <- b                      otherwise
        theta <- theta - gamma * g

    Note the momentum form: torch (and this class) accumulates gradients in
    ``b`` and multiplies by ``lr`` at the update, unlike Sutskever et al.'s
    ``v <- mu v + lr g``; the two differ when ``lr`` changes during training.
    """

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False, foreach=None,
                 differentiable: bool = False, fused=None):
        if check_hyperparameter(lr, "learning rate", "lr") < 0.0:
            raise ValueError(f"Invalid learning rate: {lr} (lr must be >= 0)")
        if check_hyperparameter(momentum, "momentum value", "momentum") < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum} (momentum must be >= 0)")
        if check_hyperparameter(weight_decay, "weight_decay value", "weight_decay") < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay} (weight_decay must be >= 0)")
        check_hyperparameter(dampening, "dampening value", "dampening")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError(f"Nesterov momentum requires a momentum and zero dampening "
                             f"(got momentum={momentum}, dampening={dampening})")
        if differentiable:
            raise ValueError("SGD: differentiable=True (backpropagating through the optimizer step) is not "
                             "supported: the step updates the parameter arrays in place")
        # foreach and fused (torch's kernel choices) are accepted: one loop here gives the same values
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Update every parameter that has a gradient; return ``closure()``'s loss if given."""
        loss = self._evaluate_closure(closure)
        for group in self.param_groups:
            lr, momentum, dampening = float(group["lr"]), float(group["momentum"]), float(group["dampening"])
            weight_decay, nesterov = float(group["weight_decay"]), group["nesterov"]
            for p, grad in self._params_with_grad(group):  # grad already negated if maximize
                if self._kernel_step(p, grad, lr, momentum, dampening, weight_decay, nesterov):
                    p._bump()                      # the same operations in one C pass (docs/kernels.md)
                    continue
                if weight_decay != 0:
                    grad = grad + weight_decay * p._data
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = np.array(grad, dtype=p._data.dtype)  # a copy; an array even when 0-d
                        state["momentum_buffer"] = buf
                    else:
                        buf *= momentum
                        buf += (1 - dampening) * grad
                    grad = grad + momentum * buf if nesterov else buf
                p._data -= lr * grad
                p._bump()
        return loss

    def _kernel_step(self, p, grad, lr, momentum, dampening, weight_decay, nesterov) -> bool:
        """The step below for one parameter as ``kernels.sgd`` (bit-identical, one pass), or False
        (nothing done) when it does not apply: the NumPy code runs."""
        buf, first = None, False
        if momentum != 0:
            buf = self.state[p].get("momentum_buffer")
            if buf is None:
                buf, first = np.empty_like(p._data, order="C"), True
        if not kernels.sgd(p._data, grad, buf, first, lr=lr, momentum=momentum, dampening=dampening,
                           weight_decay=weight_decay, nesterov=nesterov):
            return False
        if first:
            self.state[p]["momentum_buffer"] = buf
        return True
