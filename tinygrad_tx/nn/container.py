"""Containers: ``Sequential`` (chains its children), ``ModuleList`` and ``ModuleDict`` (hold
them), ``ParameterList`` and ``ParameterDict`` (hold Parameters).

The sequences register their children under the names "0", "1", ..., so state-dict keys
read ``blocks.0.ln1.weight`` exactly as in torch; the dicts under their keys.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping

import numpy as np

from .module import Module, _addindent


def _index(container, idx) -> int:
    n = len(container)
    if isinstance(idx, bool) or not isinstance(idx, int):
        raise TypeError(f"{type(container).__name__} indices must be integers or slices, not {type(idx).__name__}")
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range for {type(container).__name__} of length {n}")
    return idx % n


def _renumber(container):
    """After a deletion keep the children numbered 0..n-1 (torch does the same)."""
    modules = list(container._modules.values())
    container._modules.clear()
    for i, m in enumerate(modules):
        container._modules[str(i)] = m


class _ModuleSequence(Module):
    """What Sequential and ModuleList share: children numbered in order, len, iteration,
    indexing (negative too), assignment, deletion (renumbering the rest) and append."""

    def _from_items(self, items):  # pragma: no cover - defined by each container
        raise NotImplementedError

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self._from_items(list(self._modules.items())[idx])
        return list(self._modules.values())[_index(self, idx)]

    def __setitem__(self, idx, module):
        self.add_module(list(self._modules)[_index(self, idx)], module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        for key in (keys[idx] if isinstance(idx, slice) else [keys[_index(self, idx)]]):
            del self._modules[key]
        _renumber(self)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        if not isinstance(modules, Iterable):
            raise TypeError(f"{type(self).__name__}.extend should be called with an iterable of modules, "
                            f"but got {type(modules).__name__}")
        for module in list(modules):
            self.append(module)
        return self

    def pop(self, idx=-1):
        """Remove and return the child at ``idx`` (the rest are renumbered)."""
        module = self[idx]
        del self[idx]
        return module


class Sequential(_ModuleSequence):
    """``Sequential(m0, m1, ...)`` or ``Sequential(OrderedDict(name=module))``:
    ``forward(x)`` is ``m_n(...m1(m0(x)))``."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], Mapping):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def _from_items(self, items):
        return Sequential(OrderedDict(items))

    def insert(self, index: int, module):
        """Put ``module`` before position ``index`` (``-len <= index <= len``), renumbering."""
        if not isinstance(module, Module):
            raise TypeError(f"Sequential.insert: module should be of type Module, got {type(module).__name__}")
        n = len(self)
        if isinstance(index, bool) or not isinstance(index, int) or not -n <= index <= n:
            raise IndexError(f"Sequential.insert: index {index!r} is out of range for length {n}")
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(modules):
            self.add_module(str(i), m)
        return self

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(_ModuleSequence):
    """A list of modules that registers them (so their parameters are found).
    It has no forward: iterate over it in the owner's forward."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _from_items(self, items):
        return ModuleList([m for _, m in items])

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return ModuleList(list(self) + list(other))

    def insert(self, index: int, module) -> None:
        n = len(self)
        index = max(0, min(n, index + n if index < 0 else index))
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(modules):
            self.add_module(str(i), m)

    def __repr__(self):
        """Runs of identical children are compressed, as torch prints them: ``(0-3): 4 x Block(...)``."""
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        runs = []  # [start, end, text]
        for i, r in enumerate(reprs):
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = []
        for start, end, text in runs:
            line = f"({start}): {text}" if start == end else f"({start}-{end}): {end - start + 1} x {text}"
            lines.append(_addindent(line, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


def _pairs(items, where: str):
    """(key, value) pairs from a mapping or an iterable of pairs (torch's ``update`` rule)."""
    if isinstance(items, Mapping):
        return list(items.items())
    if not isinstance(items, Iterable):
        raise TypeError(f"{where}.update should be called with an iterable of key/value pairs, "
                        f"but got {type(items).__name__}")
    pairs = []
    for j, item in enumerate(items):
        if not isinstance(item, Iterable) or isinstance(item, (str, bytes)):
            raise TypeError(f"{where} update sequence element #{j} should be Iterable; is {type(item).__name__}")
        item = tuple(item)
        if len(item) != 2:
            raise ValueError(f"{where} update sequence element #{j} has length {len(item)}; 2 is required")
        pairs.append(item)
    return pairs


class _Dict:
    """The dict protocol over one registry (``_modules`` or ``_parameters``) of a Module."""

    _store = ""

    def _set(self, key, value):  # pragma: no cover - defined by each container
        raise NotImplementedError

    def __getitem__(self, key):
        return self.__dict__[self._store][key]

    def __setitem__(self, key, value):
        self._set(key, value)

    def __delitem__(self, key):
        del self.__dict__[self._store][key]

    def __len__(self):
        return len(self.__dict__[self._store])

    def __iter__(self):
        return iter(self.__dict__[self._store])

    def __contains__(self, key):
        return key in self.__dict__[self._store]

    def keys(self):
        return self.__dict__[self._store].keys()

    def items(self):
        return self.__dict__[self._store].items()

    def values(self):
        return self.__dict__[self._store].values()

    def clear(self) -> None:
        self.__dict__[self._store].clear()

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def update(self, items) -> None:
        for key, value in _pairs(items, type(self).__name__):
            self[key] = value


class ModuleDict(_Dict, Module):
    """A dict of modules (insertion order kept) whose entries are registered children."""

    _store = "_modules"

    def __init__(self, modules=None):
        Module.__init__(self)
        if modules is not None:
            self.update(modules)

    def _set(self, key, module):
        self.add_module(key, module)


def _as_parameter(value):
    """torch's containers turn a plain Tensor (or array) into a Parameter sharing its data."""
    from ..tensor import Tensor
    from .parameter import Parameter
    if isinstance(value, Parameter) or value is None:
        return value
    if not isinstance(value, (Tensor, np.ndarray)):   # torch keeps such entries as plain attributes
        raise TypeError(f"ParameterList/ParameterDict: an entry must be a Parameter, a Tensor, an ndarray or "
                        f"None (other objects are not supported here), got {type(value).__name__} ({value!r})")
    return Parameter(value._data if isinstance(value, Tensor) else value)


_TYPENAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor", "int64": "LongTensor",
              "int32": "IntTensor", "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor",
              "bool": "BoolTensor"}


