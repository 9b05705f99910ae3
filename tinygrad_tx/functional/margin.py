"""Margin and hinge losses (torch.nn.functional's): ``margin_ranking_loss``,
``hinge_embedding_loss``, ``soft_margin_loss``, ``multilabel_soft_margin_loss``,
``multi_margin_loss``, ``multilabel_margin_loss``, ``cosine_embedding_loss``.

All but ``soft_margin_loss`` are composites of the engine's differentiable ops (clamp, where,
gather, sum, sqrt, logsigmoid), written in torch's own order of operations so that their
values and gradients are torch's; each docstring gives the formula. ``soft_margin_loss`` is one
Function (:class:`SoftMargin`) with its backward by hand. The reduction ('none', 'sum', 'mean'
over the elements of the per-element or per-sample loss) is the engine's Sum/Mean; the legacy
``size_average``/``reduce`` pair is translated as torch does. Class targets and ±1 labels are
constants: no gradient reaches them (a float ±1 target of ``margin_ranking_loss`` is the
exception, as in torch: it multiplies the margin term).

At a kink (a hinge exactly at 0) the gradient is the engine's clamp's; torch's kernels choose
their own side there, so the tests keep inputs away from the kinks.
"""
from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError
from ..core.function import ArrayFunction
from ..core.grad_mode import is_grad_enabled
from ..tensor import Tensor, where
from ._util import as_tensor, check_float, check_real, int_array, loss_reduction, reduce_loss
from .likelihood import _constant
from .pointwise import logsigmoid, sigmoid_np, softplus_np


# ============================================================================ argument handling

def float_tensors(op: str, **named) -> list:
    """The named arguments as Tensors of the first one's float dtype: an integer or bool one is
    cast to it (a ±1 label tensor), a float one of another dtype is a TypeError naming it."""
    out, dtype = [], None
    for name, value in named.items():
        t = as_tensor(value, op, name)
        if dtype is None:
            dtype = check_float(op, **{name: t})
        elif t._data.dtype.kind in "iub":
            t = t.to(dtype)
        out.append(t)
    check_float(op, **dict(zip(named, out)))
    return out


def check_broadcast(op: str, input: Tensor, **others) -> tuple:
    """The broadcast shape of the input and ``others``, else an error naming the one that does
    not broadcast (torch: RuntimeError "The size of tensor a must match ...")."""
    shape = input.shape
    for name, t in others.items():
        try:
            shape = np.broadcast_shapes(shape, t.shape)
        except ValueError:
            raise InvalidArgumentError(f"{op}: {name} of shape {tuple(t.shape)} does not broadcast against "
                                       f"input of shape {tuple(input.shape)}") from None
    return shape


# ============================================================================ soft margin

