"""Loss modules (``torch.nn``'s): each keeps its options and calls the functional loss.

``loss = criterion(input, target)``; the math, its gradient and the argument checks
are in ``tinygrad_tx.functional`` (imported lazily). As in torch, a class ``weight``
(and ``BCEWithLogitsLoss``'s ``pos_weight``) is a *buffer*: it follows ``.to(dtype)``
and appears in ``state_dict()`` under ``"weight"`` / ``"pos_weight"`` when given.
``reduction`` is ``'mean'`` (default), ``'sum'`` or ``'none'``; the deprecated
``size_average``/``reduce`` pair is translated to it as torch does (with a warning).
"""
from __future__ import annotations

import warnings

import numpy as np

from ..core.tensor import Tensor
from .module import Module


def _functional():
    from .. import functional as F
    return F


def _legacy_reduction(size_average, reduce) -> str:
    """torch's ``_Reduction.legacy_get_string``: None means True for both flags."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "mean" if (size_average and reduce) else ("sum" if reduce else "none")
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  f"reduction='{reduction}' instead.", stacklevel=4)
    return reduction


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = _legacy_reduction(size_average, reduce)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", _constant(weight, "weight", type(self).__name__))


def _constant(value, name: str, layer: str):
    """A weight argument as a Tensor buffer (None stays None)."""
    if value is None or isinstance(value, Tensor):
        return value
    if isinstance(value, np.ndarray):
        return Tensor(value)
    raise TypeError(f"{layer}: {name} must be a Tensor or None, got {type(value).__name__}")


class L1Loss(_Loss):
    """|input − target|, reduced."""

    def forward(self, input, target):
        return _functional().l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """(input − target)², reduced."""

    def forward(self, input, target):
        return _functional().mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """0.5 (x − y)² / beta where |x − y| < beta, else |x − y| − 0.5 beta."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return _functional().smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """0.5 (x − y)² where |x − y| < delta, else delta (|x − y| − 0.5 delta)."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return _functional().huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class NLLLoss(_WeightedLoss):
    """−w[t] · input[t] for log-probabilities ``input`` and class indices ``t``."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return _functional().nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                                      reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """log_softmax over the class dim, then the (weighted, smoothed) negative log-likelihood."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return _functional().cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                                           reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """−w [y log p + (1 − y) log(1 − p)] for probabilities ``p``."""

    def forward(self, input, target):
        return _functional().binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid and binary cross-entropy in one stable op; ``pos_weight`` scales the positive term."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", _constant(weight, "weight", "BCEWithLogitsLoss"))
        self.register_buffer("pos_weight", _constant(pos_weight, "pos_weight", "BCEWithLogitsLoss"))

    def forward(self, input, target):
        return _functional().binary_cross_entropy_with_logits(
            input, target, weight=self.weight, reduction=self.reduction, pos_weight=self.pos_weight)
