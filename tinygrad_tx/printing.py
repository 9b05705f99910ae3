"""``torch.set_printoptions``: how tensors print.

``precision``, ``threshold``, ``edgeitems``, ``linewidth`` and ``sci_mode`` (False: never
scientific notation, NumPy's ``suppress``) with torch's defaults and profiles ('default',
'short', 'full'), kept in :data:`PRINT_OPTIONS` and handed to ``np.array2string`` by
``Tensor.__repr__`` (:func:`array2string_options`): NumPy's own print options are left alone.
"""
from __future__ import annotations

import numbers

import numpy as np

__all__ = ["set_printoptions", "get_printoptions", "PRINT_OPTIONS"]

_PROFILES = {"default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
             "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
             "full": dict(precision=4, threshold=np.inf, edgeitems=3, linewidth=80)}
PRINT_OPTIONS = dict(_PROFILES["default"], sci_mode=None)


def array2string_options() -> dict:
    """``np.array2string`` keywords for the current options (``Tensor.__repr__``)."""
    threshold = PRINT_OPTIONS["threshold"]
    return dict(precision=int(PRINT_OPTIONS["precision"]),
                threshold=np.iinfo(np.int64).max if threshold == np.inf else int(threshold),
                edgeitems=int(PRINT_OPTIONS["edgeitems"]), max_line_width=int(PRINT_OPTIONS["linewidth"]),
                suppress_small=PRINT_OPTIONS["sci_mode"] is False)


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


TENSOR_METHODS: dict = {}
FUNCTIONS = {"set_printoptions": set_printoptions, "get_printoptions": get_printoptions}
