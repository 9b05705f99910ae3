"""The functional ops torch also has at top level (``torch.softmax``, ``torch.dropout``, ...),
with torch's top-level signatures, which differ from ``torch.nn.functional``'s for some:
``torch.dropout(input, p, train)`` needs every argument, ``torch.embedding(weight, indices)``
takes the table first and reads ``padding_idx=-1`` as "none", ``torch.softmax(input, dim,
dtype=None)`` needs ``dim``. Exported as ``tinygrad_tx.<name>`` by ``functional/__init__.py``.
"""
from __future__ import annotations

from .activation import dropout as _dropout
from .embedding import embedding as _embedding
from .normalization import layer_norm as _layer_norm
from .softmax import log_softmax, softmax


def softmax_method(input, dim, dtype=None):
    """``torch.softmax(input, dim, dtype=None)`` and ``Tensor.softmax(dim, dtype=None)``."""
    return softmax(input, dim, dtype=dtype)


def log_softmax_method(input, dim, dtype=None):
    """``torch.log_softmax(input, dim, dtype=None)`` and ``Tensor.log_softmax(dim, dtype=None)``."""
    return log_softmax(input, dim, dtype=dtype)


def dropout(input, p, train):
    """``torch.dropout(input, p, train)``."""
    return _dropout(input, p, training=train)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5, cudnn_enable: bool = True):
    """``torch.layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable)``."""
    return _layer_norm(input, normalized_shape, weight, bias, eps)


def embedding(weight, input, padding_idx: int = -1, scale_grad_by_freq: bool = False, sparse: bool = False):
    """``torch.embedding(weight, indices, padding_idx=-1, ...)``: the table first; a negative
    ``padding_idx`` means no padding row (unlike ``F.embedding``, where -1 is the last row)."""
    return _embedding(input, weight, padding_idx=None if padding_idx < 0 else padding_idx,
                      scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)
