"""What a recorded program of ``tinygrad_tx.compile`` depends on besides its code, checked before
each replay: the call's arguments (:func:`_flatten`'s key), each module's tensors (:func:`_members`)."""
from __future__ import annotations

import dis
import functools
import sys
import types
from collections.abc import Mapping

import numpy as np

from ..core import dtypes as _dtypes
from ..core.grad_mode import _state as _grad_mode
from ..core.size import Size
from ..core.tensor import Tensor


def _is_module(obj) -> bool:
    """An ``nn.Module`` (recognised by what compile reads of one, ``modules()``, ``_parameters``
    and ``_buffers``: nn imports compile for ``Module.compile()``, so compile does not import nn)."""
    return callable(getattr(obj, "modules", None)) and hasattr(obj, "_parameters") and hasattr(obj, "_buffers")


def _members(module) -> tuple:
    """Which tensors a module holds (by identity): a parameter or buffer replaced since the
    recording (``model.weight = Parameter(...)``) is a failed guard, not a stale read."""
    return tuple(map(id, module._parameters.values())) + tuple(map(id, module._buffers.values()))


def _tensor_state(t) -> tuple:
    """What a replay assumes of a tensor it reads (an argument, a parameter, a global): shape,
    dtype, strides (``is_contiguous()``/``stride()`` branch on them), ``requires_grad``, whether
    it has a graph, whether its ``.grad`` is None (``if p.grad is None``), and its hooks (a replay
    runs none: a hook added after the recording must record anew)."""
    d = t._data
    return (d.shape, d.dtype, d.strides, t._requires_grad, t._ctx is None, t._grad is None, tuple(map(id, t._hooks)))


def _scalar_key(x):
    """A Python or NumPy scalar as a key that tells apart what ``==`` does not: ``-0.0`` from
    ``0.0`` (``x / s`` gives -inf or inf), NaN from NaN (equal to itself here), ``1`` from
    ``1.0`` and ``True``, ``np.int64(3)`` from ``3`` (its dtype takes part in promotion)."""
    if isinstance(x, np.generic):
        return ("G", x.dtype, x.tobytes())
    if type(x) is float:
        return (float, x.hex())
    if type(x) is complex:
        return (complex, x.real.hex(), x.imag.hex())
    return (type(x), x)


def _flatten(args, kwargs):
    """The call's arguments as a flat list, a key of what the program depends on, and the objects
    keyed by identity (the program keeps them alive, so that Python cannot give their id to a
    new object: ``f(x, Cfg(2.0))`` then ``f(x, Cfg(3.0))`` is two keys, not one)."""
    flat, key, pinned = [], [], []
    stack = [("k", tuple(sorted(kwargs.items()))), ("a", args)]
    while stack:
        tag, x = stack.pop()
        if isinstance(x, Tensor):
            flat.append(x)
            key.append(("T",) + _tensor_state(x))
        elif isinstance(x, np.ndarray):
            flat.append(x)
            key.append(("N", x.shape, x.dtype, x.strides))
        elif isinstance(x, (tuple, list)):
            key.append((tag, type(x), len(x)))
            stack.extend(("i", v) for v in reversed(x))
        elif isinstance(x, dict):
            key.append((tag, dict, tuple(map(_scalar_key, x))))
            stack.extend(("i", v) for v in reversed(list(x.values())))
        elif x is None or isinstance(x, (bool, int, float, complex, str, bytes, np.generic)):
            key.append(_scalar_key(x))
        else:
            flat.append(x)
            pinned.append(x)
            key.append(("O", id(x)))
    key.append((_grad_mode.enabled, _dtypes.default_float()))
    return flat, tuple(key), pinned


# ---------------------------------------------------------------------------- Python values read by name

