"""The ``nn.Transformer`` family: torch's ``TransformerEncoderLayer``, ``TransformerEncoder``,
``TransformerDecoderLayer``, ``TransformerDecoder`` and ``Transformer``, with torch's constructor
arguments, defaults, submodule names (so the state-dict keys are torch's) and forward semantics.

One encoder layer (``norm_first=False``, the default, "post-norm" as in "Attention Is All You Need"):

    x = norm1(x + dropout1(self_attn(x, x, x)))
    x = norm2(x + dropout2(linear2(dropout(activation(linear1(x))))))

and with ``norm_first=True`` ("pre-norm", as the tutorial's GPT):

    x = x + dropout1(self_attn(norm1(x), norm1(x), norm1(x)))
    x = x + dropout2(linear2(dropout(activation(linear1(norm2(x))))))

A decoder layer adds cross-attention between the two: ``multihead_attn(x, memory, memory)`` with
``norm2``/``dropout2``, the feed-forward block then using ``norm3``/``dropout3``.
``TransformerEncoder``/``TransformerDecoder`` stack ``num_layers`` deep copies of the layer given
(``layers.0``, ``layers.1``, ...) and apply ``norm`` (if any) at the end; ``Transformer`` is an
encoder (with a final LayerNorm) whose output is the decoder's ``memory``.

Masks are torch's: in ``src_mask``/``tgt_mask``/``memory_mask`` and in the key-padding masks a
**bool** True means "may not attend" (−inf is added to the score), a float mask is added to the
scores. ``is_causal`` is torch's hint that the mask given is the causal one
(``Transformer.generate_square_subsequent_mask``); left as None, the encoder and decoder detect it
by comparing the mask with the causal mask, as torch does.

Everything is built from modules and functional ops of the engine (``MultiheadAttention``,
``Linear``, ``LayerNorm``, ``Dropout``, the activation), whose backwards are hand-written; the
gradient of a layer is the gradient of this composite, and equals torch's
(``tests/test_nn_transformer.py``: outputs and every parameter gradient, float64, ≤ 1e-10).

torch's inference fast path (eval mode, no gradient needed, ``batch_first``, ...) computes the same
values, except in one visible way that is reproduced here: when ``TransformerEncoder`` turns its
input into a nested tensor (``enable_nested_tensor=True`` and a left-aligned
``src_key_padding_mask``), the padded positions of the output are 0 (before the final ``norm``).

One torch behaviour is deliberately not reproduced: given a *Module* as ``activation`` (say
``nn.GELU()``), torch's ``TransformerDecoder`` silently runs F.relu in its deep-copied layers
(``TransformerDecoderLayer.__setstate__`` puts F.relu in the instance dict, which hides the
submodule); ours run the activation given. A string or a function is the same in both.
"""
from __future__ import annotations

import copy
import numbers
import warnings

import numpy as np

from .. import functional as F
from ..errors import InvalidArgumentAssertion, InvalidArgumentError
from ..core.grad_mode import is_grad_enabled
from ..core.tensor import Tensor
from .attention import MultiheadAttention
from .container import ModuleList
from .layers import GELU, Dropout, LayerNorm, Linear, ReLU
from .module import Module
from . import init


def _generate_square_subsequent_mask(sz, device=None, dtype=None) -> Tensor:
    """The causal mask: 0 on and below the diagonal, −inf above it (True above it for bool)."""
    from .. import factories
    if isinstance(sz, bool) or not isinstance(sz, numbers.Integral) or sz < 0:
        raise InvalidArgumentError(f"generate_square_subsequent_mask: sz must be a non-negative int, got {sz!r}")
    return factories.full((int(sz), int(sz)), float("-inf"), dtype=dtype, device=device).triu(1)


def _mask_data(mask) -> np.ndarray | None:
    if mask is None:
        return None
    return mask._data if isinstance(mask, Tensor) else np.asarray(mask)


def _canonical_mask(mask, mask_name: str, dtype, other=None, other_name: str = ""):
    """torch's ``F._canonical_mask``: a bool mask becomes a float one (True → −inf, False → 0) in
    the input's dtype, a float mask is kept; any other dtype is refused (AssertionError, torch's
    words). Mixing a bool and a float mask gets torch's deprecation warning."""
    a = _mask_data(mask)
    if a is None:
        return None
    if a.dtype != np.bool_ and a.dtype.kind != "f":
        raise InvalidArgumentAssertion(f"only bool and floating types of {mask_name} are supported "
                                       f"(got dtype {a.dtype})")
    o = _mask_data(other)
    if o is not None and o.dtype != a.dtype:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. "
                      "Use same type for both instead.", UserWarning, stacklevel=3)
    if a.dtype == np.bool_:
        return Tensor(np.where(a, -np.inf, 0.0).astype(dtype))
    return mask if isinstance(mask, Tensor) else Tensor(a)


