"""``tinygrad_tx.functional`` (import as ``F``): torch-style functional ops.

Each op that has a closed-form backward exists twice:

* the **fused** op (``F.softmax``, ``F.layer_norm``, ...): one ``Function``
  whose forward computes the result in a single pass and whose backward is
  the hand-derived closed form (derivation in the Function's docstring);
* the **composite** (``F.softmax_composite``, ...): the same math written
  with Tensor primitives, differentiated op by op by the engine. Read it
  first;
* the **closed form** (``F.softmax_closed_form``, ...; module ``closed_form``): the
  fused op's derivation as a plain Function, a few lines of NumPy with no speed
  tricks. The tests assert composite == closed form == fused == PyTorch.

Modules: ``softmax`` (softmax, log_softmax, softmin), ``loss`` (cross_entropy), ``nll``
(nll_loss), ``regression`` (mse_loss, l1_loss, smooth_l1_loss, huber_loss), ``likelihood``
(binary_cross_entropy[_with_logits], kl_div), ``margin`` (margin_ranking, hinge_embedding,
soft_margin, multilabel_soft_margin, multi_margin, multilabel_margin, cosine_embedding losses),
``triplet`` (triplet_margin[_with_distance]_loss), ``count_likelihood`` (poisson_nll_loss,
gaussian_nll_loss), ``ctc`` (ctc_loss: the alpha-beta recursion by hand), ``normalization`` (layer_norm), ``embedding``
(embedding), ``linear`` (linear, patch_embed), ``activation`` (relu, tanh, sigmoid, gelu, dropout),
``closed_form`` (rung 2 of every fused op; ``rungs`` its functional spellings and ``CLOSED_FORMS``), ``conv`` (conv1d/2d in three rungs,
conv_transpose1d/2d, unfold, fold, dropout2d), ``pooling`` (max/avg/adaptive pools), ``pointwise`` (silu, softplus, elu, selu, celu, leaky_relu, relu6, hardtanh, hardsigmoid,
hardswish, mish, logsigmoid, softsign, tanhshrink, glu), ``distance`` (normalize,
cosine_similarity, pairwise_distance), ``pad`` (pad, one_hot), ``attention``
(scaled_dot_product_attention); ``toplevel`` holds the torch top-level spellings.
"""
from . import toplevel as _toplevel
from .activation import DropoutFn, dropout, dropout_composite, gelu, gelu_composite, relu, sigmoid, tanh
from .attention import (ScaledDotProductAttention, scaled_dot_product_attention,
                        scaled_dot_product_attention_composite)
from .conv import (Col2Im, Conv, ConvClosedForm, ConvTranspose, Im2Col, conv1d, conv1d_closed_form, conv2d,
                   conv2d_closed_form, conv2d_composite, conv_transpose1d, conv_transpose2d, dropout2d, fold, unfold)
from .distance import VectorNorm, cosine_similarity, normalize, pairwise_distance
from .likelihood import (BinaryCrossEntropy, BinaryCrossEntropyWithLogits, KLDivergence, binary_cross_entropy,
                         binary_cross_entropy_with_logits, kl_div)
from .embedding import EmbeddingFn, embedding, embedding_composite
from .linear import LinearFn, PatchEmbed, linear, linear_composite, patch_embed, patch_embed_composite
from .loss import CrossEntropy, cross_entropy, cross_entropy_composite
from .nll import NLLLossFn, nll_loss
from .margin import (SoftMargin, cosine_embedding_loss, hinge_embedding_loss, margin_ranking_loss,
                     multi_margin_loss, multilabel_margin_loss, multilabel_soft_margin_loss, soft_margin_loss)
from .triplet import triplet_margin_loss, triplet_margin_with_distance_loss
from .count_likelihood import gaussian_nll_loss, poisson_nll_loss
from .ctc import CTCLossFn, ctc_loss
from .normalization import LayerNormFn, layer_norm, layer_norm_composite
from .pad import ConstantPad, IndexedPad, one_hot, pad
from .pooling import (AdaptiveAvgPool, AdaptiveMaxPool, AvgPool, MaxPool, adaptive_avg_pool1d, adaptive_avg_pool2d,
                      adaptive_max_pool1d, adaptive_max_pool2d, avg_pool1d, avg_pool2d, max_pool1d, max_pool2d)
from .pointwise import (EluFn, GluFn, HardsigmoidFn, HardswishFn, HardtanhFn, LeakyReluFn, LogSigmoidFn, MishFn, SiluFn,
                        SoftplusFn, SoftsignFn, TanhshrinkFn, celu, elu, glu, hardsigmoid, hardswish, hardtanh, leaky_relu,
                        logsigmoid, mish, relu6, selu, silu, softplus, softsign, tanhshrink)
from .rms_norm import RMSNormFn, rms_norm, rms_norm_composite
from .batch_norm import batch_norm, batch_norm_composite
from .instance_norm import group_norm, instance_norm
from .prelu import PReluFn, prelu
from .resample import (Resample, interpolate, pixel_shuffle, pixel_unshuffle, upsample, upsample_bilinear,
                       upsample_nearest)
from .regression import (AbsoluteError, HuberError, SmoothL1Error, SquaredError, huber_loss, l1_loss, mse_loss,
                         smooth_l1_loss)
from .softmax import (LogSoftmaxFn, SoftmaxFn, log_softmax, log_softmax_composite, softmax, softmax_composite,
                      softmin)