_VALUE_TYPES = (bool, int, float, complex, str, bytes, type(None))
_MISSING = object()
_DEPTH = 4                      # how many calls deep functions reached by name are followed
_LIBRARY_ROOTS = {"tinygrad_tx", "numpy", "torch", "scipy", "builtins"}
_LIBRARY_DIRS = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})


_CONTAINER_VALUES = 1024        # the most numbers a container compared by value holds


def _value(v):
    """``v`` as a guard compares it by value (a deep copy of a container of numbers, nested ones
    too: ``cfg["opt"]["lr"]``), or ``_MISSING`` where it is compared by identity."""
    budget = [_CONTAINER_VALUES]

    def copy(x):
        t = type(x)
        if t in _VALUE_TYPES or isinstance(x, np.generic):
            return x
        if t not in (tuple, list, dict, set, frozenset, Size):
            return _MISSING
        budget[0] -= len(x)
        if budget[0] < 0:
            return _MISSING
        items = [copy(k) for k in x.values()] if t is dict else [copy(k) for k in x]
        if any(k is _MISSING for k in items):
            return _MISSING
        if t is dict:
            return dict(zip(x.keys(), items))
        return Size(items) if t is Size else t(items)
    return copy(v)


_RANDOM_MODULES = {"random", "secrets", "numpy.random", "numpy.random.mtrand"}


class Unreplayable(Exception):
    """What the walk finds that no guard can cover: a Python random stream the function reads."""


def _python_random(obj) -> bool:
    """Whether ``obj`` is a random stream outside the engine's (Python's ``random``, NumPy's
    global or a NumPy Generator): a number drawn from it would be frozen into the program."""
    from ..generator import Generator
    owner = getattr(obj, "__self__", obj)
    if isinstance(owner, Generator):
        return False        # the engine's: its draws go through Functions or are caught by the recorder
    if isinstance(obj, types.ModuleType):
        return obj.__name__ in _RANDOM_MODULES
    import random
    return isinstance(owner, (random.Random, np.random.RandomState, np.random.Generator)) or \
        getattr(obj, "__module__", None) in _RANDOM_MODULES


def _library(obj) -> bool:
    """Whether a function or class is library code (this package, NumPy, the standard library,
    site-packages): its globals are the library's, not the user's, and are not followed."""
    module = getattr(obj, "__module__", None) or ""
    if module.split(".")[0] in _LIBRARY_ROOTS:
        return True
    code = getattr(obj, "__code__", None)
    path = code.co_filename if code is not None else getattr(sys.modules.get(module), "__file__", None)
    return (path or "").startswith(_LIBRARY_DIRS)


_GLOBAL_OPS = {"LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_NAME", "STORE_NAME", "DELETE_NAME"}
_ATTRIBUTE_OPS = {"LOAD_ATTR", "LOAD_METHOD", "STORE_ATTR", "DELETE_ATTR", "LOAD_SUPER_ATTR"}


def _names(code):
    """The global names and the attribute names that ``code`` and the code nested in it (inner
    functions, lambdas, comprehensions) use -- told apart by the bytecode, so that ``opt.step()``
    does not make a global ``step`` (a loop counter) a guard."""
    globals_, attributes, stack = set(), set(), [code]
    while stack:
        c = stack.pop()
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
        for ins in dis.get_instructions(c):
            if ins.opname in _GLOBAL_OPS:
                globals_.add(ins.argval)
            elif ins.opname in _ATTRIBUTE_OPS:
                attributes.add(ins.argval)
    return globals_, attributes


def _methods(cls) -> list:
    """The user functions a class defines: methods, static and class methods, properties' getters
    (a global read in a ``@staticmethod`` is a read of the call like any other)."""
    out = []
    for f in vars(cls).values():
        if isinstance(f, (staticmethod, classmethod)):
            f = f.__func__
        elif isinstance(f, property):
            f = f.fget
        if isinstance(f, types.FunctionType) and not _library(f):
            out.append(f)
    return out


