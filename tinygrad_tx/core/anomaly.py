"""Anomaly detection (``torch.autograd.detect_anomaly``): the first backward that produces a NaN
or an infinity raises, naming the forward op and the line of user code that created it."""
from __future__ import annotations

import os
import threading
import traceback

import numpy as np


class _AnomalyState(threading.local):
    enabled = False
    check_nan = True


_state = _AnomalyState()
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def is_anomaly_enabled() -> bool:
    return _state.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return _state.check_nan


class set_detect_anomaly:
    """``set_detect_anomaly(mode, check_nan=True)``: turn anomaly detection on or off at once;
    used with ``with``, the previous setting comes back at the end."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self._prev = (_state.enabled, _state.check_nan)
        _state.enabled, _state.check_nan = bool(mode), bool(check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _state.enabled, _state.check_nan = self._prev
        return False


class detect_anomaly:
    """``with detect_anomaly():`` (or ``@detect_anomaly()``): while on, every graph node remembers
    where it was created, and a backward whose gradient holds a NaN or an infinity raises a
    ``RuntimeError`` naming that op and the line of your code that called it."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        self._prev = (_state.enabled, _state.check_nan)
        _state.enabled, _state.check_nan = True, bool(self.check_nan)
        return self

    def __exit__(self, *exc):
        _state.enabled, _state.check_nan = self._prev
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


def record_creation(ctx) -> None:
    """Remember the user's line that created ``ctx`` (the innermost frame outside tinygrad_tx)."""
    stack = traceback.extract_stack()[:-2]
    user = [f for f in stack if not os.path.abspath(f.filename).startswith(_PACKAGE)]
    ctx.created_at = (user or stack)[-1] if (user or stack) else None
    ctx.created_stack = stack


def check(ctx, i, gi) -> None:
    """Raise if the gradient ``gi`` for input ``i`` of ``ctx`` holds a NaN (or an infinity)."""
    if not _state.check_nan:
        return
    arr = gi._data if hasattr(gi, "_data") else np.asarray(gi)
    if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
        what = "nan" if np.isnan(arr).any() else "inf"
        where = getattr(ctx, "created_at", None)
        at = (f"; the forward op was called at {where.filename}:{where.lineno} ({where.line})"
              if where is not None else "")
        raise RuntimeError(f"Function '{ctx.fn.__name__}Backward' returned {what} values in its "
                           f"{i}th output{at}")
