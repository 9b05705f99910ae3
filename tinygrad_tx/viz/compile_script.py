"""``tinygrad-tx compile FILE.py --call 'step(x, y)'``: a function of your own script under
``tinygrad_tx.compile``, against eager.

The script is imported twice under the torch shim (``import torch`` gives tinygrad_tx), each time
from the same seed, without running its ``if __name__ == "__main__":`` block: once to call the
expression ``--steps`` times eagerly, once with the function it calls replaced by
``tinygrad_tx.compile(function)``. Every result (Tensors, numbers, tuples and lists of them) and
every parameter and gradient the function's module globals hold are compared bit for bit; a
compile that refused (one warning saying why) is reported as such, and ``--show`` prints the
straight-line program the replay runs.
"""
from __future__ import annotations

import ast
import os
import runpy
import statistics
import sys
import time
import warnings

import numpy as np

from ..core.tensor import Tensor


def _arrays(value) -> list:
    """The arrays of a result: a Tensor's values, a number, the items of a tuple/list/dict."""
    if isinstance(value, Tensor):
        return [np.array(value._data)]
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _arrays(v)]
    if isinstance(value, dict):
        return [a for k in sorted(value, key=str) for a in _arrays(value[k])]
    if isinstance(value, (int, float, bool, np.number)):
        return [np.array(value)]
    return []


def _state(namespace) -> list:
    """Every parameter, buffer and ``.grad`` of the nn Modules the script's globals hold."""
    from .. import nn
    out = []
    for name in sorted(namespace):
        m = namespace[name]
        if isinstance(m, nn.Module):
            for t in list(m.parameters()) + list(m.buffers()):
                out.append(np.array(t._data))
                if t.grad is not None:
                    out.append(np.array(t.grad._data))
    return out


def _callee(call: str) -> str:
    try:
        tree = ast.parse(call, mode="eval")
    except SyntaxError as e:
        raise ValueError(f"--call {call!r} is not a Python expression: {e.msg}") from None
    if not isinstance(tree.body, ast.Call) or not isinstance(tree.body.func, ast.Name):
        raise ValueError(f"--call {call!r} must call a function of the script by its name, e.g. 'train_step(x, y)'")
    return tree.body.func.id


def _run(path: str, call: str, steps: int, seed: int, compiled: bool):
    import tinygrad_tx as tg
    from ..torch_shim import torch_as_tinygrad_tx
    from .script import ScriptFailed
    name = _callee(call)
    old_argv, old_path = sys.argv, list(sys.path)
    sys.argv = [path]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        with torch_as_tinygrad_tx():
            tg.manual_seed(seed)
            try:
                namespace = runpy.run_path(path, run_name="__tinygrad_tx_study__")
            except Exception as e:
                raise ScriptFailed(path, e) from e
            fn = namespace.get(name)
            if not callable(fn):
                raise ValueError(f"--call {call!r}: {path} defines no function {name!r}")
            if compiled:
                fn = namespace[name] = tg.compile(fn)
            code = compile(call, "<call>", "eval")
            results, times, refusals = [], [], []
            for _ in range(steps):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    t0 = time.perf_counter()
                    try:
                        value = eval(code, namespace)   # noqa: S307 - the user's own expression
                    except Exception as e:
                        raise ScriptFailed(path, e) from e
                    times.append(time.perf_counter() - t0)
                refusals += [str(w.message) for w in caught if "compile" in type(w.message).__name__.lower()
                             or "compile" in str(w.message)]
                results.append(_arrays(value))
            return results, _state(namespace), times, fn, refusals
    finally:
        sys.argv, sys.path[:] = old_argv, old_path


def compile_script(path: str, call: str, steps: int = 5, seed: int = 0, show: bool = False) -> tuple[str, bool]:
    """The report (text) and whether every result, parameter and gradient equals eager's."""
    if not os.path.isfile(path):
        raise FileNotFoundError(2, "No such file", path)
    eager, state_e, t_e, _, _ = _run(path, call, steps, seed, compiled=False)
    comp, state_c, t_c, fn, refusals = _run(path, call, steps, seed, compiled=True)
    same = len(eager) == len(comp) and all(
        len(a) == len(b) and all(x.shape == y.shape and np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b))
        for a, b in zip(eager, comp)) and len(state_e) == len(state_c) and \
        all(np.array_equal(x, y, equal_nan=True) for x, y in zip(state_e, state_c))
    lines = []
    if show and getattr(fn, "code", None):
        lines.append(fn.code.rstrip("\n"))
    lines.append(f"{steps} calls of {call}: results, parameters and gradients identical to eager: "
                 f"{'yes' if same else 'NO'}")
    if refusals:
        lines.append(f"compile refused and ran eagerly: {refusals[0]}")
    if steps > 1:
        lines.append(f"median call (the first, recording, left out): eager {statistics.median(t_e[1:]) * 1e3:.2f} ms, "
                     f"compiled {statistics.median(t_c[1:]) * 1e3:.2f} ms")
    return "\n".join(lines) + "\n", same
