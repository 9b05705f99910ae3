"""Grad mode: whether ops record the graph (``no_grad``, ``enable_grad``, ``inference_mode``,
``set_grad_enabled``), per thread as in torch. Nothing here knows about Tensors."""
from __future__ import annotations

import functools
import threading

class _GradMode(threading.local):
    enabled = True  # per thread, like torch's grad mode


_state = _GradMode()


def is_grad_enabled() -> bool:
    return _state.enabled


def _set_mode(mode: bool) -> None:
    _state.enabled = bool(mode)


class _GradModeGuard:
    """Base of the grad-mode switches: a context manager that restores the previous mode, and a
    decorator (``@no_grad()`` or bare ``@no_grad``), as torch's."""

    mode = False

    def __new__(cls, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs and cls._takes_function:
            return cls()(args[0])    # bare @no_grad / @inference_mode on a function
        return super().__new__(cls)

    _takes_function = True

    def __enter__(self):
        self._prev = is_grad_enabled()
        _set_mode(self.mode)
        return self

    def __exit__(self, *exc):
        _set_mode(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__._fresh(self):
                return fn(*args, **kwargs)
        return wrapper

    def _fresh(self):
        return self.__class__()


class no_grad(_GradModeGuard):
    """Disable graph recording, as ``torch.no_grad``: a context manager and a decorator."""

    mode = False


class enable_grad(_GradModeGuard):
    """Re-enable graph recording inside a ``no_grad`` region."""

    mode = True


class inference_mode(_GradModeGuard):
    """``torch.inference_mode(mode=True)``: here the same as ``no_grad`` (mode=True) or a no-op
    (mode=False); a context manager and a decorator, with or without parentheses."""

    def __init__(self, mode: bool = True):
        self.enabled = bool(mode)

    def __enter__(self):
        self._prev = is_grad_enabled()
        if self.enabled:
            _set_mode(False)
        return self

    def _fresh(self):
        return inference_mode(self.enabled)


class set_grad_enabled(_GradModeGuard):
    """``set_grad_enabled(mode)`` sets grad mode at once (a function call, as torch's) and, used
    as a context manager, restores the previous mode on exit."""

    _takes_function = False

    def __init__(self, mode: bool):
        if not isinstance(mode, (bool, int)):
            raise TypeError(f"set_grad_enabled: mode must be a bool, got {mode!r}")
        self._prev = is_grad_enabled()
        self.mode = bool(mode)
        _set_mode(mode)

    def __enter__(self):
        return self

    def __call__(self, fn):
        _set_mode(self._prev)   # as a decorator it changes nothing until the function runs
        return super().__call__(fn)

    def _fresh(self):
        return set_grad_enabled(self.mode)


def is_inference_mode_enabled() -> bool:
    return False


class _DispatchState(threading.local):
    """Whether a backward is running on Tensors (``create_graph=True``): then NumPy calls on
    Tensors become Tensor ops (``autograd/dispatch.py`` holds the tables), per thread."""
    active = False


_dispatch = _DispatchState()


class running_on_tensors:
    """``with running_on_tensors():`` -- NumPy calls on Tensors become Tensor ops."""

    def __enter__(self):
        self._prev = _dispatch.active
        _dispatch.active = True

    def __exit__(self, *exc):
        _dispatch.active = self._prev
        return False
