"""``tinygrad_tx.testing``: the kit the project's own tests use, for testing your own ops.

NumPy only (hypothesis is the optional extra ``tinygrad_tx[testing]``, needed by the strategies
alone); the PyTorch side — ``check_parity``, ``check_module_parity``, ``parity_property`` — is
:mod:`reference.testing`.

* comparison: :func:`rel_err`, :func:`assert_close` (relative error ≤ 1e-10 by default),
  :func:`check_f32` (the float32 rule against a float64 oracle), :func:`assert_nontrivial`
  (the vacuous-gradient guard), and the constants ``F64_RTOL``, ``F32_RATIO``, ``F32_FLOOR``;
* finite differences: :func:`gradcheck` (``tinygrad_tx.gradcheck``: the full Jacobian for small
  inputs, random directional derivatives for large ones), :func:`gradgradcheck` (the same check
  of the gradient computed with ``create_graph=True``: second derivatives), :class:`GradcheckError`;
* inputs: :func:`values` (per-op value domains), :func:`non_contiguous` (transposed views);
* hypothesis strategies (:mod:`tinygrad_tx.testing.strategies`): ``seeds``, ``float_dtypes``,
  :func:`shapes`, :func:`broadcastable_pair`, :func:`matmul_shapes`, :func:`dims_and_keepdim`.

Importing this package imports neither torch nor hypothesis and changes no global state.
"""
from __future__ import annotations

from ..gradcheck import GradcheckError, gradcheck, gradgradcheck
from . import strategies
from .compare import F32_FLOOR, F32_RATIO, F64_RTOL, assert_close, assert_nontrivial, check_f32, rel_err
from .strategies import broadcastable_pair, dims_and_keepdim, matmul_shapes, shapes
from .values import DOMAINS, non_contiguous, values

__all__ = ["DOMAINS", "F32_FLOOR", "F32_RATIO", "F64_RTOL", "GradcheckError", "assert_close",
           "assert_nontrivial", "broadcastable_pair", "check_f32", "dims_and_keepdim", "float_dtypes",
           "gradcheck", "gradgradcheck", "matmul_shapes", "non_contiguous", "rel_err", "seeds", "shapes", "strategies",
           "values"]


def __getattr__(name):   # seeds / float_dtypes are hypothesis objects, built on first use
    if name in ("seeds", "float_dtypes"):
        return getattr(strategies, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
