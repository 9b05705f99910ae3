"""Binary cross-entropy (on probabilities and on logits) and the Kullback-Leibler divergence.

Each is a pointwise Function of (input x, target t) giving both gradients; the reduction
('mean' over elements, 'sum', 'none'; ``kl_div`` also 'batchmean') is a composite of the
engine's Sum and Mean (their gradients are torch's). ``weight`` and ``pos_weight`` are
constants, as in torch (which refuses them requiring grad).
"""
from __future__ import annotations

import warnings

import numpy as np

from ..errors import InvalidArgumentError
from ..core.function import ArrayFunction
from ..core.grad_mode import is_grad_enabled
from ..autograd.node_names import named
from ..core.tensor import Tensor
from ._util import as_tensor, check_float, loss_reduction, reduce_loss
from .pointwise import sigmoid_np, softplus_np

# torch clamps the denominator p(1 - p) of BCE's input gradient at 1e-12 (a float32 constant)
_BCE_EPS = float(np.float32(1e-12))


class BinaryCrossEntropy(ArrayFunction):
    """ℓ = -w [t log p + (1 - t) log(1 - p)], each log clamped to >= -100 (torch's clamp keeps
    ℓ finite at p = 0 or 1, e.g. ℓ = 100 for p = 0, t = 1).

    dℓ/dp = -w [t/p - (1 - t)/(1 - p)] = w (p - t) / (p (1 - p)), the denominator clamped to
    >= 1e-12 as torch does;  dℓ/dt = -w [log p - log(1 - p)] = w (log(1 - p) - log p)
    (unclamped: ±inf at p = 0 or 1, as torch). Saved: p, t and w. float32 inputs are computed
    in float64 and rounded once (log(1 - p) - log p cancels near p = 1/2). The backward runs on
    Tensors (``create_graph=True`` differentiates it).
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, p, t, weight):
        ctx.save_for_backward(p, t, weight)
        p64, t64 = p.astype(np.float64), t.astype(np.float64)
        with np.errstate(divide="ignore"):
            log_p = np.maximum(np.log(p64), -100)
            log_q = np.maximum(np.log1p(-p64), -100)
        loss = -(t64 * log_p + (1 - t64) * log_q)
        return (loss if weight is None else loss * weight).astype(p.dtype)

    @staticmethod
    def backward(ctx, g):
        p, t, weight = ctx.saved_tensors
        dtype = np.result_type(p)
        p, t = np.astype(p, np.float64), np.astype(t, np.float64)
        gw = g if weight is None else g * weight
        dp = np.astype(gw * (p - t) / np.maximum(p * (1 - p), _BCE_EPS), dtype)
        dt = None
        if ctx.needs_input_grad[1]:
            with np.errstate(divide="ignore", invalid="ignore"):
                dt = np.astype(gw * (np.log1p(-p) - np.log(p)), dtype)
        return dp, dt, None


class BinaryCrossEntropyWithLogits(ArrayFunction):
    """ℓ = -w [π t log σ(x) + (1 - t) log(1 - σ(x))]  (π = ``pos_weight``, 1 if not given),
    computed as  w [π t sp(-x) + (1 - t) sp(x)]  since log σ(x) = -sp(-x) and
    log(1 - σ(x)) = -sp(x) (sp = softplus): no overflow, and no log of a rounded σ.

    dℓ/dx = w [(1 - t) σ(x) - π t σ(-x)]  (π = 1: w (σ(x) - t));
    dℓ/dt = w [π sp(-x) - sp(x)] = w [(π - 1) sp(-x) - x]  (sp(-x) - sp(x) = -x: exact, no
    cancellation). Saved: x, t, w, π. The backward runs on Tensors (``create_graph=True``).
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, t, weight, pos_weight):
        ctx.save_for_backward(x, t, weight, pos_weight)
        pos = t * softplus_np(-x)
        if pos_weight is not None:
            pos = pos * pos_weight
        loss = pos + (1 - t) * softplus_np(x)
        return loss if weight is None else loss * weight

    @staticmethod
    def backward(ctx, g):
        x, t, weight, pos_weight = ctx.saved_tensors
        gw = g if weight is None else g * weight
        if pos_weight is None:
            dx = gw * (sigmoid_np(x) - t)
        else:
            dx = gw * ((1 - t) * sigmoid_np(x) - pos_weight * t * sigmoid_np(-x))
        dt = None
        if ctx.needs_input_grad[1]:
            dt = -x if pos_weight is None else (pos_weight - 1) * softplus_np(-x) - x
            dt = gw * dt
        return dx, dt, None, None


