"""``torch.set_printoptions``: how tensors print.

``threshold``, ``edgeitems``, ``linewidth`` and ``sci_mode`` go to NumPy's print options (our
``Tensor.__repr__`` prints with ``np.array2string``), with torch's defaults and profiles
('default', 'short', 'full'). ``sci_mode=False`` never uses scientific notation (NumPy's
``suppress``); True or None leaves NumPy's choice. ``precision`` is kept in :data:`PRINT_OPTIONS`
for ``Tensor.__repr__``, whose 4 digits it replaces once the repr reads it.
"""
from __future__ import annotations

import numbers

import numpy as np

__all__ = ["set_printoptions", "get_printoptions", "PRINT_OPTIONS"]

_PROFILES = {"default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
             "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
             "full": dict(precision=4, threshold=np.inf, edgeitems=3, linewidth=80)}
PRINT_OPTIONS = dict(_PROFILES["default"], sci_mode=None)


def _apply() -> None:
    threshold = PRINT_OPTIONS["threshold"]
    np.set_printoptions(threshold=int(min(threshold, np.iinfo(np.int64).max)) if threshold != np.inf
                        else np.iinfo(np.int64).max,
                        edgeitems=int(PRINT_OPTIONS["edgeitems"]), linewidth=int(PRINT_OPTIONS["linewidth"]),
                        suppress=PRINT_OPTIONS["sci_mode"] is False)


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
    _apply()


def get_printoptions() -> dict:
    """The current options (a copy)."""
    return dict(PRINT_OPTIONS)


TENSOR_METHODS: dict = {}
FUNCTIONS = {"set_printoptions": set_printoptions, "get_printoptions": get_printoptions}
