"""Modules: ``tinygrad_tx.nn`` mirrors ``torch.nn``.

* :mod:`.module` — ``Module`` (registration, traversal, train/eval, ``to(dtype)``,
  ``state_dict``/``load_state_dict``, hooks, repr) and ``functional_call``;
* :mod:`.parameter` — ``Parameter``;
* :mod:`.container` — ``Sequential``, ``ModuleList``;
* :mod:`.layers` — ``Linear``, ``Embedding``, ``Conv2d`` (patch case), ``LayerNorm``,
  ``BatchNorm1d``, ``Dropout``, ``GELU``, ``ReLU``, ``Tanh``;
* :mod:`.batch_norm` — the fused batch-norm Function and ``batch_norm``;
* :mod:`.init` — torch's initialisers, drawing from a seeded NumPy generator.
"""
from . import init
from .batch_norm import batch_norm
from .container import ModuleList, Sequential
from .layers import GELU, BatchNorm1d, Conv2d, Dropout, Embedding, LayerNorm, Linear, ReLU, Tanh
from .module import Module, RemovableHandle, StateDictError, functional_call
from .parameter import Parameter

__all__ = [
    "BatchNorm1d", "Conv2d", "Dropout", "Embedding", "GELU", "LayerNorm", "Linear", "Module", "ModuleList",
    "Parameter", "ReLU", "RemovableHandle", "Sequential", "StateDictError", "Tanh", "batch_norm",
    "functional_call", "init",
]
