"""``tinygrad_tx.linalg``: vector and matrix norms (torch.linalg's ``vector_norm``,
``matrix_norm``, ``norm``) and torch.norm's semantics (``Tensor.norm``); the square systems
``det``, ``slogdet``, ``inv``, ``solve`` live in ``ops/linsolve.py`` (forward and backward side by
side) and are exported here under torch.linalg's names.

The one primitive is :class:`VectorNorm`; ``matrix_norm`` for ord 1/-1/inf/-inf is
torch's own composite (abs-sums along one dim with ``vector_norm(ord=1)``, then
``amax``/``amin`` along the other), and 'fro' is ``vector_norm(2)`` over the two dims.
The spectral and nuclear norms (ord 2, -2, 'nuc') need an SVD and are not provided.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .core import dtypes
from .core.function import ArrayFunction
from .core.broadcast import accumulation_dtype
from .ops.reduce import as_function, normalize_dims, reduce_axes, save_reduced, saved_reduced

from .ops.linsolve import LinAlgError, det, inv, slogdet, solve  # noqa: F401 (torch.linalg's names)

__all__ = ["vector_norm", "matrix_norm", "norm", "VectorNorm", "det", "slogdet", "inv", "solve", "LinAlgError"]


class VectorNorm(ArrayFunction):
    """y = (Σ |x|^p)^{1/p} over the reduced axes; p = inf: max |x|, p = -inf: min |x|,
    p = 0: the number of nonzero elements.

    dy/dx = (1/p)(Σ|x|^p)^{1/p − 1} · p |x|^{p−1} sign(x) = sign(x) |x|^{p−1} / y^{p−1}.
    Written as torch does, with its subgradients where a factor is 0/0 or 0·inf:

    * p = 2: x / y, and 0 where y = 0 (the subgradient at the origin);
    * 1 <= p < 2, p > 2: sign(x)|x|^{p−1} / y^{p−1}, 0 where y = 0 (p = 1 gives sign(x));
    * p < 1: sign(x)|x|^{p−1} · y^{1−p}, with sign(x)|x|^{p−1} taken as 0 where x = 0;
    * p = ±inf: y is |x| at the selected elements; sign(x) shared evenly by the ties;
    * p = 0: piecewise constant: no gradient (None, as torch).

    The backward reads only x and y (``save_reduced``) and runs on Tensors: it differentiates
    again (``create_graph=True``), its selections and signs being constants.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, ord=2.0, axes=(), keepdim=False):
        a = np.abs(x)
        acc = accumulation_dtype(x.dtype)
        if ord == math.inf or ord == -math.inf:
            if x.size == 0:
                raise ValueError(f"vector_norm(): cannot compute the {ord} norm of an empty tensor "
                                 "(the operation has no identity)")
            y = (np.max if ord > 0 else np.min)(a, axis=axes, keepdims=True)
        elif ord == 0:
            y = np.sum(a != 0, axis=axes, keepdims=True).astype(x.dtype)
        elif ord == 1:
            y = np.sum(a, axis=axes, keepdims=True, dtype=acc)
        elif ord == 2:
            y = np.sqrt(np.sum(a * a, axis=axes, keepdims=True, dtype=acc))
        else:
            if ord < 0 and x.size == 0:
                raise ValueError(f"vector_norm(): cannot compute the {ord} norm of an empty tensor "
                                 "(the operation has no identity)")
            with np.errstate(divide="ignore", over="ignore"):
                a64 = a.astype(np.float64) if acc is not None else a
                y = np.sum(a64 ** ord, axis=axes, keepdims=True) ** (1.0 / ord)
        ctx.ord = ord
        return save_reduced(ctx, x, np.asarray(y).astype(x.dtype), axes, keepdim)

    @staticmethod
    def backward(ctx, g):
        p = ctx.ord
        if p == 0:
            return None
        x, y, g = saved_reduced(ctx, g)
        zero = np.zeros((), x.dtype)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if p == math.inf or p == -math.inf:
                hit = np.abs(x) == y
                count = np.astype(np.sum(hit, axis=ctx.axes, keepdims=True), np.result_type(x))
                return np.sign(x) * hit * (g / count)
            if p == 1:
                return np.sign(x) * g
            if p < 1:
                scaled = np.where(x == 0, zero, np.sign(x) * np.abs(x) ** (p - 1))
                return scaled * g * y ** (1 - p)
            scale = np.where(y == 0, zero, g / (y if p == 2 else y ** (p - 1)))
            scaled = x if p == 2 else np.sign(x) * np.abs(x) ** (p - 1)
            return scaled * scale


def _ord_number(ord, op):
    if isinstance(ord, bool) or not isinstance(ord, numbers.Real):
        raise TypeError(f"{op}(): argument 'ord' must be a number, got {ord!r} ({type(ord).__name__})")
    return float(ord)


