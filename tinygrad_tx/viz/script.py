"""The study tools on a learner's own script: ``tinygrad-tx trace FILE.py`` / ``graph FILE.py``.

The script runs as ``tinygrad-tx run`` runs it (its ``import torch`` answered by tinygrad_tx,
:mod:`tinygrad_tx.torch_shim`) until it calls ``.backward()`` for the first time. That call is
the one studied: :func:`capture_backward` stops the script right there and hands over the
tensor, the cotangent the script passed and the script's variables, so that

* ``trace`` runs that backward inside :func:`~tinygrad_tx.viz.trace_backward` (the same
  backward, the same gradients) and prints every node in execution order;
* ``graph`` draws the graph that backward is about to walk.

The rest of the script (a training loop, say) does not run. With ``call="EXPR"`` the script is
first run as a module (``__name__`` is not ``"__main__"``, so an ``if __name__ == "__main__":``
part is skipped and nothing is captured), then ``EXPR`` is evaluated in its namespace: the first
``.backward()`` it calls is the one studied, or, when it calls none, the backward of the Tensor
it returns (``gradient`` None: torch's implicit 1 for a scalar, a seeded N(0, 1) cotangent
otherwise).

Leaves are named after the script's variables: the parameters of every ``nn.Module`` in its
namespace under the variable's name (``model.fc1.weight``), then
any other Tensor variable that requires grad (``W1``, ``x``).

Nothing changes outside the call: ``Tensor.backward`` is patched only while the script runs,
``import torch`` means tinygrad_tx only then, and ``sys.argv`` is restored.
"""
from __future__ import annotations

import os
import runpy
import sys
from contextlib import contextmanager
from dataclasses import dataclass

from ..core.tensor import Tensor


@dataclass
class CapturedBackward:
    """The backward a script asked for: ``tensor.backward(gradient, **kwargs)`` at ``where``
    (``'file.py:12: loss.backward()'``), with a ``run()`` that performs it and the leaf
    ``names`` (``{name: Tensor}``) found in the script's variables."""

    tensor: Tensor
    gradient: object
    kwargs: dict
    where: str
    names: dict
    _run: object

    def run(self):
        """Run the captured backward exactly as the script called it."""
        return self._run()


class ScriptFailed(Exception):
    """The learner's script (or ``--call``'s expression) raised ``error`` before its first backward:
    its own bug, shown as ``python FILE.py`` would show it (:func:`print_script_error`)."""

    def __init__(self, path: str, error: BaseException):
        super().__init__(f"{path} raised {type(error).__name__}: {error}")
        self.path, self.error = path, error


def syntax_error_line(error: BaseException, path: str) -> str | None:
    """One line for a SyntaxError in the user's own file (``FILE, line N: SyntaxError: msg``), None
    for any other error: nothing of the script ran, so no traceback of its frames exists."""
    if not isinstance(error, SyntaxError) or not error.filename or \
            os.path.abspath(error.filename) != os.path.abspath(path):
        return None
    where = f"{path}, line {error.lineno}" if error.lineno else path
    return f"{where}: {type(error).__name__}: {error.msg} (--debug shows the traceback)"


def print_script_error(failed: ScriptFailed, file=None, debug: bool = False) -> None:
    """The script's traceback from its own first frame on (the runner's frames left out); one line
    for a syntax error in it (the whole traceback with ``debug``)."""
    import traceback
    line = None if debug else syntax_error_line(failed.error, failed.path)
    if line is not None:
        print(f"tinygrad-tx: error: {line}", file=file or sys.stderr)
        return
    tb = failed.error.__traceback__
    first = tb
    while first is not None and os.path.abspath(first.tb_frame.f_code.co_filename) != os.path.abspath(failed.path) \
            and first.tb_frame.f_code.co_filename != "<call>":
        first = first.tb_next
    traceback.print_exception(type(failed.error), failed.error, first or tb, file=file or sys.stderr)


class _Stop(BaseException):
    """Raised inside the script at its first ``.backward()`` to end it (not an Exception, so a
    script's ``except Exception`` does not swallow it)."""

    def __init__(self, captured):
        super().__init__("captured")
        self.captured = captured


def _script_frame(filename: str):
    frame = sys._getframe(2)
    while frame is not None and os.path.abspath(frame.f_code.co_filename) != filename:
        frame = frame.f_back
    return frame


def _line(filename: str, lineno: int) -> str:
    try:
        with open(filename, encoding="utf-8") as f:
            return f.read().splitlines()[lineno - 1].strip()
    except (OSError, IndexError, UnicodeDecodeError):
        return ""


