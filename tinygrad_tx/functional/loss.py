"""Cross-entropy: a fused Function and its composite for class-index targets, and a composite
for probability targets (``_cross_entropy_probabilities``).

Notation. Logits z (classes on axis 1 of ``(N, C, d1, ...)``, or on axis 0 of
an unbatched ``(C,)`` input), target class t for each position, class weights
w (all 1 when not given), label smoothing ε, C classes. The model's
distribution is p = softmax(z) over the class axis, and the target
distribution mixes the one-hot target with the uniform distribution:

    q_c = (1 - ε) [c = t] + ε / C.

The loss at one position is the weighted cross-entropy between q and p,

    ℓ = -Σ_c w_c q_c log p_c,

and ℓ = 0 where t == ignore_index. This is exactly torch's definition (its
nll term (1-ε)·(-w_t log p_t) plus its smoothing term ε/C·(-Σ_c w_c log p_c)).
``reduction='sum'`` adds the ℓ; ``'mean'`` divides that sum by the total
weight of the non-ignored targets, Σ_{i not ignored} w_{t_i} (their count when
unweighted); ``'none'`` returns every ℓ.

Mean over zero targets (everything ignored) is 0/0: nan, as in torch, whose
gradient in that case is zero — ours too.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import kernels
from ..core.function import ArrayFunction
from .closed_form import CrossEntropyClosedForm
from ..core.tensor import Tensor
from ._util import as_tensor, check_float, from_rows, loss_reduction, row_blocks, row_max, row_sums, to_rows
from .nll import check_class_args, check_class_weight, class_axis
from .softmax import log_softmax, log_softmax_composite


class CrossEntropy(ArrayFunction):
    """Fused log-softmax + weighted, label-smoothed negative log-likelihood, the closed form
    tuned for speed. Derivation: ``CrossEntropyClosedForm`` (functional/closed_form.py).

    It never forms the target distribution q: the forward takes log p at the targets and, with
    smoothing, Σ_c w_c log p_c = Σ_c w_c s_c - (Σ_c w_c) log Σ_c e^{s_c}; the backward writes
    the bracket p A - w q, where p_t > 1/2 its target entry as minus the sum of the others (each
    row sums to zero; formed directly, p_t A - w_t q_t cancels when p_t ≈ 1), then multiplies by
    r once (rounding r·p first would cost accuracy too).
    Saved: p (one array of the logits' size), the targets and the per-position weights w_t.

    Layout. Every position's logits are one row of a 2-D array (``to_rows``:
    a view for (N, C) logits); the forward runs over blocks of rows that stay
    in cache from the row maxima to the normalised p (``row_blocks``), and row
    sums are matrix-vector products (``row_sums``; BLAS, 5.5x faster than ``np.sum``
    on (4096, 64) float32 rows, one thread, 2026-12-02). log p is only needed at the
    targets (and, with smoothing, summed over the classes), so the full array of it is
    never formed; without a backward, p is not kept either. Gradients of gradients
    (``create_graph=True``) go through ``CrossEntropyClosedForm``, which forms log p and the
    whole of q; for it the forward also keeps z.
    """

    twice_differentiable_via = CrossEntropyClosedForm   # gradients of gradients go through it

    @staticmethod
    def closed_form_call(ctx, z, target, weight):
        _, t, valid, _, weight, _ = ctx.saved_tensors                # arrays: no derivative
        t = np.where(valid, t, ctx.ignore_index).reshape(ctx.target_shape)
        q, denominator = target_distribution(z._data, t, weight, ctx.axis, ctx.ignore_index, ctx.eps)
        return (z,), {"q": q, "axis": ctx.axis, "reduction": ctx.reduction, "denominator": denominator}

    @staticmethod
    def forward(ctx, z, target, weight, *, axis, ignore_index, reduction, label_smoothing):
        eps = label_smoothing
        z2 = to_rows(z, axis)                          # one row of logits per position
        n_rows, n_classes = z2.shape
        t = target.reshape(-1)
        valid = t != ignore_index
        t = np.where(valid, t, 0)                      # any in-range index; invalid positions are zeroed
        at = np.arange(n_rows)                         # (at, t) indexes each row's target

        keep_p = ctx.needs_input_grad[0]
        fast = None if eps > 0 else kernels.cross_entropy_rows(z2, keep_p)   # one C pass per row
        if fast is not None:
            p2, row_m, log_sum = fast
            s_t = z2[at, t] - row_m
            smooth, blocks = None, ()
        else:
            p2 = np.empty_like(z2) if keep_p else None
            blocks = row_blocks(n_rows, n_classes)
            scratch = None if keep_p else np.empty_like(z2[blocks[0]] if blocks else z2)
            s_t = np.empty(n_rows, z2.dtype)                # s at the target
            log_sum = np.empty(n_rows, z2.dtype)            # log Σ_c e^{s_c}
            smooth = np.empty(n_rows, z2.dtype) if eps > 0 else None   # Σ_c w_c s_c
        for rows in blocks:
            zb = z2[rows]
            k = len(zb)
            sb = np.subtract(zb, row_max(zb), out=p2[rows] if keep_p else scratch[:k])
            s_t[rows] = sb[at[:k], t[rows]]
            if smooth is not None:
                smooth[rows] = row_sums(sb) if weight is None else sb @ weight
            total = row_sums(np.exp(sb, out=sb))
            np.log(total, out=log_sum[rows])
            if keep_p:
                sb /= total[:, None]                    # p

        w_t = None if weight is None else weight[t]
        loss = s_t - log_sum                            # log p_t
        loss *= -(1.0 - eps) if w_t is None else -(1.0 - eps) * w_t
        if eps > 0:                                     # Σ_c w_c log p_c = Σ_c w_c s_c - (Σ_c w_c) log_sum
            smooth -= (n_classes if weight is None else np.sum(weight)) * log_sum
            loss -= (eps / n_classes) * smooth
        loss[~valid] = 0

        ctx.save_for_backward(p2, t, valid, w_t, weight, z if keep_p else None)
        ctx.z_shape, ctx.axis, ctx.reduction, ctx.eps = z.shape, axis, reduction, eps
        ctx.target_shape, ctx.ignore_index = target.shape, ignore_index
        if reduction == "none":
            return loss.reshape(target.shape)
        total = np.sum(loss)
        if reduction == "sum":
            return total
        ctx.denominator = np.sum(valid, dtype=z.dtype) if w_t is None else np.sum(w_t, where=valid)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(total / ctx.denominator, dtype=z.dtype)

    @staticmethod
    def backward(ctx, g):
        p2, t, valid, w_t, weight, _ = ctx.saved_tensors
        eps = ctx.eps
        c = p2.shape[1]
        if ctx.reduction == "none":
            r = g.reshape(-1) * valid
        elif ctx.reduction == "sum":
            r = g * valid
        else:  # all ignored: g/0 is inf or nan, replaced by the zeros of the ignored positions
            with np.errstate(invalid="ignore", divide="ignore"):
                r = np.where(valid, g / ctx.denominator, 0)
        r = r.astype(p2.dtype, copy=False)[:, None]
        at = np.arange(len(p2))
        # the bracket p A - w q off the targets first, then one multiplication by r
        if weight is None:                               # A = 1:  p - q
            dz = np.subtract(p2, eps / c) if eps > 0 else p2.copy()
        else:                                            # p A - w q
            a = (1.0 - eps) * w_t + (eps / c) * np.sum(weight)
            dz = np.multiply(p2, a[:, None])
            if eps > 0:
                dz -= (eps / c) * weight
        # The target's entry p_t A - w_t q_t, formed directly, cancels when p_t ≈ 1: its float32
        # error is then an ulp of A. Each row of p A - w q sums to zero (Σ_c w_c q_c = A), so
        # where p_t > 1/2 it is minus the sum of the row's other entries instead, whose errors
        # are ulps of those small terms (a fresh clone's dev draw: 2 classes, weights, smoothing
        # 0.1: our dz 5.5x torch's float32 error, now 0.3x). Below 1/2 the direct form is the
        # accurate one: a sum over many classes adds its own rounding.
        p_t = p2[at, t]
        q_t = (1.0 - eps) + eps / c                      # the smoothed target probability
        at_t = p_t - q_t if weight is None else p_t * a - w_t * q_t
        near_one = np.flatnonzero(p_t > 0.5)
        if len(near_one):
            dz[at, t] = 0
            at_t[near_one] = -row_sums(dz[near_one])
        dz[at, t] = at_t
        dz *= r
        return from_rows(dz, ctx.z_shape, ctx.axis), None, None


def _check_label_smoothing(label_smoothing, op) -> float:
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, (numbers.Real, np.floating)):
        raise TypeError(f"{op}: label_smoothing must be a float, got {label_smoothing!r} "
                        f"of type {type(label_smoothing).__name__}")
    eps = float(label_smoothing)
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"{op}: label_smoothing must be in [0, 1], got {label_smoothing}")
    return eps


def _is_probability_target(target) -> bool:
    a = target._data if isinstance(target, Tensor) else target
    return isinstance(a, np.ndarray) and a.dtype.kind == "f"


def _check(input, target, weight, size_average, ignore_index, reduce, reduction, label_smoothing, op,
           log_softmax_fn):
    """Validate cross-entropy arguments. A probability target is handled here (the result
    Tensor is returned); class-index targets give (logits, target array, weight array|None,
    class axis, reduction, label smoothing)."""
    reduction = loss_reduction(op, reduction, size_average, reduce)
    if _is_probability_target(target):
        return _cross_entropy_probabilities(input, target, weight, ignore_index, reduction,
                                            label_smoothing, op, log_softmax_fn)
    eps = _check_label_smoothing(label_smoothing, op)
    z, t, w, axis, _ = check_class_args(input, target, weight, ignore_index, op)
    return z, t, w, axis, reduction, eps


def _cross_entropy_probabilities(input, target, weight, ignore_index, reduction, label_smoothing,
                                 op, log_softmax_fn):
    """Cross-entropy against a target *distribution* q (a float target of the input's shape):

        ℓ = -Σ_c w_c q̃_c log softmax(z)_c,    q̃ = (1 - ε) q + ε/C,

    'mean' dividing by the number of positions (not by the weights), as torch does. A
    composite (log_softmax, products, sums) — torch's gradient is this composite's, and it
    reaches q too (dL/dq_c = -(1 - ε) w_c log p_c · g).
    """
    eps = _check_label_smoothing(label_smoothing, op)
    if ignore_index != -100:
        raise ValueError(f"{op}: ignore_index is not supported for floating point (probability) "
                         f"targets, got ignore_index={ignore_index!r}")
    z = as_tensor(input, op, "input")
    q = as_tensor(target, op, "target")
    axis = class_axis(z, op)
    if q.shape != z.shape:
        raise ValueError(f"{op}: a probability target must have the input's shape {tuple(z.shape)}, got "
                         f"{tuple(q.shape)} (class-index targets are integer tensors)")
    w = check_class_weight(weight, z.shape[axis], op)
    check_float(op, input=z, weight=w)
    if q._data.dtype != z._data.dtype:                   # torch promotes to the wider float dtype
        wide = np.promote_types(q._data.dtype, z._data.dtype)
        z, q = (z if z._data.dtype == wide else z.to(wide)), (q if q._data.dtype == wide else q.to(wide))
    n_classes = z.shape[axis]
    out_dtype = z._data.dtype
    if out_dtype == np.float32:          # computed in float64, rounded once (torch's float32 composite
        z, q = z.to(np.float64), q.to(np.float64)   # cancels in p·Σ w q̃ - w q̃ for few classes)
    if eps > 0:
        q = q * (1.0 - eps) + eps / n_classes
    prod = log_softmax_fn(z, axis) * q
    if w is not None:
        prod = prod * Tensor(w._data.astype(z._data.dtype).reshape((-1,) + (1,) * (z.ndim - axis - 1)))
    loss = -prod.sum(axis)
    if reduction != "none":
        total = loss.sum()
        n_positions = z._data.size // n_classes if n_classes else 0
        if reduction == "sum":
            loss = total
        else:
            loss = total / float(n_positions) if n_positions else total + float("nan")   # no positions: nan
    return loss if loss._data.dtype == out_dtype else loss.to(out_dtype)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index: int = -100,
                  reduce=None, reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy between logits and class-index targets (``torch.nn.functional.cross_entropy``).

    ``input``: logits ``(C,)``, ``(N, C)`` or ``(N, C, d1, ...)``; ``target``: integer
    class indices of the input's shape without the class dimension, or class
    probabilities (a float tensor of the input's shape); ``weight``:
    optional per-class weights ``(C,)`` (constants). See the module docstring for
    the exact definition, including ``ignore_index`` and ``label_smoothing``.
    """
    checked = _check(input, target, weight, size_average, ignore_index, reduce, reduction, label_smoothing,
                     "cross_entropy", log_softmax)
    if isinstance(checked, Tensor):     # probability targets
        return checked
    z, t, w, axis, reduction, eps = checked
    return CrossEntropy.apply(z, t, w, axis=axis, ignore_index=int(ignore_index), reduction=reduction,
                              label_smoothing=eps)


def cross_entropy_composite(input, target, weight=None, size_average=None, ignore_index: int = -100,
                            reduce=None, reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy from primitives: ℓ = -Σ_c (w_c q_c) log_softmax(z)_c.

    The weighted target distribution w ∘ q (zero at ignored positions) is a
    constant built with NumPy; autograd differentiates log_softmax, the
    product and the sums.
    """
    checked = _check(input, target, weight, size_average, ignore_index, reduce, reduction, label_smoothing,
                     "cross_entropy_composite", log_softmax_composite)
    if isinstance(checked, Tensor):     # probability targets
        return checked
    z, t, w, axis, reduction, eps = checked
    q, denominator = target_distribution(z, t, w, axis, ignore_index, eps)
    loss = -(log_softmax_composite(z, axis) * Tensor(q)).sum(axis)
    if reduction == "none":
        return loss
    total = loss.sum()
    if reduction == "sum":
        return total
    if denominator == 0.0:
        # 0/0 is nan, and torch's gradient is zero here. Dividing would send inf·0 = nan
        # into the gradient; adding nan to the (zero) sum gives nan with a zero gradient.
        return total + float("nan")
    return total / denominator


def target_distribution(z, t, w, axis, ignore_index, eps):
    """``(q, denominator)`` for class-index targets ``t`` of logits ``z``: the weighted target
    distribution q = w ∘ ((1 - ε) onehot(t) + ε/C) in z's shape and dtype (0 at ignored
    positions), and 'mean''s denominator Σ_{kept} w_t (their count when unweighted)."""
    n_classes = z.shape[axis]
    t = np.expand_dims(t, axis)
    ignored = t == ignore_index
    classes = np.arange(n_classes).reshape((-1,) + (1,) * (z.ndim - axis - 1))
    q = (1.0 - eps) * (classes == t) + eps / n_classes       # smoothed one-hot, float64
    if w is not None:
        q = q * w.reshape(classes.shape)
    q = np.where(ignored, 0.0, q).astype(z.dtype)
    w_t = np.ones(t.shape) if w is None else w[np.where(ignored, 0, t)]
    return q, float(np.sum(np.where(ignored, 0.0, w_t)))
