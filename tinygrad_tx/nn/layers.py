"""The layers: Linear, Embedding, LayerNorm, BatchNorm1d/2d, Dropout, GELU, ReLU, Tanh (Conv1d/Conv2d: ``conv.py``).

Each layer owns its Parameters and buffers, initialises them as torch does
(``reset_parameters``, distributions documented in :mod:`tinygrad_tx.nn.init`),
checks its input with a ValueError/TypeError that names the shapes or values
involved, and computes its forward with the functional ops of
``tinygrad_tx.functional`` (or :func:`tinygrad_tx.functional.batch_norm.batch_norm`),
whose backwards are written by hand. Constructor arguments, attribute names,
state-dict keys and reprs follow ``torch.nn``; ``dtype=`` (default float32) is
torch's factory keyword.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .. import functional as F
from ..errors import InvalidArgumentAssertion, InvalidArgumentError
from ..core.device import check as _check_device
from ..functional.embedding import _unsupported_embedding_options
from ..functional._util import check_probability
from ..ops.movement import IndexOutOfRange
from ..core.dtypes import default_float
from ..core.tensor import Tensor
from . import init
from ..functional.batch_norm import batch_norm
from .module import Module, _float_dtype
from .parameter import Parameter


# ============================================================================ argument helpers

def _param_dtype(dtype, layer: str) -> np.dtype:
    return default_float() if dtype is None else _float_dtype(dtype, layer)


def _size(value, name: str, layer: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{layer}: {name} must be an int, got {value!r}")
    if value < minimum:   # torch: RuntimeError "Trying to create tensor with negative dimension"
        raise InvalidArgumentError(f"{layer}: {name} must be >= {minimum}, got {value}")
    return int(value)


def normalized_shape_arg(normalized_shape, layer: str) -> tuple:
    """``LayerNorm``/``RMSNorm``'s ``normalized_shape``: an int or a sequence of positive ints."""
    if isinstance(normalized_shape, numbers.Integral) and not isinstance(normalized_shape, bool):
        normalized_shape = (normalized_shape,)
    if isinstance(normalized_shape, (str, bytes)) or not hasattr(normalized_shape, "__iter__"):
        raise TypeError(f"{layer}: normalized_shape must be an int or a sequence of ints, got "
                        f"{type(normalized_shape).__name__} ({normalized_shape!r})")
    return tuple(_size(n, "normalized_shape", layer, 1) for n in normalized_shape)


def _input(x, layer: str) -> Tensor:
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray):
        return Tensor(x)
    raise TypeError(f"{layer}: expected a Tensor (or a NumPy array) as input, got {type(x).__name__}")


# ============================================================================ layers with weights

class _FanInLayer(Module):
    """Linear and Conv1d/Conv2d: a weight (out, in, *kernel) and an optional bias (out,), both
    initialised as torch does from fan_in = in · prod(kernel):
    ``kaiming_uniform_(weight, a=sqrt(5))`` = U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the
    bias from the same interval."""

    def _create_parameters(self, weight_shape, bias: bool, dtype, layer: str, bias_shape=None) -> None:
        dt = _param_dtype(dtype, layer)
        self.weight = Parameter(np.empty(weight_shape, dtype=dt))
        if bias:
            self.bias = Parameter(np.empty(weight_shape[:1] if bias_shape is None else bias_shape, dtype=dt))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            init.fan_in_uniform_(self.bias, int(np.prod(self.weight.shape[1:])))