def _seq_len(src: Tensor, batch_first: bool) -> int:
    return src.shape[0] if src.ndim == 2 else src.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask, is_causal=None, size=None) -> bool:
    """torch's: ``is_causal`` if given; if None, whether ``mask`` equals the causal mask of ``size``."""
    if is_causal is not None or mask is None:
        return is_causal is True
    a = _mask_data(mask)
    sz = size if size is not None else a.shape[-2]
    upper = np.triu(np.ones((sz, sz), dtype=bool), 1)
    causal = upper if a.dtype == np.bool_ else np.where(upper, -np.inf, 0.0)
    return a.shape == causal.shape and bool(np.all(a == causal))


def _get_activation_fn(activation, layer: str):
    """'relu' → F.relu, 'gelu' → F.gelu (torch's RuntimeError otherwise); a callable is kept."""
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    if not callable(activation):
        raise TypeError(f"{layer}: activation must be 'relu', 'gelu' or a callable, got {activation!r}")
    return activation


def _check_num_layers(num_layers, cls: str) -> int:
    if isinstance(num_layers, bool) or not isinstance(num_layers, numbers.Integral) or num_layers < 0:
        raise ValueError(f"{cls}: num_layers must be a non-negative int, got {num_layers!r}")
    return int(num_layers)


def _get_clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _check_input(x, name: str, cls: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{cls}: {name} must be a Tensor, got {type(x).__name__}")


def _feed_forward_and_norms(layer, n, d_model, dim_feedforward, dropout, eps, norm_first, bias, dtype) -> None:
    """The submodules both layers share, registered in torch's order (so the state-dict keys come
    in torch's order): ``linear1``, ``dropout``, ``linear2``, ``norm1..n``, ``dropout1..n``."""
    layer.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
    layer.dropout = Dropout(dropout)
    layer.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
    layer.norm_first = norm_first
    for i in range(1, n + 1):
        setattr(layer, f"norm{i}", LayerNorm(d_model, eps=eps, bias=bias, dtype=dtype))
    for i in range(1, n + 1):
        setattr(layer, f"dropout{i}", Dropout(dropout))


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with a residual connection and a LayerNorm
    (after the residual sum, or before the block with ``norm_first=True``); see the module's
    docstring for the formula."""

    __constants__ = ["norm_first"]

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation=F.relu, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            device=device, dtype=dtype)
        _feed_forward_and_norms(self, 2, d_model, dim_feedforward, dropout, layer_norm_eps, norm_first, bias, dtype)
        activation = _get_activation_fn(activation, "TransformerEncoderLayer")
        # torch's flag for its fused inference kernel (1: relu, 2: gelu, 0: anything else)
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        _check_input(src, "src", "TransformerEncoderLayer")
        dtype = src._data.dtype
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask", dtype,
                                               src_mask, "src_mask")
        src_mask = _canonical_mask(src_mask, "src_mask", dtype)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal=is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal=is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention over ``memory`` and a feed-forward block, each with a
    residual connection and a LayerNorm (``norm1``, ``norm2``, ``norm3``)."""

    __constants__ = ["norm_first"]

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation=F.relu, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias,
                                            device=device, dtype=dtype)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first,
                                                 bias=bias, device=device, dtype=dtype)
        _feed_forward_and_norms(self, 3, d_model, dim_feedforward, dropout, layer_norm_eps, norm_first, bias, dtype)
        self.activation = _get_activation_fn(activation, "TransformerDecoderLayer")

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False, memory_is_causal: bool = False):
        _check_input(tgt, "tgt", "TransformerDecoderLayer")
        _check_input(memory, "memory", "TransformerDecoderLayer")
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal,
                           need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


