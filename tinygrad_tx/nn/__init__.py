"""Modules: ``tinygrad_tx.nn`` mirrors ``torch.nn``.

* :mod:`.module` — ``Module`` (registration, traversal, train/eval, ``to(dtype)``,
  ``state_dict``/``load_state_dict``, hooks, repr) and ``functional_call``;
* :mod:`.parameter` — ``Parameter``;
* :mod:`.container` — ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``,
  ``ParameterDict``;
* :mod:`.layers` — ``Linear``, ``Embedding``, ``LayerNorm``, ``BatchNorm1d``, ``BatchNorm2d``,
  ``Dropout``, ``GELU``, ``ReLU``, ``Tanh``;
* :mod:`.conv` — ``Conv1d``, ``Conv2d``, ``ConvTranspose1d/2d``; :mod:`.pooling` — ``MaxPool1d/2d``,
  ``AvgPool1d/2d``, ``AdaptiveAvgPool1d/2d``, ``AdaptiveMaxPool1d/2d``, ``Dropout2d``;
* :mod:`.activation` — ``Identity``, ``Flatten``, ``Unflatten``, ``Sigmoid``, ``SiLU``, ``Mish``,
  ``LeakyReLU``, ``ELU``, ``Softplus``, ``Hardtanh``, ``ReLU6``, ``Softmax``, ``LogSoftmax``;
* :mod:`.loss` — ``CrossEntropyLoss``, ``NLLLoss``, ``MSELoss``, ``L1Loss``, ``BCELoss``,
  ``BCEWithLogitsLoss``, ``SmoothL1Loss``, ``HuberLoss``;
* :mod:`.loss_more` — ``KLDivLoss``, the margin losses (``MarginRankingLoss``, ``HingeEmbeddingLoss``,
  ``SoftMarginLoss``, ``MultiLabelSoftMarginLoss``, ``MultiMarginLoss``, ``MultiLabelMarginLoss``,
  ``CosineEmbeddingLoss``), ``TripletMarginLoss``, ``TripletMarginWithDistanceLoss``, ``PoissonNLLLoss``,
  ``GaussianNLLLoss``, ``CTCLoss``;
* :mod:`.attention` — ``MultiheadAttention``;
* :mod:`.transformer` — ``TransformerEncoderLayer``, ``TransformerEncoder``, ``TransformerDecoderLayer``,
  ``TransformerDecoder``, ``Transformer`` (torch's semantics and state-dict names);
* :mod:`.recurrent` — ``RNNCell``, ``GRUCell``, ``LSTMCell``, ``RNN``, ``GRU``, ``LSTM``;
* :mod:`.instancenorm` — ``InstanceNorm1d/2d/3d``, ``GroupNorm``; :mod:`.prelu` — ``PReLU``, ``LazyLinear``;
  :mod:`.wrappers` — modules over existing functional ops (``Hardswish``, ``SELU``, ``GLU``, ...,
  ``Unfold``/``Fold``, ``PixelShuffle``);
  :mod:`.resampling` — ``Upsample``, ``UpsamplingNearest2d/Bilinear2d`` and the padding layers
  (``ReflectionPad``, ``ReplicationPad``, ``ZeroPad``, ``ConstantPad``, ``CircularPad`` 1d/2d/3d);
* :mod:`.rms_norm` — ``RMSNorm`` (and ``rms_norm``, its fused Function and composite);
* :mod:`.batch_norm` — the fused batch-norm Function and ``batch_norm``;
* :mod:`.init` — torch's initialisers, drawing from a seeded NumPy generator;
* :mod:`.utils` — ``clip_grad_norm_``, ``clip_grad_value_``, ``parameters_to_vector``,
  ``vector_to_parameters``;
* :mod:`.parallel` — ``DataParallel`` (a pass-through wrapper, as torch's without an accelerator),
  ``DistributedDataParallel`` (torch's error without a process group);
* ``functional`` — ``tinygrad_tx.functional`` under torch's name (``nn/functional.py`` makes
  ``import tinygrad_tx.nn.functional as F`` give the same module).
"""
from .. import functional
from . import init, utils
from .activation import (ELU, Flatten, Hardtanh, Identity, LeakyReLU, LogSoftmax, Mish, ReLU6, Sigmoid, SiLU,
                         Softmax, Softplus, Unflatten)