class Linear(_FanInLayer):
    """y = x Wᵀ + b over the last dimension: weight (out_features, in_features), bias (out_features,).

    Init (torch's): W ~ U(-k, k) and b ~ U(-k, k) with k = 1/sqrt(in_features)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, dtype=None):
        super().__init__()
        self.in_features = _size(in_features, "in_features", "Linear")
        self.out_features = _size(out_features, "out_features", "Linear")
        self._create_parameters((self.out_features, self.in_features), bias, dtype, "Linear")

    def forward(self, input):
        return F.linear(_input(input, "Linear"), self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """A lookup table: ``forward(ids)`` returns ``weight[ids]``, shape ids.shape + (embedding_dim,).

    Init (torch's): weight ~ N(0, 1), with the ``padding_idx`` row (if given)
    zeroed. The padding row never receives a gradient, so it stays as it is."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False, _weight=None,
                 _freeze: bool = False, device=None, dtype=None):
        super().__init__()
        _check_device(device, "Embedding: device")
        # torch's keywords, refused with a clear NotImplementedError unless they are the defaults
        _unsupported_embedding_options(max_norm, scale_grad_by_freq, sparse, "Embedding")
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        self.num_embeddings = _size(num_embeddings, "num_embeddings", "Embedding")
        self.embedding_dim = _size(embedding_dim, "embedding_dim", "Embedding")
        if padding_idx is not None:
            n = self.num_embeddings
            if isinstance(padding_idx, bool) or not isinstance(padding_idx, numbers.Integral):
                raise IndexOutOfRange(f"Embedding: padding_idx must be an int in [-{n}, {n}) "   # torch: IndexError
                                      f"(num_embeddings={n}), got {padding_idx!r}")
            if not -n <= padding_idx < n:   # torch: assert (AssertionError)
                raise InvalidArgumentAssertion(f"Embedding: padding_idx must be within num_embeddings: an int in "
                                               f"[-{n}, {n}) (num_embeddings={n}), got {padding_idx!r}")
            padding_idx = int(padding_idx) % n
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(np.empty((self.num_embeddings, self.embedding_dim),
                                             dtype=_param_dtype(dtype, "Embedding")))
            self.reset_parameters()
        else:
            weight = _weight if isinstance(_weight, Parameter) else Parameter(_weight)
            if weight.shape != (self.num_embeddings, self.embedding_dim):
                raise InvalidArgumentAssertion(f"Embedding: _weight has shape {tuple(weight.shape)}, expected "
                                 f"{(self.num_embeddings, self.embedding_dim)}")
            self.weight = weight
        if _freeze:
            self.weight.requires_grad = False

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx=None):
        """An Embedding whose weight is ``embeddings`` (a 2-D array or Tensor, not copied);
        ``freeze=True`` makes it non-trainable, as in torch."""
        data = embeddings._data if isinstance(embeddings, Tensor) else np.asarray(embeddings)
        if data.ndim != 2:
            raise ValueError(f"Embedding.from_pretrained: embeddings must be 2-D, got shape {tuple(data.shape)}")
        module = cls(data.shape[0], data.shape[1], padding_idx=padding_idx, _weight=Parameter(data))
        module.weight.requires_grad = not freeze
        return module

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight._data[self.padding_idx] = 0

    def forward(self, input):
        return F.embedding(input, self.weight, padding_idx=self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dimensions of each sample, then
    scale by ``weight`` and shift by ``bias`` (init ones / zeros, as torch)."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 dtype=None):
        super().__init__()
        self.normalized_shape = normalized_shape_arg(normalized_shape, "LayerNorm")
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        dt = _param_dtype(dtype, "LayerNorm")
        if elementwise_affine:
            self.weight = Parameter(np.empty(self.normalized_shape, dtype=dt))
            if bias:
                self.bias = Parameter(np.empty(self.normalized_shape, dtype=dt))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(_input(input, "LayerNorm"), self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class _NormBase(Module):
    """What BatchNorm and InstanceNorm share (torch's ``_NormBase``): ``weight``/``bias`` (with
    ``affine``), the ``running_mean``/``running_var``/``num_batches_tracked`` buffers (with
    ``track_running_stats``), and their reset."""

    def __init__(self, num_features: int, eps: float, momentum, affine: bool, track_running_stats: bool,
                 dtype=None, *, bias: bool = True):
        super().__init__()
        layer = type(self).__name__
        self.num_features = _size(num_features, "num_features", layer, 1)
        if momentum is not None and not 0 <= momentum <= 1:
            raise ValueError(f"{layer}: momentum must be in [0, 1] or None, got {momentum!r}")
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        dt = _param_dtype(dtype, layer)
        c = self.num_features
        if affine:
            self.weight = Parameter(np.empty((c,), dtype=dt))
            if bias:
                self.bias = Parameter(np.empty((c,), dtype=dt))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", np.zeros((c,), dtype=dt))
            self.register_buffer("running_var", np.ones((c,), dtype=dt))
            self.register_buffer("num_batches_tracked", np.zeros((), dtype=np.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean._data[...] = 0
            self.running_var._data[...] = 1
            self.num_batches_tracked._data[...] = 0

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)


class BatchNorm1d(_NormBase):
    """Batch normalisation of (N, C) or (N, C, L) input, per channel C.

    Training mode normalises with the batch's statistics and updates the
    running estimates: ``running = (1 − momentum)·running + momentum·batch``
    (the variance estimate unbiased), or, with ``momentum=None``, their
    cumulative average (factor 1/num_batches_tracked). Eval mode normalises
    with the running estimates. ``track_running_stats=False`` keeps none and
    always uses batch statistics. Contrast with LayerNorm (tutorial 7.2), which
    normalises each sample over its own features and needs no running state.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1, affine: bool = True,
                 track_running_stats: bool = True, dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype, bias=bias)

    def _check_input_dim(self, x) -> None:
        if x.ndim not in (2, 3):
            raise ValueError(f"BatchNorm1d: expected 2-D (N, C) or 3-D (N, C, L) input, got shape {tuple(x.shape)}")

    def forward(self, input):
        layer = type(self).__name__
        x = _input(input, layer)
        self._check_input_dim(x)
        if x.shape[1] != self.num_features:
            raise ValueError(f"{layer}: expected {self.num_features} channels (num_features) at dim 1, "
                             f"got shape {tuple(x.shape)}")
        factor = 0.0 if self.momentum is None else self.momentum
        count = self.num_batches_tracked
        update = self.training and self.track_running_stats and count is not None
        if update and self.momentum is None:
            factor = 1.0 / float(count._data + 1)  # cumulative moving average
        # batch statistics in training mode, and whenever there are no running estimates
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        out = batch_norm(x, self.running_mean if keep else None, self.running_var if keep else None,
                         self.weight, self.bias, use_batch, factor, self.eps)
        if update:
            count._data[...] = count._data + 1
        return out

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm2d(BatchNorm1d):
    """Batch normalisation of (N, C, H, W) input per channel C, statistics over N, H and W:
    BatchNorm1d's module (same arguments, buffers, state-dict keys, momentum rule) on 4-D input;
    the fused Function and its backward are ``functional/batch_norm.py``'s ``BatchNorm``'s, which reduce over every
    axis but 1."""

    def _check_input_dim(self, x) -> None:
        if x.ndim != 4:
            raise ValueError(f"BatchNorm2d: expected 4D input (got {x.ndim}D input of shape {tuple(x.shape)})")


# ============================================================================ parameter-free layers

class Dropout(Module):
    """In training mode zero each element with probability p and scale the rest by 1/(1-p);
    the identity in eval mode. The mask is drawn from the global generator."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        check_probability("Dropout", "p", p)   # a bool is a probability too, as in torch
        if not isinstance(inplace, bool):
            raise TypeError(f"Dropout: inplace must be a bool, got {inplace!r}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return F.dropout(_input(input, "Dropout"), self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class GELU(Module):
    """x Φ(x) (``approximate='none'``) or its tanh approximation (``'tanh'``)."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(_input(input, "GELU"), approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class ReLU(Module):
    """max(x, 0); ``inplace=True`` overwrites the input (``Tensor.relu_``, torch's autograd rules
    for in-place ops: a leaf that requires grad refuses, a tensor saved for backward and then
    changed makes backward raise), as ``nn.ReLU(inplace=True)`` in teaching code expects."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        if not isinstance(inplace, bool):
            raise TypeError(f"ReLU: inplace must be a bool, got {inplace!r}")
        self.inplace = inplace

    def forward(self, input):
        return F.relu(_input(input, "ReLU"), inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    """tanh(x)."""

    def forward(self, input):
        return F.tanh(_input(input, "Tanh"))
