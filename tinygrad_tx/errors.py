"""The error classes the argument checks of every layer raise (nn, optim, functional, the
factories). Each is a Python exception of the kind Python code expects *and* the one torch raises,
so that code written for either catches it. This module imports nothing."""


class InvalidArgumentError(ValueError, RuntimeError):
    """A bad argument *value* where torch raises RuntimeError (a negative size, an empty
    range, a negative std): a ValueError, as Python code expects, that an
    ``except RuntimeError`` written for torch catches too."""


class InvalidDtypeError(TypeError, RuntimeError):
    """A tensor of the wrong dtype where torch raises RuntimeError ("expected target dtype to be
    Long", "one_hot is only applicable to index tensor of type LongTensor"): a TypeError, as
    Python code expects, that ``except RuntimeError`` written for torch catches too."""


class InvalidArgumentAssertion(ValueError, AssertionError):
    """A bad argument value that torch refuses with an ``assert`` (``Embedding``'s
    ``padding_idx``, ``MultiheadAttention``'s ``embed_dim % num_heads``): a ValueError
    that ``except AssertionError`` also catches -- and unlike an assert, not removed by ``-O``."""
