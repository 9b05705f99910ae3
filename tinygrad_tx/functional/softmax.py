"""Softmax and log-softmax along a dimension: fused Functions and their composites.

Read the composites first (``softmax_composite``, ``log_softmax_composite``):
they are the definitions written with Tensor primitives, and autograd
differentiates them op by op. The fused Functions compute the same values in
one pass and replace the chain of primitive backwards by the closed form
derived in ``closed_form.py`` (``SoftmaxClosedForm``, ``LogSoftmaxClosedForm``);
their docstrings give only what the speed adds.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import kernels
from ..core import dtypes
from ..core.function import ArrayFunction
from .closed_form import LogSoftmaxClosedForm, SoftmaxClosedForm
from ..tensor import Tensor, _canonical_dim
from ._util import as_tensor, check_float, from_rows, row_blocks, row_max, row_sums, to_rows


class SoftmaxFn(ArrayFunction):
    """y = softmax(x) along ``dim``, the closed form tuned for speed.
    Derivation: ``SoftmaxClosedForm`` (functional/closed_form.py); dx = y ∘ (g - ⟨g, y⟩).

    Skipped shift. The shift by the row maximum m is only needed where the exponentials
    would overflow. Where no e^{x_k} of a row overflows and the row's sum of exponentials
    is at least √tiny (tiny: the smallest normal float; terms lost to subnormals are then
    negligible), e^{x_i} / Σ_k e^{x_k} is as accurate as the shifted form — slightly more, as
    x_i - m is itself rounded — and saves two passes over the data (the row maxima and the
    subtraction). So the forward exponentiates x as it is (``_softmax_unshifted``) and redoes,
    shifted, only the rows whose sum came out inf, nan or below √tiny (``_shift_rows_that_need_it``).

    Saved: y, as the closed form.

    One step of refinement. Where a row saturates (one y_i near 1), g_i - ⟨g, y⟩ is a small
    difference of numbers of the size of g: the rounding of ⟨g, y⟩ and of y itself (Σ y is 1
    only to an ulp or two) becomes a large relative error of dx. So with h = g - ⟨g, y⟩ the
    backward returns y ∘ (h - ⟨h, y⟩): equal in exact arithmetic (⟨h, y⟩ = ⟨g, y⟩(1 - Σ y)),
    but ⟨h, y⟩ is small and rounded at h's size, and it takes back out of h the error that
    Σ y ≠ 1 put in. Measured on 3,000 drawn float32 inputs (the suite's shapes, scale 3): our
    gradient's error against a float64 oracle at most 0.6x torch's (was up to 8x, 0.13% of
    draws over the 4x rule). It costs three passes more: backward of (16384, 128) float32
    1.9 -> 3.1 ms, forward + backward of (16, 8, 128, 128) 5.6 -> 6.9 ms (one thread, 2026-12-03).

    Gradients of gradients (``create_graph=True``) go through ``SoftmaxClosedForm``, whose
    backward is the unrefined formula without buffers or blocks; it reads only y, this node's output.

    Layout. Both directions work on the slices along ``dim`` as the rows of a
    2-D array (``to_rows``: a view in the usual case of the last dim), in
    blocks of rows that stay in cache across the passes each makes
    (``row_blocks``; measured on this shared 2-core VM, fwd+bwd of (8192, 256) float32,
    one thread, medians, 2026-12-02: whole/blocked 0.97x to 1.7x over three runs — no
    gain that stands above the noise here). Row sums are matrix-vector products with a vector of
    ones (``row_sums``): BLAS sums a short row 5.5x faster than ``np.sum``
    ((4096, 64) float32: 0.115 -> 0.021 ms, one thread, 2026-12-02).
    """

    @staticmethod
    def forward(ctx, x, *, dim):
        x2 = to_rows(x, dim)
        y2 = kernels.softmax_forward(x2)                  # one C pass per row (docs/kernels.md)
        if y2 is None:
            y2 = np.empty_like(x2)
            _shift_rows_that_need_it(x2, y2, _softmax_unshifted(x2, y2))
        ctx.save_for_backward(y2)
        ctx.shape, ctx.dim = x.shape, dim
        return from_rows(y2, x.shape, dim)

    twice_differentiable_via = SoftmaxClosedForm   # gradients of gradients go through it

    @staticmethod
    def closed_form_saved(ctx, as_output):
        """The closed form's saved values: y, this node's output (with its history)."""
        (y2,) = ctx.saved_tensors
        return (as_output(from_rows(y2, ctx.shape, ctx.dim)),), {"dim": ctx.dim}

    @staticmethod
    def backward(ctx, g):
        (y2,) = ctx.saved_tensors
        g2 = to_rows(g, ctx.dim)
        fast = kernels.softmax_backward(y2, g2)           # the same refined formula, in C
        if fast is not None:
            return from_rows(fast, ctx.shape, ctx.dim)
        dx2 = np.empty_like(y2)
        blocks = row_blocks(*y2.shape)
        scratch = np.empty_like(y2[blocks[0]] if blocks else y2)
        for rows in blocks:
            gb, yb, db = g2[rows], y2[rows], dx2[rows]
            h = scratch[:len(yb)]
            np.multiply(gb, yb, out=db)
            np.subtract(gb, row_sums(db)[:, None], out=h)   # h = g - ⟨g, y⟩
            np.multiply(h, yb, out=db)
            h -= row_sums(db)[:, None]                      # refined: h - ⟨h, y⟩ (see above)
            np.multiply(h, yb, out=db)
        return from_rows(dx2, ctx.shape, ctx.dim)


def _softmax_unshifted(x2: np.ndarray, y2: np.ndarray) -> np.ndarray:
    """y2 = e^x / Σ e^x row by row, without the max shift; returns the row sums Σ e^x.

    Why: the shift is only needed where e^x overflows or the sum underflows, and skipping it
    saves two passes (the row maxima and the subtraction): 0.72 -> 0.45 ms (1.6x) on
    (4096, 64) float32, one thread, medians, 2026-12-02. Rows that did need it are redone
    by :func:`_shift_rows_that_need_it`.
    """
    totals = np.empty(x2.shape[0], x2.dtype)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # bad rows are redone
        for rows in row_blocks(*x2.shape):
            yb = np.exp(x2[rows], out=y2[rows])
            yb /= row_sums(yb, out=totals[rows])[:, None]
    return totals


def _shift_rows_that_need_it(x2: np.ndarray, y2: np.ndarray, totals: np.ndarray) -> None:
    """Redo, shifted by their maxima, the rows whose unshifted sum of exponentials came out
    inf, nan or below √tiny (overflow, nan, or terms lost to subnormals): the correctness half
    of :func:`_softmax_unshifted`'s trick; it costs nothing when every row was fine."""
    bad = ~((totals >= np.sqrt(np.finfo(x2.dtype).tiny)) & (totals < np.inf))
    if bad.any():
        with np.errstate(invalid="ignore"):
            shifted = x2[bad] - row_max(x2[bad])   # an all -inf row gives nan, as in torch
            e = np.exp(shifted, out=shifted)
            y2[bad] = e / np.sum(e, axis=1, keepdims=True)


class LogSoftmaxFn(ArrayFunction):
    """y = log softmax(x) along ``dim``, the closed form tuned for speed.
    Derivation: ``LogSoftmaxClosedForm`` (functional/closed_form.py).

    Saved: y, as the closed form (exponentiated again in the backward).

    Layout: rows in cache-sized blocks, as in ``SoftmaxFn``; the exponentials
    go to one block-sized scratch array. (Measured 2026-12-02 on this shared VM, fwd+bwd
    of (8192, 256) float32, one thread: blocked 0.8x to 0.9x the speed of one whole-array
    pass — the blocks do not pay here.) Gradients of gradients (``create_graph=True``) go
    through ``LogSoftmaxClosedForm``; it reads only y, this node's output.
    """

    twice_differentiable_via = LogSoftmaxClosedForm   # gradients of gradients go through it

    @staticmethod
    def closed_form_saved(ctx, as_output):
        """The closed form's saved values: y, this node's output (with its history)."""
        (y2,) = ctx.saved_tensors
        return (as_output(from_rows(y2, ctx.shape, ctx.dim)),), {"dim": ctx.dim}

    @staticmethod
    def forward(ctx, x, *, dim):
        x2 = to_rows(x, dim)
        ctx.shape, ctx.dim = x.shape, dim
        fast = kernels.log_softmax_forward(x2)            # one C pass per row (docs/kernels.md)
        if fast is not None:
            ctx.save_for_backward(fast)
            return from_rows(fast, x.shape, dim)
        y2 = np.empty_like(x2)
        blocks = row_blocks(*x2.shape)
        scratch = np.empty_like(x2[blocks[0]] if blocks else x2)
        with np.errstate(invalid="ignore", divide="ignore"):  # an all -inf row gives nan, as in torch;
            # an empty one (dim of size 0) log 0, subtracted from nothing
            for rows in blocks:
                xb, yb = x2[rows], y2[rows]
                np.subtract(xb, row_max(xb), out=yb)
                e = np.exp(yb, out=scratch[:len(yb)])
                yb -= np.log(row_sums(e))[:, None]
        ctx.save_for_backward(y2)
        ctx.shape, ctx.dim = x.shape, dim
        return from_rows(y2, x.shape, dim)

    @staticmethod
    def backward(ctx, g):
        (y2,) = ctx.saved_tensors
        g2 = to_rows(g, ctx.dim)
        fast = kernels.log_softmax_backward(y2, g2)
        if fast is not None:
            return from_rows(fast, ctx.shape, ctx.dim)
        dx2 = np.empty_like(y2)
        for rows in row_blocks(*y2.shape):
            gb, db = g2[rows], dx2[rows]
            np.exp(y2[rows], out=db)                       # softmax(x)
            db *= row_sums(gb)[:, None]                    # e^y Σ g
            np.subtract(gb, db, out=db)
        return from_rows(dx2, ctx.shape, ctx.dim)


def _implicit_dim(ndim: int, op: str) -> int:
    """torch's legacy rule for ``dim=None``: dim 0 for 0-, 1- and 3-d inputs, else dim 1
    (with torch's deprecation warning)."""
    warnings.warn(f"Implicit dimension choice for {op} has been deprecated. Change the call to "
                  f"include dim=X as an argument.", UserWarning, stacklevel=4)
    return 0 if ndim in (0, 1, 3) else 1


def _prepare(input, dim, op, dtype=None):
    """(input cast to ``dtype`` if given, canonical dim). The cast is a graph op, so the
    gradient flows back to the input in its own dtype, as torch's ``dtype=`` does."""
    x = as_tensor(input, op, "input")
    dt = dtypes.resolve(dtype, f"{op}: dtype")
    if dt is not None and dt != x._data.dtype:
        if dt.kind != "f":
            raise TypeError(f"{op}: dtype must be a floating point dtype, got {dtype!r}")
        x = x.to(dt)
    check_float(op, input=x)
    if dim is None:
        dim = _implicit_dim(x.ndim, op)
    return x, _canonical_dim(dim, x.ndim, op)


def softmax(input, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """Softmax along ``dim`` (``torch.nn.functional.softmax``); fused forward and backward.

    ``dtype`` casts the input first (e.g. float32 logits softmaxed in float64, or integer
    ones). ``dim=None`` picks torch's legacy implicit dimension, with its warning.
    A slice that is entirely -inf has no defined softmax: the result is nan,
    as in torch (attention handles fully masked rows itself; see
    ``scaled_dot_product_attention``).
    """
    x, d = _prepare(input, dim, "softmax", dtype)
    return SoftmaxFn.apply(x, dim=d)


def log_softmax(input, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """log(softmax(input)) along ``dim``, computed stably (``torch.nn.functional.log_softmax``;
    ``dtype`` and ``dim=None`` as in :func:`softmax`)."""
    x, d = _prepare(input, dim, "log_softmax", dtype)
    return LogSoftmaxFn.apply(x, dim=d)


def softmin(input, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """softmax(-x) along ``dim`` (``torch.nn.functional.softmin``): a composite of negation and
    the fused softmax, whose gradient is torch's (dL/dx = -softmax'(-x)ᵀ g)."""
    x, d = _prepare(input, dim, "softmin", dtype)
    return SoftmaxFn.apply(-x, dim=d)


def softmax_composite(input, dim: int) -> Tensor:
    """Softmax from primitives: exp(x - max) / sum(exp(x - max)).

    The max is detached: softmax does not depend on the shift (its gradient
    through the max is exactly zero), so it is a constant for autograd.
    """
    x, d = _prepare(input, dim, "softmax_composite")
    e = (x - x.detach().amax(d, keepdim=True)).exp()
    return e / e.sum(d, keepdim=True)


def log_softmax_composite(input, dim: int) -> Tensor:
    """log softmax from primitives: s - log(sum(exp(s))) with s = x - max(x) (max detached)."""
    x, d = _prepare(input, dim, "log_softmax_composite")
    s = x - x.detach().amax(d, keepdim=True)
    return s - s.exp().sum(d, keepdim=True).log()