def _parameters_extra_repr(module, typename: bool) -> str:
    """torch's ParameterList / ParameterDict ``extra_repr``: a line per entry, the dtype as
    ``tinygrad_tx.float32`` (a list) or the type name ``tinygrad_tx.FloatTensor`` (a dict)."""
    lines = []
    for key, p in module._parameters.items():
        if p is None:
            lines.append(f"  ({key}): Object of type: NoneType")
            continue
        size = "x".join(str(n) for n in p.shape)
        name = p._data.dtype.name
        kind = f"tinygrad_tx.{_TYPENAMES.get(name, name)}" if typename else f"tinygrad_tx.{name}"
        lines.append(f"  ({key}): Parameter containing: [{kind} of size {size}]")
    return "\n".join(lines)


class ParameterList(Module):
    """A list of Parameters registered under "0", "1", ... (state-dict keys ``name.0``, ...).
    A Tensor put in it becomes a Parameter sharing its data, as in torch."""

    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.extend(values)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList(list(self._parameters.values())[idx])
        return self._parameters[str(_index(self, idx))]

    def __setitem__(self, idx, param):
        self.register_parameter(str(_index(self, idx)), _as_parameter(param))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def append(self, value):
        self.register_parameter(str(len(self)), _as_parameter(value))
        return self

    def extend(self, values):
        if not isinstance(values, Iterable) or isinstance(values, (str, bytes)):
            raise TypeError(f"ParameterList.extend should be called with an iterable, "
                            f"but got {type(values).__name__}")
        for value in list(values):
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return _parameters_extra_repr(self, typename=False)


class ParameterDict(_Dict, Module):
    """A dict of Parameters registered under their keys; Tensors become Parameters."""

    _store = "_parameters"

    def __init__(self, parameters=None):
        Module.__init__(self)
        if parameters is not None:
            self.update(parameters)

    def _set(self, key, value):
        self.register_parameter(key, _as_parameter(value))

    def update(self, items) -> None:
        """As torch's: a plain dict's entries go in sorted by key (an OrderedDict, a ParameterDict
        or a list of pairs keeps its order)."""
        if isinstance(items, Mapping) and not isinstance(items, (OrderedDict, ParameterDict)):
            items = sorted(items.items())
        super().update(items)

    def extra_repr(self) -> str:
        return _parameters_extra_repr(self, typename=True)