from .attention import MultiheadAttention, NonDynamicallyQuantizableLinear
from ..functional.batch_norm import batch_norm
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from .layers import GELU, BatchNorm1d, BatchNorm2d, Dropout, Embedding, LayerNorm, Linear, ReLU, Tanh
from .instancenorm import GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .prelu import LazyLinear, PReLU
from .resampling import (CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d,
                         ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d,
                         ReplicationPad3d, Upsample, UpsamplingBilinear2d, UpsamplingNearest2d, ZeroPad1d, ZeroPad2d,
                         ZeroPad3d)
from .wrappers import (CELU, GLU, SELU, CosineSimilarity, Fold, Hardshrink, Hardsigmoid, Hardswish, LogSigmoid,
                       PairwiseDistance, PixelShuffle, PixelUnshuffle, Softmin, Softshrink, Softsign, Tanhshrink, Unfold)
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, L1Loss, MSELoss, NLLLoss,
                   SmoothL1Loss)
from .loss_more import (CosineEmbeddingLoss, CTCLoss, GaussianNLLLoss, HingeEmbeddingLoss, KLDivLoss,
                        MarginRankingLoss, MultiLabelMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss,
                        PoissonNLLLoss, SoftMarginLoss, TripletMarginLoss, TripletMarginWithDistanceLoss)
from .module import Module, RemovableHandle, StateDictError, functional_call
from . import parallel  # noqa: E402  (DataParallel, DistributedDataParallel: torch's behaviour without an accelerator)
from .parallel import DataParallel  # noqa: E402
from .parameter import Parameter
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d,
                      AvgPool2d, Dropout2d, MaxPool1d, MaxPool2d)
from .recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from .rms_norm import RMSNorm
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
                          TransformerEncoderLayer)

__all__ = [
    "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyLinear", "PReLU", "Upsample", "UpsamplingNearest2d",
    "UpsamplingBilinear2d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
    "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
    "ConstantPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d", "GroupNorm", "CELU", "GLU", "SELU",
    "CosineSimilarity", "Fold", "Hardsigmoid", "Hardswish", "LogSigmoid", "PairwiseDistance", "PixelShuffle",
    "PixelUnshuffle", "Softmin", "Softsign", "Tanhshrink", "Unfold", "Hardshrink", "Softshrink",
    "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "Conv2d", "CrossEntropyLoss", "Dropout", "ELU", "Embedding",
    "Flatten", "GELU", "GRU", "GRUCell", "Hardtanh", "HuberLoss", "Identity", "L1Loss", "LSTM", "LSTMCell",
    "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax", "MSELoss", "Mish", "Module", "ModuleDict", "ModuleList",
    "MultiheadAttention", "NLLLoss", "NonDynamicallyQuantizableLinear", "Parameter", "ParameterDict",
    "ParameterList", "RMSNorm", "RNN", "RNNCell", "ReLU", "ReLU6", "RemovableHandle", "Sequential", "SiLU",
    "Sigmoid", "SmoothL1Loss", "Softmax", "Softplus", "StateDictError", "Tanh", "Unflatten", "batch_norm",
    "Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer",
    "functional", "functional_call", "init", "utils",
    "Conv1d", "ConvTranspose1d", "ConvTranspose2d", "BatchNorm2d", "MaxPool1d", "MaxPool2d", "AvgPool1d",
    "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "Dropout2d",
    "KLDivLoss", "MarginRankingLoss", "HingeEmbeddingLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss",
    "MultiMarginLoss", "MultiLabelMarginLoss", "CosineEmbeddingLoss", "TripletMarginLoss",
    "TripletMarginWithDistanceLoss", "PoissonNLLLoss", "GaussianNLLLoss", "CTCLoss",
]