class KLDivergence(ArrayFunction):
    """Pointwise KL term of log-probabilities x against a target t (probabilities, or
    log-probabilities when ``log_target``):

        ℓ = t (log t - x)  (0 where t = 0: torch's xlogy),     or  ℓ = e^t (t - x).

    dℓ/dx = -t  (or -e^t);   dℓ/dt = log t + t/t - x  — torch's xlogy derivative, whose t/t
    makes it nan at t = 0 — (or e^t (t - x + 1)). Saved: x and t. float32 is computed in
    float64 and rounded once (log t + 1 - x cancels). The backward runs on Tensors
    (``create_graph=True``).
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, t, *, log_target):
        ctx.save_for_backward(x, t)
        ctx.log_target = log_target
        dtype = np.result_type(x, t)
        x, t = x.astype(np.float64), t.astype(np.float64)
        if log_target:
            return (np.exp(t) * (t - x)).astype(dtype)
        with np.errstate(divide="ignore", invalid="ignore"):
            t_log_t = np.where(t == 0, 0, t * np.log(t))
        return (t_log_t - t * x).astype(dtype)

    @staticmethod
    def backward(ctx, g):
        x, t = ctx.saved_tensors
        dtype = np.result_type(x, t)
        x, t = np.astype(x, np.float64), np.astype(t, np.float64)
        e = np.exp(t) if ctx.log_target else t
        dx = -g * e
        dt = None
        if ctx.needs_input_grad[1]:
            if ctx.log_target:
                dt = g * e * (t - x + 1)
            else:
                with np.errstate(divide="ignore", invalid="ignore"):
                    dt = g * (np.log(t) + t / t - x)
            dt = np.astype(dt, dtype)
        return np.astype(dx, dtype), dt


# ============================================================================ argument handling

def _constant(value, op, name, dtype):
    """A weight-like argument as an array broadcastable to the loss (None stays None)."""
    if value is None:
        return None
    w = as_tensor(value, op, name)
    if w.requires_grad and is_grad_enabled():
        raise ValueError(f"{op}: {name} cannot require grad ({op} is not differentiable with "
                         f"respect to {name}, as in torch)")
    check_float(op, **{name: w})
    return w._data.astype(dtype, copy=False)


def _check_broadcast(op, name, a, shape):
    if a is not None:
        try:
            ok = np.broadcast_shapes(a.shape, shape) == tuple(shape)
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"{op}: {name} of shape {tuple(a.shape)} does not broadcast to the input's "
                             f"shape {tuple(shape)}")


def _pair(input, target, op):
    x = as_tensor(input, op, "input")
    t = as_tensor(target, op, "target")
    check_float(op, input=x, target=t)
    if x.shape != t.shape:
        raise ValueError(f"{op}: target size {tuple(t.shape)} must be the same as input size {tuple(x.shape)}")
    return x, t


# ============================================================================ the losses

def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction: str = "mean") -> Tensor:
    """Binary cross-entropy of probabilities ``input`` against ``target`` in [0, 1]
    (``torch.nn.functional.binary_cross_entropy``); ``weight`` broadcasts to the input."""
    op = "binary_cross_entropy"
    reduction = loss_reduction(op, reduction, size_average, reduce)
    p, t = _pair(input, target, op)
    for name, a in (("input", p._data), ("target", t._data)):
        if not np.all((a >= 0) & (a <= 1)):
            raise InvalidArgumentError(f"{op}: all elements of {name} should be between 0 and 1, got values "
                             f"in [{np.min(a)}, {np.max(a)}]")
    w = _constant(weight, op, "weight", p._data.dtype)
    _check_broadcast(op, "weight", w, p.shape)
    return named(reduce_loss(BinaryCrossEntropy.apply(p, t, w), reduction), "BinaryCrossEntropyBackward0")


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction: str = "mean", pos_weight=None) -> Tensor:
    """Sigmoid and binary cross-entropy in one stable op
    (``torch.nn.functional.binary_cross_entropy_with_logits``). ``pos_weight`` (broadcast along
    the last, class, dimension) scales the positive term; ``weight`` broadcasts to the input."""
    op = "binary_cross_entropy_with_logits"
    reduction = loss_reduction(op, reduction, size_average, reduce)
    x, t = _pair(input, target, op)
    w = _constant(weight, op, "weight", x._data.dtype)
    pw = _constant(pos_weight, op, "pos_weight", x._data.dtype)
    _check_broadcast(op, "weight", w, x.shape)
    _check_broadcast(op, "pos_weight", pw, x.shape)
    return named(reduce_loss(BinaryCrossEntropyWithLogits.apply(x, t, w, pw), reduction),
                 "BinaryCrossEntropyWithLogitsBackward0")


def kl_div(input, target, size_average=None, reduce=None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """KL divergence Σ t (log t - x) of log-probabilities ``input`` from the target
    distribution (``torch.nn.functional.kl_div``). 'batchmean' divides the sum by the batch
    size (input.size(0)) — the true KL divergence per sample; 'mean' divides by the element
    count (with torch's warning that this is rarely what is meant)."""
    op = "kl_div"
    reduction = loss_reduction(op, reduction, size_average, reduce,
                               allowed=("mean", "batchmean", "sum", "none"))
    if not isinstance(log_target, bool):
        raise TypeError(f"{op}: log_target must be a bool, got {log_target!r}")
    x = as_tensor(input, op, "input")
    t = as_tensor(target, op, "target")
    check_float(op, input=x, target=t)
    try:
        np.broadcast_shapes(x.shape, t.shape)
    except ValueError:
        raise ValueError(f"{op}: target of shape {tuple(t.shape)} does not broadcast against input of "
                         f"shape {tuple(x.shape)}") from None
    loss = KLDivergence.apply(x, t, log_target=log_target)
    if reduction == "batchmean":
        total = loss.sum()
        return total / x.shape[0] if x.ndim else total
    if reduction == "mean" and size_average is None and reduce is None:     # torch: not on the legacy path
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with the "
                      "KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", UserWarning, stacklevel=2)
    return reduce_loss(loss, reduction)
