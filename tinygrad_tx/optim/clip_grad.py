"""Gradient clipping (``torch.nn.utils.clip_grad_norm_`` and friends), in place on ``p.grad``.

``clip_grad_norm_`` treats all gradients as one long vector ``G``, computes its
p-norm ``|G|_p`` (the p-norm of the per-tensor p-norms) and, when that exceeds
``max_norm``, scales every gradient by ``max_norm / (|G|_p + 1e-6)``, so the
clipped vector keeps its direction and has norm just under ``max_norm``. Like
torch it always multiplies, by ``min(max_norm / (|G|_p + 1e-6), 1)``.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..core.dtypes import default_float
from ..core.tensor import Tensor


def _as_list(parameters, op: str = "clip_grad_norm_") -> list:
    if isinstance(parameters, Tensor):
        return [parameters]
    try:
        return list(parameters)
    except TypeError:
        raise TypeError(f"{op}(): parameters must be a Tensor or an iterable of Tensors, got "
                        f"{type(parameters).__name__} ({parameters!r})") from None


def _float_arg(value, op: str, arg: str) -> float:
    """``float(value)`` as torch computes it (so ``'inf'`` is accepted), with our message:
    a string that is not a number is a ValueError, any other non-number a TypeError."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise ValueError(f"{op}(): {arg} must be a float (or 'inf'), got {value!r}") from None
    if isinstance(value, Tensor) and value._data.size == 1:
        return float(value._data)
    if not isinstance(value, numbers.Real):
        raise TypeError(f"{op}(): {arg} must be a float, got {type(value).__name__} ({value!r})")
    return float(value)


def _grads(parameters) -> list[np.ndarray]:
    """The gradients to clip in place, as arrays.

    A gradient array that cannot be written in place (read-only, or of another
    dtype) is first replaced inside its grad Tensor by a writable copy in the
    parameter's dtype, so that the in-place update reaches ``p.grad``; each grad
    Tensor's version is bumped, as torch's in-place ``mul_`` would.
    """
    grads = []
    for p in parameters:
        g = p.grad
        if g is None:
            continue
        if not g._data.flags.writeable or g._data.dtype != p._data.dtype:
            g._data = np.array(g._data, dtype=p._data.dtype)
        g._bump()
        grads.append(g._data)
    return grads


def _vector_norm(x: np.ndarray, norm_type: float) -> np.float64:
    """The p-norm of ``x`` viewed as a vector, accumulated in float64.

    inf: max |x|; -inf: min |x|; 0: number of non-zeros; otherwise
    ``(sum |x|^p)^(1/p)``.
    """
    a = np.abs(x.astype(np.float64, copy=False)).ravel()
    if norm_type == np.inf:
        return a.max(initial=0.0)
    if norm_type == -np.inf:
        if a.size == 0:
            raise ValueError("the -inf norm of an empty gradient is undefined")
        return a.min()
    if norm_type == 0:
        return np.float64(np.count_nonzero(a))
    if norm_type == 1:
        return a.sum()
    if norm_type == 2:
        return np.sqrt(np.dot(a, a))
    return np.sum(a ** norm_type) ** (1.0 / norm_type)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False) -> np.ndarray:
    """The p-norm of the norms of ``tensors`` (arrays), as a 0-d array of their common dtype."""
    norm_type = _float_arg(norm_type, "get_total_norm", "norm_type")
    tensors = [t._data if isinstance(t, Tensor) else np.asarray(t) for t in _as_list(tensors, "get_total_norm")]
    if len(tensors) == 0:
        return np.zeros((), dtype=default_float())
    norms = np.array([_vector_norm(t, norm_type) for t in tensors])
    dtype = np.result_type(*[t.dtype for t in tensors])
    total = np.asarray(_vector_norm(norms, norm_type), dtype=dtype)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite "
                           f"({float(total)}), so it cannot be clipped. To disable this error and scale the "
                           f"gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm: float, total_norm) -> None:
    """Scale every ``p.grad`` in place by ``min(max_norm / (total_norm + 1e-6), 1)``."""
    parameters = _as_list(parameters, "clip_grads_with_norm_")
    max_norm = _float_arg(max_norm, "clip_grads_with_norm_", "max_norm")
    total_norm = np.asarray(total_norm)
    with np.errstate(over="ignore"):   # float16, a norm near 0: the ratio is inf, clamped to 1 (torch's value)
        coef = np.minimum(max_norm / (total_norm + total_norm.dtype.type(1e-6)), total_norm.dtype.type(1.0))
    with np.errstate(invalid="ignore"):  # an inf gradient times a 0 coefficient is nan, as in torch
        for g in _grads(parameters):
            g *= coef.astype(g.dtype)


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False) -> np.ndarray:
    """Clip the gradients of ``parameters`` (a Tensor or an iterable of them) to a total p-norm.

    Returns the total norm *before* clipping, a 0-d array in the gradients'
    dtype (``float(...)`` or ``.item()`` give a Python float). ``norm_type``:
    any float, ``inf`` for the max-norm. ``error_if_nonfinite``: raise
    ``RuntimeError`` instead of scaling by a nan/inf norm.
    """
    parameters = _as_list(parameters)
    max_norm = _float_arg(max_norm, "clip_grad_norm_", "max_norm")        # checked before any gradient
    norm_type = _float_arg(norm_type, "clip_grad_norm_", "norm_type")     # is touched
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_value_(parameters, clip_value: float) -> None:
    """Clamp every ``p.grad`` in place to ``[-clip_value, clip_value]``."""
    clip_value = _float_arg(clip_value, "clip_grad_value_", "clip_value")
    for g in _grads(_as_list(parameters, "clip_grad_value_")):
        np.clip(g, -clip_value, clip_value, out=g)
