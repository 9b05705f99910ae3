"""The one place where Tensor methods and top-level functions are bound to the op modules.

Every op module below may define three dicts next to its Functions (adding an op is its file and
one line in ``MODULES``; ``functional/shrink.py`` is the example):

* ``TENSOR_METHODS = {"sin": sin, ...}``: bound as ``Tensor.sin`` (a function taking the
  tensor first, as torch's methods do); ``ops/inplace.py`` sets it to None and computes its
  methods (an in-place twin of each method bound before it) in ``in_place_methods()``;
* ``FUNCTIONS = {"sin": sin, ...}``: exported as ``tinygrad_tx.sin``;
* ``FUNCTIONAL = {"softshrink": softshrink, ...}``: exported as ``tinygrad_tx.functional.softshrink``
  (``torch.nn.functional``'s names; ``functional/__init__.py`` imports the tutorial's own by hand).

A module may not silently replace a method bound earlier (by the Tensor class's own operators or
another module): a name it means to replace goes in its ``REPLACES`` set.

Two things torch's argument parser does for every op are done here once, for every method and function:

* **names**: an argument error names the method the user called (``sum() got an unexpected keyword
  argument``), never the Python function behind it (``sum_``, ``_float_math.<locals>.method``):
  Python's own messages use the function's ``__qualname__``, so each bound function answers to the
  name it is bound as (a function bound under two names, e.g. ``clamp``/``clip``, gets a copy for
  the second: each alias names itself, as torch's do);
* **NumPy's alias** ``keepdims=`` of ``keepdim=``: torch's parser accepts it on every op with a
  ``keepdim`` argument (sum, mean, amax, std, logsumexp, ...), so each method and function whose
  signature has ``keepdim`` accepts it too (passing both is a TypeError).
"""
from __future__ import annotations

import functools
import importlib
import inspect
import types

MODULES = (
    "tinygrad_tx.tensor",        # first: the operators, casts and NumPy protocols (the core's Tensor computes nothing)
    "tinygrad_tx.core.dtypes",   # result_type, promote_types, can_cast
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
    "tinygrad_tx.functional.shrink",   # hardshrink, softshrink: the example of adding an op (docs/engine.md §9)
    "tinygrad_tx.ops.compat",    # select, addcmul/addcdiv, the in-place view ops (unsqueeze_, t_, ...)
    "tinygrad_tx.ops.inplace",   # last: it makes an in-place twin of every method bound before it
)


def _defined_on(cls, name: str) -> bool:
    """Whether ``cls`` (not ``object``: its default ``__eq__``, ``__repr__``...) defines ``name``."""
    return any(name in vars(k) for k in cls.__mro__ if k is not object)


def bind() -> dict:
    """Bind every module's ``TENSOR_METHODS`` onto Tensor; return all ``FUNCTIONS``."""
    from .core.tensor import Tensor
    functions = {}
    owner = {}
    origin = {}   # function name -> the module exporting it
    for name in MODULES:
        module = importlib.import_module(name)
        replaces = getattr(module, "REPLACES", ())
        methods = getattr(module, "TENSOR_METHODS", None)
        if methods is None:
            methods = module.in_place_methods()
        for meth, fn in methods.items():
            if (meth in owner or _defined_on(Tensor, meth)) and meth not in replaces:
                raise RuntimeError(f"{name} binds Tensor.{meth}, already bound by "
                                   f"{owner.get(meth, 'tensor.py')}; list it in REPLACES to replace it")
            setattr(Tensor, meth, _named(fn, meth))
            owner[meth] = name
        for fname, fn in getattr(module, "FUNCTIONS", {}).items():
            if fname in functions and functions[fname] is not fn:
                raise RuntimeError(f"{name} exports tinygrad_tx.{fname}, already exported by another module")
            functions[fname] = fn
            origin[fname] = module
        _export_functional(name, getattr(module, "FUNCTIONAL", {}))
    _parser_conventions(Tensor, list(owner), functions, origin)
    return functions


def _export_functional(name: str, table: dict) -> None:
    """A module's ``FUNCTIONAL`` names, set on ``tinygrad_tx.functional`` (F)."""
    if not table:
        return
    F = importlib.import_module("tinygrad_tx.functional")
    for fname, fn in table.items():
        if getattr(F, fname, fn) is not fn:
            raise RuntimeError(f"{name} exports tinygrad_tx.functional.{fname}, already defined there")
        setattr(F, fname, fn)