def leaf_names(namespace: dict) -> dict:
    """``{name: Tensor}`` of the parameters of the Modules and the grad-requiring Tensors of a
    script's ``namespace`` (see the module docstring)."""
    from ..nn import Module
    modules = [(k, v) for k, v in namespace.items()
               if isinstance(v, Module) and not k.startswith("_") and any(True for _ in v.parameters())]
    names, seen = {}, set()
    for var, module in modules:
        for name, p in module.named_parameters(remove_duplicate=False):
            names[f"{var}.{name}"] = p
            seen.add(id(p))
    for var, v in namespace.items():
        if isinstance(v, Tensor) and v.requires_grad and v._ctx is None and id(v) not in seen \
                and not var.startswith("_"):
            names[var] = v
            seen.add(id(v))
    return names


@contextmanager
def capture_backward(filename: str):
    """While active, the first ``Tensor.backward`` call raises :class:`_Stop` carrying a
    :class:`CapturedBackward` (the backward itself not yet run)."""
    filename = os.path.abspath(filename)
    original = Tensor.backward

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        frame = _script_frame(filename)
        if frame is not None:
            where = f"{os.path.basename(filename)}:{frame.f_lineno}: {_line(filename, frame.f_lineno)}"
            namespace = {**frame.f_globals, **frame.f_locals}
        else:
            where, namespace = os.path.basename(filename), {}
        kwargs = dict(retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)
        raise _Stop(CapturedBackward(self, gradient, kwargs, where, leaf_names(namespace),
                                     lambda: original(self, gradient, **kwargs)))

    backward.__doc__ = original.__doc__
    Tensor.backward = backward
    try:
        yield
    finally:
        Tensor.backward = original


def first_backward(path: str, call: str | None = None, seed: int = 0) -> CapturedBackward:
    """Run the script at ``path`` on tinygrad_tx up to its first ``.backward()`` (or evaluate
    ``call`` after running it as a module) and return that backward, not yet run.

    Raises ``FileNotFoundError``/``IsADirectoryError`` for a bad path, ``ValueError`` when the
    script (or ``call``) ends or exits without a backward, and :class:`ScriptFailed` (carrying the
    error) when the script itself raises.
    """
    import numpy as np
    from ..torch_shim import torch_as_tinygrad_tx
    if not os.path.exists(path):
        raise FileNotFoundError(2, "No such file", path)
    if not os.path.isfile(path):
        raise IsADirectoryError(21, "Is a directory", path)
    old_argv, old_path = sys.argv, list(sys.path)
    sys.argv = [path]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))   # as `python FILE.py` does
    try:
        with torch_as_tinygrad_tx():
            if call is None:
                try:
                    with capture_backward(path):
                        runpy.run_path(path, run_name="__main__")
                except _Stop as stop:
                    return stop.captured
                except SystemExit as e:
                    raise ValueError(f"{path} exited (sys.exit({e.code!r})) before calling .backward()") from None
                except Exception as e:
                    raise ScriptFailed(path, e) from e
                raise ValueError(f"{path} ran to its end without calling .backward(); name what to "
                                 "differentiate with --call EXPR (e.g. --call 'loss' or --call 'train_step()')")
            try:
                namespace = runpy.run_path(path, run_name="__tinygrad_tx_study__")
            except SystemExit as e:
                raise ValueError(f"{path} exited (sys.exit({e.code!r})) while it was imported for --call") from None
            except Exception as e:
                raise ScriptFailed(path, e) from e
            try:
                code = compile(call, "<call>", "eval")
            except SyntaxError as e:
                raise ValueError(f"--call {call!r} is not a Python expression: {e.msg}") from None
            try:
                with capture_backward("<call>"):
                    value = eval(code, namespace)   # noqa: S307 - the user's own expression
            except _Stop as stop:
                stop.captured.where = f"--call {call!r}"
                stop.captured.names = leaf_names(namespace)
                return stop.captured
            except Exception as e:
                raise ScriptFailed(path, e) from e
            if not isinstance(value, Tensor) or value._ctx is None:
                what = type(value).__name__ if not isinstance(value, Tensor) else "a leaf Tensor (no op made it)"
                raise ValueError(f"--call {call!r} called no .backward() and gave {what}, not a Tensor with a "
                                 "graph to differentiate")
            gradient = None if value.ndim == 0 else \
                np.random.default_rng(seed).standard_normal(value.shape).astype(value._data.dtype)
            return CapturedBackward(value, gradient, {}, f"--call {call!r}", leaf_names(namespace),
                                    lambda: value.backward(gradient))
    finally:
        sys.argv = old_argv
        sys.path[:] = old_path
