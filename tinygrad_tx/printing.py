"""How tensors print, character for character as torch's (``torch/_tensor_str.py``'s rules).

``set_printoptions`` / ``get_printoptions``: ``precision``, ``threshold``, ``edgeitems``,
``linewidth`` and ``sci_mode`` (True/False force scientific notation on/off, None lets the
values choose) with torch's defaults and profiles ('default', 'short', 'full'), kept in
:data:`PRINT_OPTIONS` (NumPy's own print options are left alone).

:func:`tensor_repr` is ``Tensor.__repr__``'s text. The rules, as torch applies them:

- One :class:`_Formatter` for the whole tensor (or, past ``threshold`` elements, for the
  ``edgeitems`` shown at each end of every dimension). For floats it looks at the finite
  nonzero values: all integers -> ``int_mode`` (``3.``); scientific notation when the largest
  over the smallest magnitude exceeds 1000, the largest exceeds 1e8 or the smallest is under
  1e-4 (unless ``sci_mode`` decides); every element is right-aligned to the widest.
- Rows wrap at ``linewidth`` (counted from the bracket's indent); summarised dimensions show
  ``...``; dimensions are separated by as many newlines as the dimensions below them.
- Suffixes: ``dtype=`` for a dtype other than the default float, int64 and bool; ``size=`` for
  an empty tensor that is not 1-d (and always when ``edgeitems`` is 0); ``grad_fn=<...>`` or
  ``requires_grad=True``; a suffix goes to a new line when it would pass ``linewidth``.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .core import dtypes as _dtypes

__all__ = ["set_printoptions", "get_printoptions", "PRINT_OPTIONS", "tensor_repr"]

_PROFILES = {"default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
             "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
             "full": dict(precision=4, threshold=np.inf, edgeitems=3, linewidth=80)}
PRINT_OPTIONS = dict(_PROFILES["default"], sci_mode=None)


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None) -> None:
    """torch's print options: ``profile`` ('default', 'short', 'full') first, then each option
    given; ``sci_mode`` True/False/None."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of {', '.join(_PROFILES)}, got {profile!r}")
        PRINT_OPTIONS.update(_PROFILES[profile])
    for name, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                        ("linewidth", linewidth)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or value < 0:
            raise TypeError(f"set_printoptions: {name} must be a non-negative number, got {value!r}")
        PRINT_OPTIONS[name] = value
    if sci_mode is not None and not isinstance(sci_mode, bool):
        raise TypeError(f"set_printoptions: sci_mode must be True, False or None, got {sci_mode!r}")
    PRINT_OPTIONS["sci_mode"] = sci_mode


def get_printoptions() -> dict:
    """The current options (a copy)."""
    return dict(PRINT_OPTIONS)


class _Formatter:
    """Formats every element of one tensor alike (torch's ``_Formatter``): the mode (integer
    valued floats, fixed or scientific) and the width come from ``values``, a NumPy array (the
    whole tensor, or the part of it a summarised print shows)."""

    def __init__(self, values: np.ndarray, precision: int, sci_mode):
        self.precision = precision
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        shown = flat[np.isfinite(flat) & (flat != 0)]
        if shown.size == 0:        # only zeros, nan, inf: torch keeps the defaults (sci_mode ignored)
            return
        magnitude = np.abs(shown).astype(np.float64)
        smallest, largest = magnitude.min(), magnitude.max()
        self.int_mode = bool(np.all(shown == np.ceil(shown)))
        if sci_mode is None:
            self.sci_mode = bool(largest / smallest > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4)
        else:
            self.sci_mode = sci_mode
        numbers_ = shown.tolist()
        if self.sci_mode:
            width = max(len(f"{v:.{precision}e}") for v in numbers_)
        elif self.int_mode:
            width = max(len(f"{v:.0f}") + 1 for v in numbers_)      # + 1: the trailing '.'
        else:
            width = max(len(f"{v:.{precision}f}") for v in numbers_)
        self.max_width = max(self.max_width, width)

    def format(self, value) -> str:
        if self.floating:
            if self.sci_mode:
                text = f"{value:{self.max_width}.{self.precision}e}"
            elif self.int_mode:
                text = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    text += "."
            else:
                text = f"{value:.{self.precision}f}"
        else:
            text = f"{value}"
        return " " * (self.max_width - len(text)) + text


