"""The project's comparison rule, NumPy only: ``rel_err``, ``assert_close``, the float32 rule and
the vacuous-gradient guard.

* float64: relative error ``max |actual − expected| / max |expected|`` ≤ ``F64_RTOL`` (1e-10).
  One scale per array (its largest entry), not per element: an element-wise relative error
  would fail on entries that are rounding noise next to large ones.
* float32: there is no fixed tolerance. A float64 computation on the same (float32-rounded)
  inputs is the oracle; our float32 error against it may be at most ``F32_RATIO`` (4) times the
  reference float32 implementation's own error against it, plus ``F32_FLOOR`` (8 float32 ulps,
  for results the reference gets exactly). See :func:`check_f32`.
* float32, ill-conditioned results: where the float64 oracle itself moves when every input is
  perturbed by up to one float32 ulp (``cond``: a one-element sum of cancelling terms, a lerp whose
  result is near 0), that movement is the error any backward-stable float32 algorithm may make,
  and the reference's error can be far smaller only by the luck of its summation order. Such a
  result is also allowed ``F32_RATIO`` times ``cond``. The caller measures ``cond`` from a smooth
  response only (a result at a discontinuity — a tie, a floor, a sign — has none), see
  ``reference.testing._conditioning``.
* float32, heavy-tailed errors: where both rules fail, ``reference.testing`` applies
  :func:`check_f32` to the median errors, ours and the reference's, over the drawn problem and
  eight neighbouring problems (inputs moved by up to two float32 ulps).
"""
from __future__ import annotations

import numpy as np

F64_RTOL = 1e-10
F32_RATIO = 4.0
F32_FLOOR = 8 * np.finfo(np.float32).eps


def _array(x) -> np.ndarray:
    """A float64 NumPy copy of an array, a tinygrad_tx Tensor or a number."""
    data = getattr(x, "_data", None)       # a tinygrad_tx Tensor, without importing tinygrad_tx here
    return np.asarray(x if data is None else data, dtype=np.float64)


def _dtype_name(dt) -> str:
    """'float32' for a NumPy, tinygrad_tx or torch float32 dtype."""
    try:
        return np.dtype(dt).name
    except TypeError:
        return str(dt).rsplit(".", 1)[-1]


def rel_err(ours, ref) -> float:
    """max |ours − ref| / max |ref| over the finite entries of ``ref`` (0 when both are zero).

    Non-finite entries must agree exactly (same inf sign, nan where ``ref`` is nan), else the
    error is inf. A shape mismatch is an AssertionError naming both shapes.
    """
    ours, ref = _array(ours), _array(ref)
    if ours.shape != ref.shape:
        raise AssertionError(f"shape mismatch: ours {tuple(ours.shape)} vs reference {tuple(ref.shape)}")
    finite = np.isfinite(ref)
    if not np.array_equal(np.isfinite(ours), finite) or \
            not np.array_equal(ours[~finite], ref[~finite], equal_nan=True):
        return float("inf")
    if not finite.any():
        return 0.0
    diff = np.max(np.abs(ours[finite] - ref[finite]), initial=0.0)
    scale = np.max(np.abs(ref[finite]), initial=0.0)
    if scale == 0.0:
        return float(diff)
    return float(diff / scale)


def assert_close(actual, expected, *, rtol: float = F64_RTOL, name: str = "value", check_dtype: bool = True):
    """Raise AssertionError unless ``rel_err(actual, expected) <= rtol`` (shapes equal, and the
    dtypes equal when both have one and ``check_dtype``). Returns the error measured."""
    if rtol < 0:
        raise ValueError(f"assert_close: rtol must be >= 0, got {rtol!r}")
    a_dt, e_dt = getattr(actual, "dtype", None), getattr(expected, "dtype", None)
    if check_dtype and a_dt is not None and e_dt is not None and _dtype_name(a_dt) != _dtype_name(e_dt):
        raise AssertionError(f"{name}: dtype {_dtype_name(a_dt)} vs expected {_dtype_name(e_dt)}")
    try:
        e = rel_err(actual, expected)
    except AssertionError as exc:
        raise AssertionError(f"{name}: {exc}") from None
    if not e <= rtol:
        raise AssertionError(f"{name}: relative error {e:.3g} > {rtol:g} "
                             "(max |actual - expected| / max |expected|)")
    return e


def check_f32(label: str, ours_err: float, ref_err: float, *, cond: float = 0.0, ratio: float = F32_RATIO,
              floor: float = F32_FLOOR):
    """The float32 rule: our error against the float64 oracle within ``ratio`` × the reference
    float32 error against the same oracle, plus ``floor``; AssertionError naming ``label``.

    ``cond``: the oracle's own relative change when its inputs move by up to one float32 ulp
    (:func:`reference.testing.check_parity` measures it); the yardstick is then
    ``max(ref_err, cond)``: a backward-stable float32 result may be off by that much."""
    yardstick = max(ref_err, cond)
    if not ours_err <= ratio * yardstick + floor:
        extra = f", conditioning {cond:.3g}" if cond > ref_err else ""
        raise AssertionError(f"{label} float32: our error {ours_err:.3g} vs the reference float32's "
                             f"{ref_err:.3g}{extra} (allowed {ratio:g}x + {floor:.2g})")


def assert_nontrivial(grad, name: str = "gradient"):
    """The vacuous-gradient guard: a reference gradient that is all zero cannot tell a right
    backward from a wrong one, so a test that relies on it is refused."""
    if not np.any(_array(grad) != 0):
        raise AssertionError(f"{name}: the reference gradient is all zero: the test is blind "
                             "(draw other inputs or a random cotangent, or allow it explicitly)")