class SoftMargin(ArrayFunction):
    """ℓ = log(1 + e^{-y x}) = sp(-y x)  (sp = softplus, computed without overflow).

    dℓ/dx = -y e^{-yx} / (1 + e^{-yx}) = -y σ(-y x). The target y is a label: torch does not
    differentiate with respect to it (and refuses a target that requires grad). Saved: x, y.
    The backward runs on Tensors (``create_graph=True``): d²ℓ/dx² = y² σ(-yx)(1 - σ(-yx)).
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return softplus_np(-y * x).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return np.astype(-g * y * sigmoid_np(-y * x), np.result_type(x), copy=False), None


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """Two-class logistic loss log(1 + exp(-y x)) for labels y = ±1
    (``torch.nn.functional.soft_margin_loss``): one Function, :class:`SoftMargin`, then the
    reduction ('mean' divides by the element count)."""
    op = "soft_margin_loss"
    reduction = loss_reduction(op, reduction, size_average, reduce)
    x, y = float_tensors(op, input=input, target=target)
    shape = check_broadcast(op, x, target=y)
    if y.requires_grad and is_grad_enabled():
        raise InvalidArgumentError(f"{op}: the function is not differentiable with respect to argument "
                                   f"'target'; it cannot have requires_grad=True (detach it)")
    if x.shape != shape:
        x = x.expand(*shape)
    return reduce_loss(SoftMargin.apply(x, Tensor(np.broadcast_to(y._data, shape))), reduction)


# ============================================================================ pointwise hinges

def margin_ranking_loss(input1, input2, target, margin: float = 0.0, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:
    """max(0, -y (x1 - x2) + margin) (``torch.nn.functional.margin_ranking_loss``): y = 1 asks
    x1 to rank above x2 by the margin, y = -1 below. A composite: subtract, multiply, add, clamp
    at 0 (gradient ∓y where the hinge is active, 0 elsewhere; the target gets -(x1 - x2) there).
    The three tensors must have the same number of dimensions (then broadcast), as in torch."""
    op = "margin_ranking_loss"
    reduction = loss_reduction(op, reduction, size_average, reduce)
    a, b, y = float_tensors(op, input1=input1, input2=input2, target=target)
    if not a.ndim == b.ndim == y.ndim:
        raise InvalidArgumentError(f"{op}: all input tensors should have the same dimension but got sizes: "
                                   f"input1: {tuple(a.shape)}, input2: {tuple(b.shape)}, target: {tuple(y.shape)}")
    check_broadcast(op, a, input2=b, target=y)
    m = check_real(op, "margin", margin)
    return reduce_loss((-y * (a - b) + m).clamp(min=0), reduction)


def hinge_embedding_loss(input, target, margin: float = 1.0, size_average=None, reduce=None,
                         reduction: str = "mean") -> Tensor:
    """ℓ = x where y = 1, max(0, margin - x) where y = -1
    (``torch.nn.functional.hinge_embedding_loss``). As in torch, the two terms are
    where(y ≠ 1, max(0, margin - x), 0) + where(y ≠ -1, x, 0), so a label other than ±1 gets
    both. A composite of clamp, where and add; the label is a constant."""
    op = "hinge_embedding_loss"
    reduction = loss_reduction(op, reduction, size_average, reduce)
    x, y = float_tensors(op, input=input, target=target)
    check_broadcast(op, x, target=y)
    m = check_real(op, "margin", margin)
    y = y._data
    margin_term = where(Tensor(y != 1), (m - x).clamp(min=0), 0.0)
    return reduce_loss(margin_term + where(Tensor(y != -1), x, 0.0), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction: str = "mean") -> Tensor:
    """One-vs-all logistic loss averaged over the C classes of the last dimension
    (``torch.nn.functional.multilabel_soft_margin_loss``):

        ℓ_n = -(1/C) Σ_c w_c [y_c log σ(x_c) + (1 - y_c) log σ(-x_c)],

    then the reduction over the samples. A composite of logsigmoid, multiply and sum, so the
    target (a float in [0, 1]) gets its gradient log σ(-x_c) - log σ(x_c) = -x_c (times w_c/C)."""
    op = "multilabel_soft_margin_loss"
    reduction = loss_reduction(op, reduction, size_average, reduce)
    x, y = float_tensors(op, input=input, target=target)
    if x.ndim == 0:
        raise InvalidArgumentError(f"{op}: input must have a class dimension, got a 0-d tensor")
    check_broadcast(op, x, target=y)
    loss = -(y * logsigmoid(x) + (1 - y) * logsigmoid(-x))
    if weight is not None:
        w = float_tensors(op, input=x, weight=weight)[1]
        check_broadcast(op, loss, weight=w)
        loss = loss * w
    return reduce_loss(loss.sum(-1) / x.shape[-1], reduction)


# ============================================================================ class-index margins

def _class_rows(op: str, input, target):
    """(x as (N, C), the class targets as an int array of length N, the output shape) for an
    input of shape (N, C) or (C,), checked as torch checks them."""
    x = as_tensor(input, op, "input")
    check_float(op, input=x)
    if x.ndim not in (1, 2) or x._data.size == 0:
        raise InvalidArgumentError(f"{op}: expected a non-empty vector or matrix input (C,) or (N, C), "
                                   f"got shape {tuple(x.shape)}")
    t = int_array(target, op, "target")
    return x, t


def multi_margin_loss(input, target, p: int = 1, margin: float = 1.0, weight=None, size_average=None,
                      reduce=None, reduction: str = "mean") -> Tensor:
    """Multi-class hinge loss (``torch.nn.functional.multi_margin_loss``): for a sample x of C
    scores and its class y,

        ℓ = (1/C) Σ_{j ≠ y} w_y max(0, margin - x_y + x_j)^p,     p ∈ {1, 2}.

    A composite: gather x_y, broadcast-subtract, clamp at 0, square for p = 2, multiply by a
    constant mask (0 at j = y, w_y elsewhere) and sum. Its gradient: for each active j,
    p w_y h^{p-1}/C to x_j and the negated sum of those to x_y (h = the hinge). ``weight`` (one
    per class) is a constant, as in torch."""
    op = "multi_margin_loss"
    reduction = loss_reduction(op, reduction, size_average, reduce)
    if isinstance(p, bool) or p not in (1, 2):
        raise ValueError(f"{op}: only p == 1 and p == 2 supported, got p={p!r}")
    x, t = _class_rows(op, input, target)
    rows = x if x.ndim == 2 else x.reshape(1, -1)
    n, c = rows.shape
    if (x.ndim == 2 and t.shape != (n,)) or (x.ndim == 1 and t.size != 1) or t.ndim > 1:
        raise InvalidArgumentError(f"{op}: target tensor should be 1-D with size equal to the number of input "
                                   f"samples (batch size): expected target size [{n}], got {list(t.shape)} "
                                   f"for input of shape {list(x.shape)}")
    t_rows = t.reshape(n)
    if np.any((t_rows < 0) | (t_rows >= c)):
        raise InvalidArgumentError(f"{op}: target out of range: class indices must be in [0, {c}), "
                                   f"got values in [{t_rows.min()}, {t_rows.max()}]")
    m = check_real(op, "margin", margin)
    scale = np.ones((n, c), x._data.dtype)
    if weight is not None:
        w = _constant(weight, op, "weight", x._data.dtype)
        if w.ndim != 1:
            raise ValueError(f"{op}: weight must be one-dimensional, got shape {tuple(w.shape)}")
        if w.shape[0] != c:
            raise InvalidArgumentError(f"{op}: inconsistent weight size, expected {c} but got {list(w.shape)}")
        scale *= w[t_rows][:, None]
    scale[np.arange(n), t_rows] = 0
    x_y = rows.gather(1, Tensor(t_rows[:, None]))
    h = (m - x_y + rows).clamp(min=0)
    if p == 2:
        h = h * h
    loss = (h * Tensor(scale)).sum(1) / c
    return reduce_loss(loss.reshape(t.shape) if x.ndim == 1 else loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """Multi-label hinge loss (``torch.nn.functional.multilabel_margin_loss``). Each row of the
    target lists class indices, ended by the first -1; with T the listed classes (counted as
    often as listed) and the others k ∉ T,

        ℓ = (1/C) Σ_{j ∈ T} Σ_{k ∉ T} max(0, 1 - (x_j - x_k)).

    A composite: all pairwise hinges 1 - x_j + x_k as a (N, C, C) tensor (unsqueeze, subtract,
    clamp), multiplied by a constant count matrix (how often j is listed, times [k ∉ T]), summed.
    O(N C²) memory, fine for the class counts this loss is used with."""
    op = "multilabel_margin_loss"
    reduction = loss_reduction(op, reduction, size_average, reduce)
    x, t = _class_rows(op, input, target)
    if t.shape != x.shape:
        raise InvalidArgumentError(f"{op}: inconsistent target size: {list(t.shape)} for input of size: "
                                   f"{list(x.shape)} (the target must have the input's shape)")
    rows = x if x.ndim == 2 else x.reshape(1, -1)
    n, c = rows.shape
    t_rows = t.reshape(n, c)
    if np.any((t_rows < -1) | (t_rows >= c)):
        raise InvalidArgumentError(f"{op}: argument #2 'target' is out of range: entries must be class indices "
                                   f"in [0, {c}) or -1, got values in [{t_rows.min()}, {t_rows.max()}]")
    listed = np.cumsum(t_rows == -1, axis=1) == 0          # the entries before the first -1
    counts = np.zeros((n, c), x._data.dtype)
    r, j = np.nonzero(listed)
    np.add.at(counts, (r, t_rows[r, j]), 1)
    pairs = counts[:, :, None] * (counts == 0)[:, None, :]
    hinge = (1 - rows.unsqueeze(2) + rows.unsqueeze(1)).clamp(min=0)
    loss = (hinge * Tensor(pairs)).sum((1, 2)) / c
    return reduce_loss(loss if x.ndim == 2 else loss.reshape(()), reduction)


# ============================================================================ cosine embedding

_COSINE_EPS = 1e-12      # torch's EPSILON in cosine_embedding_loss, added to each squared norm


def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, size_average=None, reduce=None,
                          reduction: str = "mean") -> Tensor:
    """1 - cos(x1, x2) where y = 1, max(0, cos(x1, x2) - margin) where y = -1
    (``torch.nn.functional.cosine_embedding_loss``), with torch's cosine over the last dim

        cos = Σ x1 x2 / sqrt((Σ x1² + 1e-12)(Σ x2² + 1e-12)).

    A composite (multiply, sum, sqrt, divide, clamp, where). Inputs (N, D) with target (N,), or
    (D,) with a 0-d target; the label is a constant (labels other than ±1 give 0)."""
    op = "cosine_embedding_loss"
    reduction = loss_reduction(op, reduction, size_average, reduce)
    a, b = float_tensors(op, input1=input1, input2=input2)
    y = as_tensor(target, op, "target")
    if y.ndim > 1:
        raise InvalidArgumentError(f"{op}: 0D or 1D target tensor expected, multi-target not supported "
                                   f"(target has shape {tuple(y.shape)})")
    if a.ndim != y.ndim + 1 or b.ndim != y.ndim + 1:
        raise InvalidArgumentError(f"{op}: {y.ndim}D target tensor expects {y.ndim + 1}D input tensors, but "
                                   f"found inputs with sizes {list(a.shape)} and {list(b.shape)}")
    if a.shape != b.shape:
        raise InvalidArgumentError(f"{op}: input1 of shape {tuple(a.shape)} and input2 of shape {tuple(b.shape)} must have "
                                   f"the same shape")
    if y.ndim == 1 and y.shape[0] != a.shape[0]:
        raise InvalidArgumentError(f"{op}: target of shape {tuple(y.shape)} does not match the batch size "
                                   f"{a.shape[0]} of the inputs")
    m = check_real(op, "margin", margin)
    prod = (a * b).sum(-1)
    mag = ((a * a).sum(-1) + _COSINE_EPS) * ((b * b).sum(-1) + _COSINE_EPS)
    cos = prod / mag.sqrt()
    labels = y._data
    loss = where(Tensor(labels == 1), 1 - cos, 0.0) + where(Tensor(labels == -1), (cos - m).clamp(min=0), 0.0)
    return reduce_loss(loss, reduction)
