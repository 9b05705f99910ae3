"""``tinygrad_tx.nn.utils``: gradient clipping and flattening parameters, as ``torch.nn.utils``.

The clipping arithmetic lives in :mod:`tinygrad_tx.optim.clip_grad` (one copy); here it gets
torch's ``nn.utils`` signatures: the total norm comes back as a 0-d Tensor, and ``foreach=``
is accepted (NumPy has no multi-tensor kernels to choose between, so it changes nothing).
"""
from __future__ import annotations

import numpy as np

from ...optim import clip_grad as _clip
from ...tensor import Tensor, cat

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters"]


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None) -> Tensor:
    """Scale the gradients of ``parameters`` (a Tensor or an iterable of Tensors) in place so that
    their total ``norm_type``-norm (all gradients seen as one vector) is at most ``max_norm``:
    every gradient is multiplied by ``min(max_norm / (total + 1e-6), 1)``. Returns the total
    norm before clipping, a 0-d Tensor. ``error_if_nonfinite=True`` raises RuntimeError for
    a nan/inf total instead of scaling by it."""
    total = _clip.clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite)
    return Tensor(np.asarray(total))


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient of ``parameters`` in place to ``[-clip_value, clip_value]``."""
    _clip.clip_grad_value_(parameters, clip_value)


def _parameter_list(parameters, where: str) -> list:
    if isinstance(parameters, Tensor):
        return [parameters]
    params = list(parameters)
    for p in params:
        if not isinstance(p, Tensor):
            raise TypeError(f"{where}: expected an iterable of Tensors, got an element of type {type(p).__name__}")
    return params


def parameters_to_vector(parameters) -> Tensor:
    """All parameters flattened and concatenated into one 1-D Tensor (in iteration order).

    Built from ``reshape(-1)`` and ``cat``, so it is differentiable: a gradient of the vector
    flows back to each parameter, as in torch."""
    params = _parameter_list(parameters, "parameters_to_vector")
    if not params:
        raise ValueError("parameters_to_vector: expected a non-empty iterable of Tensors (torch.cat of nothing)")
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec, parameters) -> None:
    """Copy consecutive slices of the 1-D ``vec`` into each parameter (in iteration order).

    torch makes each ``param.data`` a view of ``vec``; here the values are copied **into** the
    existing arrays instead, so Parameter identity, tied weights and optimizer buffers are kept
    (later changes to ``vec`` do not reach the parameters)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"vector_to_parameters: expected a Tensor as vec, but got: {type(vec).__name__}")
    params = _parameter_list(parameters, "vector_to_parameters")
    need = sum(p._data.size for p in params)
    if vec.ndim != 1 or vec._data.size != need:
        raise ValueError(f"vector_to_parameters: vec has shape {tuple(vec.shape)}, but the parameters hold {need} "
                         f"values: expected shape ({need},)")
    pointer = 0
    for p in params:
        n = p._data.size
        np.copyto(p._data, vec._data[pointer:pointer + n].reshape(p.shape), casting="unsafe")
        pointer += n


from . import rnn  # noqa: E402  (torch.nn.utils.rnn: padded and packed sequences)
