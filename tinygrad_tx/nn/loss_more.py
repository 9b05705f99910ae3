"""More loss modules (``torch.nn``'s): KL divergence, the margin and hinge losses, the triplet
losses, the Poisson and Gaussian NLLs, and ``CTCLoss``.

As in :mod:`.loss`, each keeps its options (torch's names, order and defaults) and calls the
functional loss, where the math, the gradient and the argument checks are. A class ``weight``
is a buffer. ``size_average``/``reduce`` are accepted where torch still accepts them (all but
``TripletMarginWithDistanceLoss`` and ``GaussianNLLLoss``).
"""
from __future__ import annotations

from ..core.tensor import Tensor
from .loss import _functional, _Loss, _WeightedLoss


class KLDivLoss(_Loss):
    """Σ t (log t - x) of log-probabilities x (or e^t (t - x) with ``log_target``);
    use ``reduction='batchmean'`` for the true KL divergence per sample."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return _functional().kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


def _margin_init(default: float):
    """The ``__init__`` of a loss whose one option besides the reduction is ``margin``, with
    torch's argument order and this loss's default (visible in its signature)."""
    def __init__(self, margin: float = default, size_average=None, reduce=None, reduction: str = "mean"):
        _Loss.__init__(self, size_average, reduce, reduction)
        self.margin = margin
    return __init__


class MarginRankingLoss(_Loss):
    """max(0, -y (x1 - x2) + margin) for labels y = ±1."""
    __init__ = _margin_init(0.0)

    def forward(self, input1, input2, target):
        return _functional().margin_ranking_loss(input1, input2, target, margin=self.margin,
                                                 reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """x where y = 1, max(0, margin - x) where y = -1."""
    __init__ = _margin_init(1.0)

    def forward(self, input, target):
        return _functional().hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """log(1 + exp(-y x)) for labels y = ±1."""

    def forward(self, input, target):
        return _functional().soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """One-vs-all logistic loss averaged over the classes (last dim), optionally class-weighted."""

    def forward(self, input, target):
        return _functional().multilabel_soft_margin_loss(input, target, weight=self.weight,
                                                         reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """(1/C) Σ_{j ≠ y} w_y max(0, margin - x_y + x_j)^p, p ∈ {1, 2}."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight=None, size_average=None, reduce=None,
                 reduction: str = "mean"):
        if weight is not None and isinstance(weight, Tensor) and weight.ndim != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.ndim}D instead")
        super().__init__(weight, size_average, reduce, reduction)
        if isinstance(p, bool) or p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: only p == 1 and p == 2 supported, got p={p!r}")
        self.p = p
        self.margin = margin

    def forward(self, input, target):
        return _functional().multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                               reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """(1/C) Σ_{j listed} Σ_{k not listed} max(0, 1 - (x_j - x_k)); targets end at the first -1."""

    def forward(self, input, target):
        return _functional().multilabel_margin_loss(input, target, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """1 - cos(x1, x2) where y = 1, max(0, cos(x1, x2) - margin) where y = -1."""
    __init__ = _margin_init(0.0)

    def forward(self, input1, input2, target):
        return _functional().cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                                   reduction=self.reduction)


def _positive_margin(layer: str, margin) -> None:
    if margin <= 0:
        raise ValueError(f"{layer}: expected margin to be greater than 0, got {margin} instead")


class TripletMarginLoss(_Loss):
    """max(0, margin + ‖a - p‖_p - ‖a - n‖_p), with the distance ``swap`` option."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                 size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        _positive_margin("TripletMarginLoss", margin)
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return _functional().triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                                 eps=self.eps, swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """max(0, margin + d(a, p) - d(a, n)) for any ``distance_function`` (default pairwise_distance)."""

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean"):
        super().__init__(reduction=reduction)
        _positive_margin("TripletMarginWithDistanceLoss", margin)
        self.distance_function = distance_function
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return _functional().triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function, margin=self.margin,
            swap=self.swap, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """e^x - t x (``log_input``) or x - t log(x + eps), plus Stirling's log t! if ``full``."""

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None, eps: float = 1e-8,
                 reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return _functional().poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                              eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """½ (log var + (x - t)² / var), var clamped at ``eps``; + ½ log 2π if ``full``."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(reduction=reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return _functional().gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                               reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist temporal classification: -log p(target | log_probs) summed over all
    alignments, by the alpha-beta recursion (``tinygrad_tx.functional.ctc``, its backward by hand)."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return _functional().ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                                      self.reduction, self.zero_infinity)