from .closed_form import (BatchNormClosedForm, CrossEntropyClosedForm, EmbeddingClosedForm, FlashAttentionClosedForm,
                          GeluClosedForm, LayerNormClosedForm, LinearClosedForm, LogSoftmaxClosedForm,
                          PatchEmbedClosedForm, ScaledDotProductAttentionClosedForm, SoftmaxClosedForm)
from .rungs import (CLOSED_FORMS, batch_norm_closed_form, cross_entropy_closed_form, embedding_closed_form,
                    flash_attention_closed_form, gelu_closed_form, layer_norm_closed_form, linear_closed_form,
                    log_softmax_closed_form, patch_embed_closed_form, scaled_dot_product_attention_closed_form,
                    softmax_closed_form)

# Tensor methods that are these functions (bound by tinygrad_tx/_bind.py): torch's Tensor.softmax(dim, dtype=None)
TENSOR_METHODS = {"softmax": _toplevel.softmax_method, "log_softmax": _toplevel.log_softmax_method}

# torch's top-level names for functional ops (torch.softmax, torch.dropout, ...), with torch's top-level
# signatures. Not exported: relu/tanh/sigmoid (the pointwise ops' module exports them), and
# binary_cross_entropy_with_logits, kl_div, cosine_embedding_loss, whose torch top-level forms take
# an internal integer reduction enum rather than F's reduction string.
FUNCTIONS = {
    "softmax": _toplevel.softmax_method, "log_softmax": _toplevel.log_softmax_method,
    "dropout": _toplevel.dropout, "layer_norm": _toplevel.layer_norm, "embedding": _toplevel.embedding,
    "cosine_similarity": cosine_similarity, "pairwise_distance": pairwise_distance,
    "selu": selu, "celu": celu, "rms_norm": rms_norm,
    "conv1d": conv1d, "conv2d": conv2d, "conv_transpose1d": conv_transpose1d, "conv_transpose2d": conv_transpose2d,
    "max_pool1d": max_pool1d, "max_pool2d": max_pool2d, "avg_pool1d": avg_pool1d,
    "adaptive_avg_pool1d": adaptive_avg_pool1d, "prelu": prelu,
    "pixel_shuffle": pixel_shuffle, "pixel_unshuffle": pixel_unshuffle,
}

__all__ = [
    "instance_norm", "prelu", "PReluFn", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "Resample",
    "group_norm", "pixel_shuffle", "pixel_unshuffle",
    "RMSNormFn", "rms_norm", "rms_norm_composite", "batch_norm", "batch_norm_composite",
    "softmax", "softmax_composite", "log_softmax", "log_softmax_composite", "softmin",
    "cross_entropy", "cross_entropy_composite", "nll_loss",
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "multilabel_soft_margin_loss",
    "multi_margin_loss", "multilabel_margin_loss", "cosine_embedding_loss", "triplet_margin_loss",
    "triplet_margin_with_distance_loss", "poisson_nll_loss", "gaussian_nll_loss", "ctc_loss", "SoftMargin",
    "CTCLossFn",
    "layer_norm", "layer_norm_composite",
    "embedding", "embedding_composite", "linear", "linear_composite", "patch_embed", "patch_embed_composite",
    "dropout", "dropout_composite", "gelu", "gelu_composite", "relu", "tanh", "sigmoid",
    "silu", "softplus", "elu", "selu", "celu", "leaky_relu", "relu6", "hardtanh", "hardsigmoid", "hardswish",
    "mish", "logsigmoid", "softsign", "tanhshrink", "glu",
    "normalize", "cosine_similarity", "pairwise_distance", "pad", "one_hot",
    "scaled_dot_product_attention", "scaled_dot_product_attention_composite",
    "SoftmaxFn", "LogSoftmaxFn", "CrossEntropy", "NLLLossFn", "LayerNormFn", "EmbeddingFn", "LinearFn", "PatchEmbed", "DropoutFn",
    "ScaledDotProductAttention", "SiluFn", "SoftplusFn", "EluFn", "LeakyReluFn", "HardtanhFn", "HardsigmoidFn", "HardswishFn",
    "MishFn", "LogSigmoidFn", "SoftsignFn", "TanhshrinkFn", "GluFn", "SquaredError", "AbsoluteError", "SmoothL1Error",
    "HuberError", "BinaryCrossEntropy", "BinaryCrossEntropyWithLogits", "KLDivergence", "VectorNorm",
    "ConstantPad", "IndexedPad",
    "conv1d", "conv2d", "conv1d_closed_form", "conv2d_closed_form", "conv2d_composite", "conv_transpose1d",
    "conv_transpose2d", "unfold", "fold", "dropout2d", "Conv", "ConvTranspose", "ConvClosedForm", "Im2Col", "Col2Im",
    "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "MaxPool", "AvgPool", "AdaptiveAvgPool", "AdaptiveMaxPool",
    "softmax_closed_form", "log_softmax_closed_form", "cross_entropy_closed_form", "layer_norm_closed_form",
    "batch_norm_closed_form", "gelu_closed_form", "scaled_dot_product_attention_closed_form",
    "flash_attention_closed_form", "embedding_closed_form", "linear_closed_form", "patch_embed_closed_form",
    "SoftmaxClosedForm", "LogSoftmaxClosedForm", "CrossEntropyClosedForm", "LayerNormClosedForm",
    "BatchNormClosedForm", "GeluClosedForm", "ScaledDotProductAttentionClosedForm", "FlashAttentionClosedForm",
    "EmbeddingClosedForm", "LinearClosedForm", "PatchEmbedClosedForm",
]