def _summarised(a: np.ndarray, edge: int) -> np.ndarray:
    """The elements a summarised print shows (torch's ``get_summarized_data``): ``edge`` rows
    from each end of every dimension longer than ``2 * edge``."""
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate((a[:edge], a[-edge:])) if a.shape[0] > 2 * edge else a
    if not edge:
        return np.empty((0,) * a.ndim, dtype=a.dtype)
    rows = list(range(edge)) + list(range(a.shape[0] - edge, a.shape[0])) if a.shape[0] > 2 * edge \
        else range(a.shape[0])
    return np.stack([_summarised(a[i], edge) for i in rows])


def _vector(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter, opts: dict) -> str:
    edge = opts["edgeitems"]
    per_line = max(1, math.floor((opts["linewidth"] - indent) / (fmt.max_width + 2)))
    if summarize and not edge:
        items = ["..."]
    elif summarize and a.shape[0] > 2 * edge:
        items = ([fmt.format(v) for v in a[:edge].tolist()] + [" ..."]
                 + [fmt.format(v) for v in a[-edge:].tolist()])
    else:
        items = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter, opts: dict) -> str:
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector(a, indent, summarize, fmt, opts)
    edge = opts["edgeitems"]
    if summarize and a.shape[0] > 2 * edge:
        parts = ([_nested(a[i], indent + 1, summarize, fmt, opts) for i in range(edge)] + ["..."]
                 + [_nested(a[i], indent + 1, summarize, fmt, opts) for i in range(a.shape[0] - edge, a.shape[0])])
    else:
        parts = [_nested(a[i], indent + 1, summarize, fmt, opts) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _values_str(a: np.ndarray, indent: int, opts: dict) -> str:
    """The bracketed values of a non-empty array, as torch's ``_tensor_str``."""
    summarize = a.size > opts["threshold"]
    fmt = _Formatter(_summarised(a, opts["edgeitems"]) if summarize else a, opts["precision"], opts["sci_mode"])
    return _nested(a, indent, summarize, fmt, opts)


def _with_suffixes(text: str, suffixes: list, indent: int, linewidth) -> str:
    """``text`` + ``, suffix`` each, a suffix that would pass ``linewidth`` on a line of its own
    (torch's ``_add_suffixes``, its line-length count included)."""
    out = [text]
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > linewidth:
            out.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            out.append(", " + suffix)
            last_line += len(suffix) + 2
    return "".join(out) + ")"


def tensor_repr(data: np.ndarray, *, prefix: str = "tensor(", grad_fn: str | None = None,
                requires_grad: bool = False) -> str:
    """``repr`` of a tensor holding ``data``, as torch prints it (``prefix`` is ``tensor(``, or
    ``<Subclass>(`` for a Tensor subclass other than Parameter; ``grad_fn`` the node's name)."""
    opts = PRINT_OPTIONS
    indent = len(prefix)
    suffixes = []
    default = _dtypes.default_float()
    name = repr(_dtypes.from_numpy_dtype(data.dtype))
    if data.size == 0:
        if data.ndim != 1:
            suffixes.append(f"size={tuple(data.shape)}")
        if data.dtype != default:
            suffixes.append(f"dtype={name}")
        body = "[]"
    else:
        if not opts["edgeitems"]:
            suffixes.append(f"size={tuple(data.shape)}")
        complex_default = np.dtype(np.complex128 if default == np.float64 else np.complex64)
        if data.dtype not in (default, complex_default, np.dtype(np.int64), np.dtype(np.bool_)):
            suffixes.append(f"dtype={name}")
        body = _values_str(data, indent, opts)
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + body, suffixes, indent, opts["linewidth"])


TENSOR_METHODS: dict = {}
FUNCTIONS = {"set_printoptions": set_printoptions, "get_printoptions": get_printoptions}