def _defaults(fn) -> list:
    """``fn``'s default argument values as ``(name, value)`` pairs."""
    code = fn.__code__
    positional = code.co_varnames[:code.co_argcount]
    out = list(zip(positional[len(positional) - len(fn.__defaults__ or ()):], fn.__defaults__ or ()))
    return out + sorted((fn.__kwdefaults__ or {}).items())


class _Defaults:
    """A function's defaults as a namespace that ``NameReads.changed`` reads like a dict: a
    mutable default changed in place (``acc.append(...)``) or replaced is a changed guard."""

    def __init__(self, fn):
        self.fn = fn

    def get(self, key, missing):
        return dict(_defaults(self.fn)).get(key, missing)


class NameReads:
    """The Python values a compiled function can read by name, as they were when it was recorded
    -- a recorded program holds the numbers it was computed with, and the objects it reads --
    checked before each replay (:meth:`holds`; a change records a new program):

    * the globals and closure variables its code names (``LOAD_GLOBAL``, ``co_freevars``, nested
      code included), and in the code of the Python functions and user classes' methods it reaches
      by those names, :data:`_DEPTH` calls deep (library code is not followed);
    * the attributes named in that code of the Python modules and user objects reached by name
      (``config.scale``, ``cfg.lr``);
    * every module reached by name or called in the recording (its whole tree): its number
      attributes (``self.temperature``, a dropout's ``p``, a norm's ``eps``), its tensor
      attributes, its children (by identity), its hooks.

    Numbers, strings, None, and small tuples/lists/dicts of those are compared by value; anything
    else (a tensor, a module, a function) by identity. What a program reads live needs no guard:
    a tensor's values (read each call), an optimizer's hyperparameters (its ``step()`` is replayed
    as a call)."""

    def __init__(self):
        self.by_value = []      # (namespace dict, key, value)
        self.by_identity = []   # (namespace dict, key, object)
        self.cells = []         # (closure cell, value or _MISSING, object)
        self.labels = {}        # id(namespace or cell), key -> what the user calls it
        self._seen = set()
        self._modules = set()

    # ------------------------------------------------------------------ collecting
    def add(self, space, key, v, label):
        if (id(space), key) in self._seen:
            return
        self._seen.add((id(space), key))
        self.labels[id(space), key] = label
        if isinstance(space, types.CellType):
            self.cells.append((space, _value(v), v))
            return
        value = _value(v)
        if value is _MISSING:
            self.by_identity.append((space, key, v))
        else:
            self.by_value.append((space, key, value))

    def add_module(self, module):
        """One module's own attributes (its children are added when they are reached)."""
        if id(module) in self._modules:
            return
        self._modules.add(id(module))
        d = module.__dict__
        name = type(module).__name__
        for k, v in d.items():
            if k == "training" or k.startswith("__"):
                continue          # ``training`` is guarded where each module is called
            if _value(v) is not _MISSING or isinstance(v, (Tensor, np.ndarray)):
                self.add(d, k, v, f"{name}.{k}")
        children = d.get("_modules") or {}
        for k, child in children.items():
            self.add(children, k, child, f"{name}.{k}")

    def collect(self, roots):
        """Walk from ``roots`` (``(object, label)`` pairs: the compiled function, its arguments)."""
        seen, names, spaces, scanned = set(), set(), [], set()
        work = [(obj, 0, label) for obj, label in roots]
        while work:
            while work:
                obj, depth, label = work.pop()
                if id(obj) in seen or isinstance(obj, (Tensor, np.ndarray)) or _value(obj) is not _MISSING:
                    continue
                seen.add(id(obj))
                work += self._reach(obj, depth, label, names, spaces)
            for obj, depth, label in spaces:      # attributes read by name (names grows as code is read)
                d = getattr(obj, "__dict__", None)
                for k in names.intersection(d) if isinstance(d, Mapping) else ():
                    if (id(obj), k) not in scanned:
                        scanned.add((id(obj), k))
                        self.add(d, k, d[k], f"{label}.{k}")
                        if depth < _DEPTH:
                            work.append((d[k], depth + 1, f"{label}.{k}"))

    def _reach(self, obj, depth, label, names, spaces) -> list:
        """What the walk reaches from one object: more objects to visit."""
        from . import CompiledFunction
        if _python_random(obj):
            raise Unreplayable(f"it reads a random stream outside the engine ({label}: Python's random or "
                               "NumPy's): a replay would keep this call's numbers")
        if isinstance(obj, CompiledFunction):
            return [(obj.fn, depth, label)]
        if isinstance(obj, types.MethodType):
            return [(obj.__self__, depth, label), (obj.__func__, depth, label)]
        if isinstance(obj, functools.partial):
            return [(x, depth, label) for x in (obj.func, *obj.args, *obj.keywords.values())]
        if _is_module(obj):
            for m in obj.modules():
                self.add_module(m)
            classes = {c for m in obj.modules() for c in type(m).__mro__ if not _library(c)}
            spaces.extend((c, depth, c.__qualname__) for c in classes)   # class attributes (``scale = 2.0``)
            spaces.extend((m, depth, type(m).__name__) for m in obj.modules() if not _library(type(m)))
            return [(f, depth + 1, c.__qualname__) for c in classes for f in _methods(c)]
        if isinstance(obj, types.FunctionType):
            if _library(obj):
                return []
            out = []
            for k, v in _defaults(obj):        # ``def f(x, acc=[])``: a default is read like a global
                self.add(_Defaults(obj), k, v, f"the default of `{k}` (of {obj.__qualname__})")
                out.append((v, depth + 1, k))
            globals_, attributes = _names(obj.__code__)
            names.update(attributes)
            for k in sorted(globals_.intersection(obj.__globals__)):
                self.add(obj.__globals__, k, obj.__globals__[k], f"the global `{k}`")
                out.append((obj.__globals__[k], depth + 1, k))
            for k, cell in zip(obj.__code__.co_freevars, obj.__closure__ or ()):
                try:
                    v = cell.cell_contents
                except ValueError:
                    continue
                self.add(cell, None, v, f"the closure variable `{k}` (of {obj.__qualname__})")
                out.append((v, depth + 1, k))
            return out if depth < _DEPTH else []
        if isinstance(obj, (types.ModuleType, type)) or hasattr(obj, "__dict__"):
            spaces.append((obj, depth, label))
            cls = obj if isinstance(obj, type) else type(obj)
            if not isinstance(obj, types.ModuleType) and not _library(cls):
                classes = [c for c in cls.__mro__ if not _library(c)]
                spaces.extend((c, depth, c.__qualname__) for c in classes if c is not obj)
                return [(f, depth + 1, c.__qualname__) for c in classes for f in _methods(c)]
        return []

    def tensors(self) -> set:
        """ids of the tensors read by name: the replay may read them live (``changed`` sees the
        name rebound)."""
        objs = [v for _, _, v in self.by_identity] + [v for _, _, v in self.cells]
        return {id(v) for v in objs if isinstance(v, Tensor)}

    # ------------------------------------------------------------------ checking
    def changed(self):
        """None while every value is as recorded; else the name of one that is not. Run before
        each replay: a dict read and a comparison per value."""
        for d, k, v in self.by_value:
            x = d.get(k, _MISSING)
            if x is not v and (type(x) is not type(v) or x != v):
                return self.labels[id(d), k]
        for d, k, v in self.by_identity:
            if d.get(k, _MISSING) is not v:
                return self.labels[id(d), k]
        for cell, value, v in self.cells:
            try:
                x = cell.cell_contents
            except ValueError:       # the variable was deleted
                return self.labels[id(cell), None]
            if x is not v if value is _MISSING else x is not value and (type(x) is not type(value) or x != value):
                return self.labels[id(cell), None]
        return None
