"""Containers: ``Sequential`` (chains its children) and ``ModuleList`` (holds them).

Both register their children under the names "0", "1", ..., so state-dict keys
read ``blocks.0.ln1.weight`` exactly as in torch.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping

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

    def extend(self, modules):
        if not isinstance(modules, Iterable):
            raise TypeError(f"ModuleList.extend should be called with an iterable of modules, "
                            f"but got {type(modules).__name__}")
        for module in list(modules):
            self.append(module)
        return self

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
