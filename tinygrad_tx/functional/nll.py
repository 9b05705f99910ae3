"""Negative log-likelihood over class-index targets (``nll_loss``), and the target checks it
shares with ``cross_entropy``.

Notation. Input x of log-probabilities, classes on axis 1 of ``(N, C, d1, ...)`` (axis 0 of
an unbatched ``(C,)``), target class t at each position, class weights w (all 1 when not
given). At one position

    ℓ = -w_t x_t,     and ℓ = 0 where t == ignore_index.

'sum' adds the ℓ; 'mean' divides the sum by Σ w_t over the positions not ignored (their count
when unweighted) — 0/0 = nan when every position is ignored, as in torch; 'none' keeps them.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..errors import InvalidArgumentError
from ..core.function import ArrayFunction
from ..core.grad_mode import is_grad_enabled
from ..ops.movement import IndexOutOfRange
from ..core.tensor import Tensor
from ._util import as_tensor, check_float, describe_values, int_array, loss_reduction


class NLLLossFn(ArrayFunction):
    """ℓ_i = -w_{t_i} x_{i, t_i} (zero at ignored positions), then the reduction.

    Backward. ℓ_i depends on one entry of x only, with ∂ℓ_i/∂x_{i,t_i} = -w_{t_i}; so dL/dx is
    zero except at each position's target class, where it is -w_t · r with r = g_i ('none'),
    g ('sum') or g / Σ w_t ('mean'), and zero at ignored positions. As in torch, a mean over
    no targets at all (all ignored) has a zero gradient, while targets whose weights sum to 0
    get -0 · g/0 = nan. Saved: the targets, the mask of positions not ignored and the
    per-position weights w_t (a constant: class weights cannot require grad).

    dL/dx is linear in g and does not depend on x, so its own derivative is g's coefficient:
    the backward runs on Tensors (``create_graph=True``; ``_place_at_target``).
    """

    differentiable_backward = True
    saved_constants = (1,)

    @staticmethod
    def forward(ctx, x, target, weight, *, axis, ignore_index, reduction):
        valid = target != ignore_index
        t = np.expand_dims(np.where(valid, target, 0), axis)     # any in-range class where ignored
        w_t = np.ones(target.shape, x.dtype) if weight is None else weight[t.squeeze(axis)]
        w_t = np.where(valid, w_t, 0).astype(x.dtype, copy=False)
        loss = -np.take_along_axis(x, t, axis).squeeze(axis) * w_t
        ctx.save_for_backward(t, w_t, valid)
        ctx.x_shape, ctx.axis, ctx.reduction = x.shape, axis, reduction
        if reduction == "none":
            return loss
        total = np.sum(loss, dtype=np.float64)
        if reduction == "sum":
            return np.asarray(total, dtype=x.dtype)
        ctx.denominator = np.sum(w_t, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(total / ctx.denominator, dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        t, w_t, valid = ctx.saved_tensors
        with np.errstate(invalid="ignore", divide="ignore"):
            r = g / float(ctx.denominator) if ctx.reduction == "mean" else g   # a number: g's dtype
            at_target = np.where(valid, -w_t * r, 0)
        return _place_at_target(np.expand_dims(at_target, ctx.axis), t, ctx.x_shape, ctx.axis), None, None


def _place_at_target(values, t, shape, axis):
    """An array of ``shape``, zero but for ``values`` at each position's target class ``t`` along
    ``axis``: ``np.put_along_axis`` into zeros; on a Tensor (a backward being differentiated) the
    same through a one-hot mask, recorded (writing into an array would leave the graph). Why two:
    the mask costs two full passes, (512, 1024) float32 0.16 -> 2.3 ms at first order."""
    if isinstance(values, Tensor):
        n_classes = shape[axis]
        classes = np.arange(n_classes).reshape((n_classes,) + (1,) * (len(shape) - 1 - axis))
        return np.where(classes == t, values, 0)   # classes == t: True at each position's target class
    out = np.zeros(shape, dtype=values.dtype)
    np.put_along_axis(out, t, values, axis)
    return out


# ============================================================================ argument checks

def class_axis(z: Tensor, op: str) -> int:
    """The class axis of ``z``: 0 for an unbatched (C,) input, else 1."""
    if z.ndim == 0:
        raise ValueError(f"{op}: input must have a class dimension: expected 1 or more dimensions, "
                         f"got a 0-d tensor")
    return 0 if z.ndim == 1 else 1


def check_ignore_index(ignore_index, op) -> int:
    if not isinstance(ignore_index, numbers.Integral) or isinstance(ignore_index, bool):
        raise TypeError(f"{op}: ignore_index must be an int, got {ignore_index!r}")
    return int(ignore_index)


def check_class_indices(z: Tensor, target, ignore_index: int, op: str) -> np.ndarray:
    """The integer array of class targets for logits/log-probabilities ``z``: the shape of z
    without its class axis, each value in [0, C) or ``ignore_index``."""
    t = int_array(target, op, "target (class indices)")
    axis = class_axis(z, op)
    n_classes = z.shape[axis]
    expected = z.shape[:axis] + z.shape[axis + 1:]
    if t.shape != expected:
        raise ValueError(f"{op}: target shape {tuple(t.shape)} does not match input shape {tuple(z.shape)}: "
                         f"expected target shape {expected} (the input's shape without the class "
                         f"dimension {axis} of size {n_classes})")
    bad = ((t < 0) | (t >= n_classes)) & (t != ignore_index)
    if bad.any():
        raise IndexOutOfRange(f"{op}: target values {describe_values(t[bad])} are out of range for "
                              f"{n_classes} classes: expected 0 <= target < {n_classes} "
                              f"(or ignore_index={ignore_index})")
    return t


def check_class_weight(weight, n_classes: int, op: str):
    """Per-class weights (C,) as a Tensor (None stays None); constants, as in torch."""
    if weight is None:
        return None
    w = as_tensor(weight, op, "weight")
    if w.shape != (n_classes,):
        raise InvalidArgumentError(f"{op}: weight must have shape ({n_classes},), one entry per class, got {tuple(w.shape)}")
    if w.requires_grad and is_grad_enabled():
        raise ValueError(f"{op}: weight cannot require grad (class weights are constants; "
                         f"torch's nll_loss is not differentiable with respect to weight)")
    return w


def check_class_args(input, target, weight, ignore_index, op):
    """Validate (scores, class-index target, class weights, ignore_index) for nll_loss and
    cross_entropy; return (input Tensor, target array, weight array|None, class axis, ignore_index)."""
    x = as_tensor(input, op, "input")
    ignore_index = check_ignore_index(ignore_index, op)
    axis = class_axis(x, op)
    w = check_class_weight(weight, x.shape[axis], op)
    check_float(op, input=x, weight=w)
    t = check_class_indices(x, target, ignore_index, op)
    return x, t, (None if w is None else w._data), axis, ignore_index


# ============================================================================ nll_loss

def nll_loss(input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
             reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of class-index targets (``torch.nn.functional.nll_loss``).

    ``input``: log-probabilities ``(C,)``, ``(N, C)`` or ``(N, C, d1, ...)``; ``target``:
    integer classes of the input's shape without the class dimension; ``weight``: optional
    per-class weights ``(C,)``. See the module docstring for the definition.
    """
    reduction = loss_reduction("nll_loss", reduction, size_average, reduce)
    x, t, w, axis, ignore_index = check_class_args(input, target, weight, ignore_index, "nll_loss")
    return NLLLossFn.apply(x, t, w, axis=axis, ignore_index=ignore_index, reduction=reduction)
