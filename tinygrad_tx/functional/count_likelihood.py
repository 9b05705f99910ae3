"""Negative log-likelihoods of two distributions (torch.nn.functional's): ``poisson_nll_loss``
and ``gaussian_nll_loss``.

Both are composites of the engine's differentiable ops (exp, log, multiply, divide), written in
torch's order of operations, so their values and gradients — target's and var's included —
are torch's. Constant terms (the Stirling term's masked entries, log 2π) carry no gradient.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..tensor import Tensor, where
from ._util import as_tensor, check_real, loss_reduction, reduce_loss
from .distance import _clamped_keep_grad
from .margin import check_broadcast, float_tensors


def poisson_nll_loss(input, target, log_input: bool = True, full: bool = False, size_average=None,
                     eps: float = 1e-8, reduce=None, reduction: str = "mean") -> Tensor:
    """Poisson negative log-likelihood of counts ``target`` with rate λ
    (``torch.nn.functional.poisson_nll_loss``), dropping log(t!) unless ``full``:

        log_input:  ℓ = e^x - t x          (x = log λ),
        otherwise:  ℓ = x - t log(x + eps)  (x = λ),
        full:       + t log t - t + ½ log(2π t)  where t > 1 (Stirling's log t!; 0 for t ≤ 1).

    Gradients: dℓ/dx = e^x - t (or 1 - t/(x + eps)); dℓ/dt = -x (or -log(x + eps)), plus
    log t + 1/(2t) from the Stirling term where t > 1 (0 where t <= 1: the term is masked with
    ``where`` on a copy of t set to 1 there, so a target of 0 gets 0 where torch's masked_fill
    of log 0 gets 0·(-inf) = nan)."""
    op = "poisson_nll_loss"
    reduction = loss_reduction(op, reduction, size_average, reduce)
    x, t = float_tensors(op, input=input, target=target)
    check_broadcast(op, x, target=t)
    if log_input:
        loss = x.exp() - t * x
    else:
        loss = x - t * (x + check_real(op, "eps", eps)).log()
    if full:
        above = Tensor(t._data > 1)
        safe = where(above, t, 1.0)        # the masked entries' log never sees t <= 0
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + where(above, stirling, 0.0)
    return reduce_loss(loss, reduction)


def _gaussian_var(op: str, var, x: Tensor) -> Tensor:
    """``var`` as a Tensor that broadcasts to the input by torch's rules: the input's shape; the
    input's shape without its last dim (one variance per sample: unsqueezed); or the input's
    shape with exactly one dim of size 1 there. Negative entries are an error."""
    if isinstance(var, numbers.Real) and not isinstance(var, (bool, np.bool_)) and not isinstance(var, Tensor):
        if var < 0:
            raise ValueError(f"{op}: var has negative entry/entries (var={var})")
        return Tensor(np.full(x.shape, var, x._data.dtype))
    v = float_tensors(op, input=x, var=var)[1]
    if np.any(v._data < 0):
        raise ValueError(f"{op}: var has negative entry/entries")
    if v.shape != x.shape:
        if x.shape[:-1] == v.shape:
            return v.unsqueeze(-1)
        mismatched = sum(s for xs, s in zip(x.shape, v.shape) if xs != s)
        if not (v.ndim == x.ndim and mismatched == 1):
            raise ValueError(f"{op}: var is of incorrect size: var of shape {tuple(v.shape)} for input of shape "
                             f"{tuple(x.shape)} (expected the input's shape, its shape without the last dim, or "
                             f"one dim of size 1)")
    return v


def gaussian_nll_loss(input, target, var, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """Gaussian negative log-likelihood of ``target`` under N(input, var)
    (``torch.nn.functional.gaussian_nll_loss``):

        ℓ = ½ (log max(var, eps) + (x - t)² / max(var, eps))  (+ ½ log 2π if ``full``).

    As in torch, the clamp at ``eps`` is applied without its gradient (torch clamps in place
    under no_grad), so dℓ/dvar = ½ (1/v - (x - t)²/v²) with v the clamped value, also below eps.
    ``var`` may be a float, or a tensor of the input's shape, of its shape without the last dim,
    or with one dim of size 1 (broadcast; the gradient is summed back)."""
    op = "gaussian_nll_loss"
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{op}: {reduction} is not valid (expected 'none', 'mean' or 'sum')")
    x, t = float_tensors(op, input=input, target=target)
    check_broadcast(op, x, target=t)
    v = _clamped_keep_grad(_gaussian_var(op, var, x), check_real(op, "eps", eps))
    loss = 0.5 * (v.log() + (x - t) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return reduce_loss(loss, reduction)