def _why_not_nested(layer) -> str:
    """torch's reasons (at construction) why the encoder cannot use its nested-tensor fast path."""
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    if layer.norm_first:
        return f"{name}.norm_first was True"
    if not layer.self_attn.batch_first:
        return (f"{name}.self_attn.batch_first was not True"
                "(use batch_first for better inference performance)")
    if not layer.self_attn._qkv_same_embed_dim:
        return f"{name}.self_attn._qkv_same_embed_dim was not True"
    if layer.self_attn.in_proj_bias is None:
        return f"{name}.self_attn was passed bias=False"
    if not layer.activation_relu_or_gelu:
        return f"{name}.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return f"{name}.norm1.eps was not equal to {name}.norm2.eps"
    if layer.self_attn.num_heads % 2 == 1:
        return f"{name}.self_attn.num_heads is odd"
    return ""


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` applied in turn, then ``norm`` (if given).

    ``enable_nested_tensor`` is accepted (with torch's warning when its fast path cannot apply)
    and has torch's one visible effect: see the module's docstring."""

    __constants__ = ["norm"]

    def __init__(self, encoder_layer, num_layers: int, norm=None, enable_nested_tensor: bool = True,
                 mask_check: bool = True):
        super().__init__()
        if not isinstance(encoder_layer, Module):
            raise TypeError(f"TransformerEncoder: encoder_layer must be a Module, got {type(encoder_layer).__name__}")
        self.layers = _get_clones(encoder_layer, _check_num_layers(num_layers, "TransformerEncoder"))
        self.num_layers = int(num_layers)
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why_not = _why_not_nested(encoder_layer)
        if enable_nested_tensor and why_not:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False because {why_not}",
                          UserWarning, stacklevel=2)
            self.use_nested_tensor = False

    def _nested_padding(self, src, mask, kpm):
        """The padded positions (bool, (N, S)) where torch would run the layers on a nested tensor,
        else None: its fast-path conditions, none of which changes a value except this one."""
        if not self.use_nested_tensor or kpm is None or mask is not None or src.ndim != 3 or not self.layers:
            return None
        first = self.layers[0]
        if first.training:
            return None
        args = [src] + [p for p in (first.self_attn.in_proj_weight, first.self_attn.in_proj_bias,
                                    first.self_attn.out_proj.weight, first.self_attn.out_proj.bias,
                                    first.norm1.weight, first.norm1.bias, first.norm2.weight, first.norm2.bias,
                                    first.linear1.weight, first.linear1.bias, first.linear2.weight,
                                    first.linear2.bias) if p is not None]
        if is_grad_enabled() and any(t.requires_grad for t in args):
            return None
        padded = _mask_data(kpm) != 0
        if padded.shape != (src.shape[0], src.shape[1]):
            return None
        if self.mask_check and np.any(padded[:, 1:] < padded[:, :-1]):   # not left-aligned
            return None
        return padded

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        _check_input(src, "src", "TransformerEncoder")
        dtype = src._data.dtype
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask", dtype, mask, "mask")
        mask = _canonical_mask(mask, "mask", dtype)
        if not self.layers:
            raise IndexError("TransformerEncoder: num_layers is 0, there is no layer to run (torch: index 0 is "
                             "out of range)")
        batch_first = self.layers[0].self_attn.batch_first
        padded = self._nested_padding(src, mask, src_key_padding_mask) if batch_first else None
        is_causal = _detect_is_causal_mask(mask, is_causal, _seq_len(src, batch_first))
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
        if padded is not None:   # torch's nested tensor, padded back with zeros
            output = output * Tensor((~padded)[..., None].astype(output._data.dtype))
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoder(Module):
    """``num_layers`` copies of ``decoder_layer`` applied in turn (each attending to ``memory``),
    then ``norm`` (if given)."""

    __constants__ = ["norm"]

    def __init__(self, decoder_layer, num_layers: int, norm=None):
        super().__init__()
        if not isinstance(decoder_layer, Module):
            raise TypeError(f"TransformerDecoder: decoder_layer must be a Module, got {type(decoder_layer).__name__}")
        self.layers = _get_clones(decoder_layer, _check_num_layers(num_layers, "TransformerDecoder"))
        self.num_layers = int(num_layers)
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal: bool = False):
        _check_input(tgt, "tgt", "TransformerDecoder")
        if not self.layers:
            raise IndexError("TransformerDecoder: num_layers is 0, there is no layer to run (torch: index 0 is "
                             "out of range)")
        output = tgt
        seq_len = _seq_len(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        for mod in self.layers:
            output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                         tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                         tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """The encoder-decoder of "Attention Is All You Need": ``encoder`` (``num_encoder_layers``
    encoder layers and a final LayerNorm) turns ``src`` into ``memory``; ``decoder``
    (``num_decoder_layers`` decoder layers and a final LayerNorm) turns ``tgt`` and ``memory`` into
    the output. Every weight matrix is Xavier-uniform initialised (torch's ``_reset_parameters``)."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation=F.relu, custom_encoder=None, custom_decoder=None, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            encoder_layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                                    layer_norm_eps, batch_first, norm_first, bias,
                                                    device=device, dtype=dtype)
            encoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
            self.encoder = TransformerEncoder(encoder_layer, num_encoder_layers, encoder_norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            decoder_layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                                    layer_norm_eps, batch_first, norm_first, bias,
                                                    device=device, dtype=dtype)
            decoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
            self.decoder = TransformerDecoder(decoder_layer, num_decoder_layers, decoder_norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal: bool = False):
        _check_input(src, "src", "Transformer")
        _check_input(tgt, "tgt", "Transformer")
        is_batched = src.ndim == 3
        batch_dim = 0 if self.batch_first else 1
        if is_batched and (tgt.ndim != 3 or src.shape[batch_dim] != tgt.shape[batch_dim]):
            raise RuntimeError(f"the batch number of src and tgt must be equal (src {tuple(src.shape)}, "
                               f"tgt {tuple(tgt.shape)}, batch_first={self.batch_first})")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(f"the feature number of src and tgt must be equal to d_model ({self.d_model}), "
                               f"got src {tuple(src.shape)} and tgt {tuple(tgt.shape)}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """The (sz, sz) causal mask: −inf above the diagonal, 0 elsewhere (float32 unless ``dtype``)."""
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self) -> None:
        """Xavier-uniform for every parameter with more than one dimension (torch's)."""
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)
