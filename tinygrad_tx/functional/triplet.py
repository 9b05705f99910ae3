"""Triplet losses (torch.nn.functional's): ``triplet_margin_loss`` and
``triplet_margin_with_distance_loss``.

For an anchor a, a positive p (same identity) and a negative n,

    ℓ = max(0, margin + d(a, p) - d(a, n)),

and with ``swap`` the negative distance is min(d(a, n), d(p, n)) (Balntas et al., 2016: use the
positive as anchor when it is nearer the negative). Both are composites, as in torch: the
distance (``pairwise_distance`` — the p-norm of a - p + eps along the last dim — or the
user's ``distance_function``), a minimum, an add and a clamp at 0, so the gradients are those
of the distance times ±1 where the hinge is active and 0 elsewhere.
"""
from __future__ import annotations

from ..errors import InvalidArgumentError
from ..tensor import Tensor, where
from ._util import as_tensor, check_real, loss_reduction, reduce_loss
from .distance import pairwise_distance


def _margin(op: str, margin) -> float:
    m = check_real(op, "margin", margin)
    if m <= 0:
        raise ValueError(f"{op}: margin must be greater than 0, got {margin}")
    return m


def _check_dims(op: str, anchor, positive, negative):
    a, p, n = (as_tensor(v, op, name) for v, name in ((anchor, "anchor"), (positive, "positive"),
                                                     (negative, "negative")))
    if not a.ndim == p.ndim == n.ndim:
        raise InvalidArgumentError(f"{op}: the anchor, positive, and negative tensors are expected to have the "
                                   f"same number of dimensions, but got: anchor {a.ndim}D, positive {p.ndim}D, "
                                   f"and negative {n.ndim}D inputs")
    return a, p, n


def _triplet(distance, a: Tensor, p: Tensor, n: Tensor, margin: float, swap: bool) -> Tensor:
    d_pos, d_neg = distance(a, p), distance(a, n)
    if swap:
        d_swap = distance(p, n)
        d_neg = where(d_swap < d_neg, d_swap, d_neg)     # torch.minimum away from ties
    return (margin + d_pos - d_neg).clamp(min=0)


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """max(0, margin + ‖a - p + eps‖_p - ‖a - n + eps‖_p) (``torch.nn.functional.triplet_margin_loss``),
    the norms along the last dimension; a composite of ``pairwise_distance``."""
    op = "triplet_margin_loss"
    reduction = loss_reduction(op, reduction, size_average, reduce)
    m = _margin(op, margin)
    a, pos, neg = _check_dims(op, anchor, positive, negative)
    if a.ndim == 0:
        raise InvalidArgumentError(f"{op}: inputs must have at least one dimension, got 0-d tensors")
    eps = check_real(op, "eps", eps)
    loss = _triplet(lambda u, v: pairwise_distance(u, v, p, eps), a, pos, neg, m, bool(swap))
    return reduce_loss(loss, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:
    """max(0, margin + d(a, p) - d(a, n)) for any differentiable ``distance_function`` d
    (default ``pairwise_distance``) (``torch.nn.functional.triplet_margin_with_distance_loss``)."""
    op = "triplet_margin_with_distance_loss"
    reduction = loss_reduction(op, reduction)
    m = _margin(op, margin)
    a, pos, neg = _check_dims(op, anchor, positive, negative)
    if distance_function is None:
        distance_function = pairwise_distance
    elif not callable(distance_function):
        raise TypeError(f"{op}: distance_function must be callable, got {type(distance_function).__name__}")
    return reduce_loss(_triplet(distance_function, a, pos, neg, m, bool(swap)), reduction)