def _parser_conventions(Tensor, methods, functions: dict, origin: dict) -> None:
    """What torch's argument parser does for every op (see the module docstring): each bound
    method and function answers to its own name, and takes ``keepdims=`` where it has ``keepdim``."""
    _name_class_aliases(Tensor)
    for meth in methods:
        fn = Tensor.__dict__[meth]
        if meth not in _NO_KEEPDIMS_ALIAS and _has_keepdim(fn):
            setattr(Tensor, meth, keepdims_alias(fn, meth))
    for fname, fn in functions.items():
        functions[fname] = _named(_wrapping_named(fn, fname, Tensor.__dict__.get(fname)), fname)
    for fname, fn in functions.items():
        method = Tensor.__dict__.get(fname)
        if fname not in _NO_KEEPDIMS_ALIAS and isinstance(fn, types.FunctionType) and (
                _has_keepdim(fn) or getattr(method, "_keepdims_alias", False)):
            functions[fname] = keepdims_alias(fn, fname)
            if getattr(origin[fname], fname, None) is fn:   # the module's own name too (F.pairwise_distance)
                setattr(origin[fname], fname, functions[fname])
            table = getattr(origin[fname], "FUNCTIONS", {})
            if table.get(fname) is fn:                       # and its FUNCTIONS table, which tests read
                table[fname] = functions[fname]
    _alias_namespace("tinygrad_tx.linalg")


def _alias_namespace(name: str) -> None:
    """torch.linalg's norms (``vector_norm``, ``matrix_norm``, ``norm``) take ``keepdims=`` too: the
    public functions of ``name`` with a ``keepdim`` argument get the alias in that namespace."""
    module = importlib.import_module(name)
    for fname in dir(module):
        fn = getattr(module, fname)
        if not fname.startswith("_") and isinstance(fn, types.FunctionType) and fn.__module__ == name \
                and _has_keepdim(fn):
            setattr(module, fname, keepdims_alias(fn, fname))


_RENAMED = set()   # ids of the functions already answering to a bound name


def _named(fn, name: str, copy: bool = False):
    """``fn`` answering to ``name`` in Python's argument errors: renamed in place the first time
    (only its ``__qualname__``: the message's name), a renamed copy when already bound under
    another name or when ``copy``. Dunder methods and anything not a plain function are left alone."""
    if not isinstance(fn, types.FunctionType) or name.startswith("__") or fn.__qualname__ == "Tensor." + name:
        return fn   # a dunder, a property, or a Tensor method under its own name (tensor.py's)
    if fn.__qualname__ == name:
        _RENAMED.add(id(fn))   # answers to this name already: another name gets a copy
        return fn
    own = "." not in fn.__qualname__ or "<locals>" in fn.__qualname__   # not a Tensor class method, which keeps its name
    if not copy and own and id(fn) not in _RENAMED and not fn.__name__.startswith("__"):
        _RENAMED.add(id(fn))
        fn.__qualname__ = name
        return fn
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__dict__.update(fn.__dict__)
    copy.__doc__, copy.__module__, copy.__qualname__ = fn.__doc__, fn.__module__, name
    _RENAMED.add(id(copy))
    return copy


def _wrapping_named(fn, name: str, method):
    """The function ``tinygrad_tx.name`` calls, through ``__wrapped__``, a method bound under another
    name (``absolute`` wrapping the method ``abs``): a copy of ``fn`` that calls the same code under
    ``name`` (the Tensor method ``name``'s function), so its argument errors say ``absolute()``."""
    inner = getattr(fn, "__wrapped__", None)
    if not isinstance(fn, types.FunctionType) or not isinstance(inner, types.FunctionType) or \
            inner.__qualname__.rsplit(".", 1)[-1] == name or not fn.__closure__:
        return fn
    named = inspect.unwrap(method) if isinstance(method, types.FunctionType) else None
    if named is None or named.__code__ is not inner.__code__ or named.__closure__ != inner.__closure__:
        return fn
    cells = tuple(types.CellType(named) if c.cell_contents is inner else c for c in fn.__closure__)
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, cells)
    copy.__kwdefaults__, copy.__doc__, copy.__qualname__ = fn.__kwdefaults__, fn.__doc__, name
    copy.__dict__.update(fn.__dict__)
    copy.__wrapped__ = named
    return copy


def _name_class_aliases(cls) -> None:
    """The Tensor class's own aliases (``eq = __eq__``, ``swapaxes = transpose``, ...) named as bound."""
    for name, fn in list(vars(cls).items()):
        if not name.startswith("_") and isinstance(fn, types.FunctionType) and fn.__qualname__.rsplit(".", 1)[-1] != name:
            setattr(cls, name, _named(fn, name, copy=True))   # the original keeps its own name


# torch.norm and Tensor.norm are Python functions (torch/functional.py) outside its argument parser: they take
# no keepdims (torch.linalg.norm, a native op, does)
_NO_KEEPDIMS_ALIAS = {"norm"}


def _has_keepdim(fn) -> bool:
    if not callable(fn):
        return False
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "keepdim" in params and "keepdims" not in params


_UNSET = object()


def keepdims_alias(fn, name: str):
    """``fn`` also accepting ``keepdims=`` for its ``keepdim=`` (torch's NumPy alias)."""
    @functools.wraps(fn)
    def with_alias(*args, keepdims=_UNSET, **kwargs):
        if keepdims is not _UNSET:
            if "keepdim" in kwargs:
                raise TypeError(f"{name}(): got both keepdim={kwargs['keepdim']!r} and its alias "
                                f"keepdims={keepdims!r}; pass one")
            kwargs["keepdim"] = keepdims
        return fn(*args, **kwargs)
    with_alias.__qualname__ = name
    with_alias._keepdims_alias = True
    return with_alias
