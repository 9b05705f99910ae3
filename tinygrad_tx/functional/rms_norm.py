"""RMS normalization (``torch.nn.functional.rms_norm``, torch 2.4+): a fused Function with the
hand-derived backward and its composite twin (the module ``nn.RMSNorm`` is in ``nn/rms_norm.py``).

Unlike LayerNorm, RMSNorm does not centre: each row is divided by its root mean square,
then scaled elementwise by ``weight`` (no bias). ``eps=None`` means
``torch.finfo(input.dtype).eps`` (``np.finfo`` here), as in torch.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import kernels
from ..core.function import ArrayFunction
from ..core.tensor import Tensor
from ._util import as_tensor, check_float


class RMSNormFn(ArrayFunction):
    """y = x ∘ r ∘ w,  r = 1/√(mean(x²) + eps),  mean over the trailing ``normalized_shape``
    dimensions (D elements per row below); w = 1 when there is no weight.

    Backward, g = dL/dy. Write ĝ = g ∘ w (the gradient reaching x ∘ r). Since
    ∂r/∂x_j = -½ (mean(x²) + eps)^(-3/2) · 2x_j / D = -r³ x_j / D,

        ∂(x_i r)/∂x_j = r δ_ij - x_i r³ x_j / D,

    and summing ĝ_i against it gives

        dL/dx = r · (ĝ - x ∘ r² · mean(ĝ ∘ x))        (mean over the row),
        dL/dw = g ∘ x ∘ r   (in the broadcast shape; the engine sums it over the rows).

    Saved: x and w; the backward recomputes r from x (one pass over the row), so that every
    value it reads is an input: it runs on Tensors as it is, and gradients of gradients
    (``create_graph=True``) differentiate this very derivation.

    Where a C compiler is found (float32/float64, arrays rather than Tensors), both directions
    run as ``kernels.rms_norm_forward`` / ``rms_norm_backward``: the same formulas, one row at a
    time (the row sums in the dtype's vector lanes, dw summed over rows in double), the NumPy
    code below staying the reference and the fallback.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, weight, *, ndim_normalized, eps):
        dims = tuple(range(x.ndim - ndim_normalized, x.ndim))
        ctx.save_for_backward(x, weight)
        ctx.dims, ctx.eps = dims, eps
        d = int(np.prod(x.shape[x.ndim - ndim_normalized:]))
        if x.ndim:
            fast = kernels.rms_norm_forward(x.reshape(-1, d), None if weight is None else weight.reshape(d), eps)
            if fast is not None:                   # one C pass per row (docs/kernels.md)
                return fast.reshape(x.shape)
        y = x * _inverse_rms(x, dims, eps)
        if weight is not None:
            y = y * weight
        return y

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        need_x, need_w = ctx.needs_input_grad
        if isinstance(x, np.ndarray) and isinstance(g, np.ndarray) and x.ndim:
            d = int(np.prod(x.shape[x.ndim - len(ctx.dims):]))
            w = None if weight is None else weight.reshape(d)
            fast = kernels.rms_norm_backward(x.reshape(-1, d), np.broadcast_to(g, x.shape).reshape(-1, d), w,
                                             ctx.eps, bool(need_x), bool(need_w and weight is not None))
            if fast is not None:                   # one C pass per row (docs/kernels.md)
                dx, dw = fast
                return (None if dx is None else dx.reshape(x.shape),
                        None if dw is None else dw.astype(x.dtype).reshape(weight.shape))
        r = _inverse_rms(x, ctx.dims, ctx.eps)
        gw = g if weight is None else g * weight
        dx = dw = None
        if need_x:
            mean_gx = np.mean(gw * x, axis=ctx.dims, keepdims=True)
            dx = r * (gw - x * (r * r) * mean_gx)
        if need_w:
            dw = g * x * r
        return dx, dw


def _inverse_rms(x, dims, eps: float):
    """r = 1/√(mean(x²) + eps) per row (kept dims), in x's dtype (``eps`` a Python float)."""
    return 1.0 / np.sqrt(np.mean(x * x, axis=dims, keepdims=True) + eps)


def _check(input, normalized_shape, weight, eps, op):
    x = as_tensor(input, op, "input")
    w = None if weight is None else as_tensor(weight, op, "weight")
    check_float(op, input=x, weight=w)
    shape = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) else tuple(normalized_shape)
    if not shape or any(isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1 for n in shape):
        raise ValueError(f"{op}: normalized_shape must be a non-empty sequence of positive ints, "
                         f"got {normalized_shape!r}")
    if x.ndim < len(shape) or tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise ValueError(f"{op}: Given normalized_shape={list(shape)}, expected input with shape "
                         f"[*, {', '.join(map(str, shape))}], but got input of size {list(x.shape)}")
    if w is not None and tuple(w.shape) != shape:
        raise ValueError(f"{op}: Expected weight to be of same shape as normalized_shape, but got weight of "
                         f"shape {list(w.shape)} and normalized_shape = {list(shape)}")
    if eps is None:
        eps = float(np.finfo(x.dtype).eps)
    elif not isinstance(eps, numbers.Real) or isinstance(eps, bool) or eps < 0:
        raise ValueError(f"{op}: eps must be a non-negative number or None, got {eps!r}")
    return x, w, len(shape), float(eps)


def rms_norm(input, normalized_shape, weight=None, eps=None) -> Tensor:
    """RMS normalization over the trailing ``normalized_shape`` dimensions
    (``torch.nn.functional.rms_norm``); fused forward and closed-form backward."""
    x, w, k, eps = _check(input, normalized_shape, weight, eps, "rms_norm")
    return RMSNormFn.apply(x, w, ndim_normalized=k, eps=eps)


def rms_norm_composite(input, normalized_shape, weight=None, eps=None) -> Tensor:
    """RMS normalization from primitives: x / sqrt(mean(x²) + eps) * weight, differentiated
    op by op by the engine (the same gradient as the fused ``RMSNormFn``)."""
    x, w, k, eps = _check(input, normalized_shape, weight, eps, "rms_norm_composite")
    dims = tuple(range(-k, 0))
    y = x / ((x * x).mean(dims, keepdim=True) + eps).sqrt()
    return y if w is None else y * w