def _cast(x, dtype, op):
    """The input cast to ``dtype=`` (float only, no narrowing), as torch checks it."""
    if x._data.dtype.kind not in "fc":
        raise TypeError(f"{op}(): expected a floating point input, got dtype {x._data.dtype}")
    dt = dtypes.resolve(dtype, f"{op}(): dtype")
    if dt is None or dt == x._data.dtype:
        return x
    if dt.kind not in "fc":
        raise TypeError(f"{op}(): dtype should be floating point, got {dt}")
    if np.promote_types(x._data.dtype, dt) != dt:
        raise TypeError(f"{op}(): the input dtype {x._data.dtype} cannot be converted to {dt} "
                        "without narrowing")
    return x.to(dt)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.vector_norm: the ord-norm of x flattened (dim None or ()) or over dim."""
    p = _ord_number(ord, "vector_norm")
    x = _cast(x, dtype, "vector_norm")
    return VectorNorm.apply(x, ord=p, axes=reduce_axes(dim, x.ndim, "vector_norm"), keepdim=keepdim)


def _matrix_dims(x, dim, op):
    if x.ndim < 2:
        raise ValueError(f"{op}(): the input must have at least 2 dimensions, got shape {tuple(x.shape)}")
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise ValueError(f"{op}(): dim must be a 2-tuple, got {dim!r}")
    d0, d1 = normalize_dims(dim[0], x.ndim, op)[0], normalize_dims(dim[1], x.ndim, op)[0]
    if d0 == d1:
        raise ValueError(f"{op}(): dims must be different, got {dim!r}")
    return d0, d1


def matrix_norm(x, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """torch.linalg.matrix_norm: 'fro', or ord 1/-1 (max/min column abs-sum), inf/-inf
    (max/min row abs-sum) of the matrices in the two dims ``dim``."""
    d0, d1 = _matrix_dims(x, dim, "matrix_norm")
    x = _cast(x, dtype, "matrix_norm")
    if ord == "fro":
        return VectorNorm.apply(x, ord=2.0, axes=tuple(sorted((d0, d1))), keepdim=keepdim)
    if ord in ("nuc", 2, -2):
        raise NotImplementedError(f"matrix_norm(): ord={ord!r} needs singular values, which "
                                  "tinygrad_tx does not compute")
    if isinstance(ord, str) or isinstance(ord, bool) or ord not in (1, -1, math.inf, -math.inf):
        raise ValueError(f"matrix_norm(): order {ord!r} is not supported (use 'fro', 1, -1, inf, -inf)")
    sum_dim, pick = (d0, d1) if abs(ord) == 1 else (d1, d0)
    sums = VectorNorm.apply(x, ord=1.0, axes=(sum_dim,), keepdim=True)
    out = sums.amax(pick, keepdim=True) if ord > 0 else sums.amin(pick, keepdim=True)
    return out if keepdim else out.squeeze((d0, d1))


def norm(x, ord=None, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.norm: a vector norm when dim is an int (or ord is given for a 1-D input),
    a matrix norm when dim is a 2-tuple (or ord is given for a 2-D input); without ord and
    dim, the 2-norm of x flattened."""
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
        dim = (dim,)
    if dim is not None:
        if len(dim) == 1:
            return vector_norm(x, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
        return matrix_norm(x, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(x, 2, None, keepdim, dtype=dtype)
    if x.ndim == 1:
        return vector_norm(x, ord, None, keepdim, dtype=dtype)
    if x.ndim == 2:
        return matrix_norm(x, ord, (-2, -1), keepdim, dtype=dtype)
    raise ValueError(f"linalg.norm(): the input must be 1-D or 2-D when ord is given and dim is "
                     f"None, got shape {tuple(x.shape)}")


def norm_(x, p="fro", dim=None, keepdim=False, dtype=None):
    """torch.norm / Tensor.norm: a numeric p is a vector norm over dim (all dims when None);
    'fro' is the 2-norm over dim (at most 2 dims); 'nuc' and other strings go to
    matrix_norm over dim (all dims when None)."""
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
        dim = (dim,)
    if isinstance(p, str):
        if p == "fro" and (dim is None or len(dim) <= 2):
            return vector_norm(x, 2, dim, keepdim, dtype=dtype)
        return matrix_norm(x, p, tuple(range(x.ndim)) if dim is None else tuple(dim), keepdim, dtype=dtype)
    return vector_norm(x, 2 if p is None else p, dim, keepdim, dtype=dtype)


# Tensor.norm and torch.norm (bound by _bind.py; linalg.py imports ops/reduce.py, not the reverse)
TENSOR_METHODS = {"norm": norm_}
FUNCTIONS = {"norm": as_function("norm", norm_)}
