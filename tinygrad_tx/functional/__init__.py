"""``tinygrad_tx.functional`` (import as ``F``): torch-style functional ops.

Each op that has a closed-form backward exists twice:

* the **fused** op (``F.softmax``, ``F.layer_norm``, ...): one ``Function``
  whose forward computes the result in a single pass and whose backward is
  the hand-derived closed form (derivation in the Function's docstring);
* the **composite** (``F.softmax_composite``, ...): the same math written
  with Tensor primitives, differentiated op by op by the engine. Read it
  first; the tests assert fused == composite == PyTorch.

Modules: ``softmax`` (softmax, log_softmax), ``loss`` (cross_entropy),
``normalization`` (layer_norm), ``linear`` (embedding, linear, patch_embed),
``activation`` (relu, tanh, sigmoid, gelu, dropout), ``attention``
(scaled_dot_product_attention).
"""
from .activation import Dropout, dropout, dropout_composite, gelu, gelu_composite, relu, sigmoid, tanh
from .attention import (ScaledDotProductAttention, scaled_dot_product_attention,
                        scaled_dot_product_attention_composite)
from .linear import (Embedding, Linear, PatchEmbed, embedding, embedding_composite, linear, linear_composite,
                     patch_embed, patch_embed_composite)
from .loss import CrossEntropy, cross_entropy, cross_entropy_composite
from .normalization import LayerNorm, layer_norm, layer_norm_composite
from .softmax import LogSoftmax, Softmax, log_softmax, log_softmax_composite, softmax, softmax_composite

# Tensor methods that are these functions (bound by tinygrad_tx/_bind.py); torch-level names.
TENSOR_METHODS = {}
FUNCTIONS = {}

__all__ = [
    "softmax", "softmax_composite", "log_softmax", "log_softmax_composite",
    "cross_entropy", "cross_entropy_composite",
    "layer_norm", "layer_norm_composite",
    "embedding", "embedding_composite", "linear", "linear_composite", "patch_embed", "patch_embed_composite",
    "dropout", "dropout_composite", "gelu", "gelu_composite", "relu", "tanh", "sigmoid",
    "scaled_dot_product_attention", "scaled_dot_product_attention_composite",
    "Softmax", "LogSoftmax", "CrossEntropy", "LayerNorm", "Embedding", "Linear", "PatchEmbed", "Dropout",
    "ScaledDotProductAttention",
]
