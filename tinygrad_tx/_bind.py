"""The one place where Tensor methods and top-level functions are bound to the op modules.

Every op module below may define two dicts next to its Functions:

* ``TENSOR_METHODS = {"sin": sin, ...}``: bound as ``Tensor.sin`` (a function taking the
  tensor first, as torch's methods do); ``ops/inplace.py`` sets it to None and computes its
  methods (an in-place twin of each method bound before it) in ``in_place_methods()``;
* ``FUNCTIONS = {"sin": sin, ...}``: exported as ``tinygrad_tx.sin``.

A module may not silently replace a method bound earlier (by the Tensor class's own operators or
another module): a name it means to replace goes in its ``REPLACES`` set.
"""
from __future__ import annotations

import importlib

MODULES = (
    "tinygrad_tx.dtypes",        # result_type, promote_types, can_cast
    "tinygrad_tx.ops.unary",
    "tinygrad_tx.ops.binary",
    "tinygrad_tx.ops.matmul",
    "tinygrad_tx.ops.reduce",
    "tinygrad_tx.linalg",        # Tensor.norm, torch.norm
    "tinygrad_tx.ops.linsolve",  # det, logdet, slogdet, inverse
    "tinygrad_tx.ops.histogram",  # bincount, histc, histogram
    "tinygrad_tx.ops.scan",
    "tinygrad_tx.ops.sort",
    "tinygrad_tx.ops.shape",
    "tinygrad_tx.ops.indexing",
    "tinygrad_tx.factories",
    "tinygrad_tx.legacy",        # FloatTensor/LongTensor/... constructors and types, range
    "tinygrad_tx.printing",      # set_printoptions
    "tinygrad_tx.ops.misc",      # Tensor.random_, dist
    "tinygrad_tx.functional",
    "tinygrad_tx.ops.inplace",   # last: it makes an in-place twin of every method bound before it
)


def bind() -> dict:
    """Bind every module's ``TENSOR_METHODS`` onto Tensor; return all ``FUNCTIONS``."""
    from .tensor import Tensor
    functions = {}
    owner = {}
    for name in MODULES:
        module = importlib.import_module(name)
        replaces = getattr(module, "REPLACES", ())
        methods = getattr(module, "TENSOR_METHODS", None)
        if methods is None:
            methods = module.in_place_methods()
        for meth, fn in methods.items():
            if meth in owner or (hasattr(Tensor, meth) and meth not in replaces):
                raise RuntimeError(f"{name} binds Tensor.{meth}, already bound by "
                                   f"{owner.get(meth, 'tensor.py')}; list it in REPLACES to replace it")
            setattr(Tensor, meth, fn)
            owner[meth] = name
        for fname, fn in getattr(module, "FUNCTIONS", {}).items():
            if fname in functions and functions[fname] is not fn:
                raise RuntimeError(f"{name} exports tinygrad_tx.{fname}, already exported by another module")
            functions[fname] = fn
    return functions
