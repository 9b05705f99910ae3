"""What a program recorded by ``tinygrad_tx.compile`` calls (``Ctx``, ``one``, ``accumulate_grad``),
and the helpers that write its text (names, literals, index expressions, the ``del`` of dead values)."""
from __future__ import annotations

import ast
import re

import numpy as np

from ..core import engine as _engine


class Ctx:
    """A Function's ctx in a replay: what its forward saves, read by its backward; no graph."""

    __slots__ = ("needs_input_grad", "_saved", "__dict__")

    def __init__(self, *needs_input_grad):
        self.needs_input_grad = needs_input_grad
        self._saved = ()

    def save_for_backward(self, *arrays):
        self._saved = arrays

    @property
    def saved_tensors(self):
        return self._saved


def one(result):
    """The one gradient of a one-input Function's backward (which may return it in a tuple)."""
    return result[0] if isinstance(result, tuple) else result


# Where the engine sums a tensor's gradient terms through helpers (``add_term``, and ``dense`` for the
# sum's plain array), the program calls the same ones; where it writes ``total + term``, so does the program.
_SUMS = getattr(_engine, "add_term", None) is not None and getattr(_engine, "dense", None) is not None


def accumulate_grad(leaf, g):
    """``leaf.grad += g`` as the engine does it (``engine._accumulate``)."""
    _engine._accumulate(leaf, g)



def _identifier(text: str) -> str:
    s = re.sub(r"\W+", "_", text).strip("_").lower()
    return s if s and not s[0].isdigit() else "p_" + s


def _literal(x):
    """Python source for a simple constant, or None."""
    if x is None or isinstance(x, (bool, int, str)) and type(x) in (bool, int, str):
        return repr(x)
    if type(x) is float and np.isfinite(x):
        return repr(x)
    return None


def _index_src(index) -> str:
    if isinstance(index, tuple):
        return ", ".join(_index_src(i) for i in index) + ("," if len(index) == 1 else "")
    if isinstance(index, slice):
        parts = ["" if v is None else repr(v) for v in (index.start, index.stop, index.step)]
        return ":".join(parts[:2]) + (f":{parts[2]}" if parts[2] else "")
    return "..." if index is Ellipsis else repr(index)


def _bound_names(target) -> set:
    """The local names an assignment target binds: ``a`` and ``a, b`` do; ``T.grad = ...`` and
    ``x[i] = ...`` write into an object and bind nothing (deleting ``T`` after them would make it a
    local of the program, unbound at its first read)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_bound_names(e) for e in target.elts))
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    return set()


def _free_when_dead(lines, ret) -> list:
    """``lines`` with ``del`` appended where values are used for the last time, so that the replay
    frees activations and gradients as eager does (eager drops a node's saved arrays once its
    backward has run): each array lives until its last use, not until the call returns."""
    uses = []
    last = {}
    for i, line in enumerate(lines):
        names = set()
        if not line.startswith("#"):
            names = {n.id for n in ast.walk(ast.parse(line)) if isinstance(n, ast.Name)}
        uses.append(names)
        for n in names:
            last[n] = i
    keep = {n.id for n in ast.walk(ast.parse(ret)) if isinstance(n, ast.Name)}
    defined = set()
    out = []
    for i, line in enumerate(lines):
        if not line.startswith("#"):
            defined |= {name for n in ast.walk(ast.parse(line)) if isinstance(n, ast.Assign)
                        for name in _bound_names(n.targets[0])}
        dead = sorted(n for n in uses[i] if last[n] == i and n in defined and n not in keep and n != "_")
        out.append(line + (f"; del {', '.join(dead)}" if dead else ""))
    return out
