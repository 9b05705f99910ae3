"""``F.interpolate`` (and ``F.upsample``, ``upsample_nearest``, ``upsample_bilinear``): resize the
spatial dimensions of an (N, C, d1[, d2[, d3]]) input.

Every mode but 'area' is **separable and linear**: along each spatial axis of length n resized to
m, output index i reads the input through one row of an (m, n) matrix A,

    y = A_1 ⊗ ... ⊗ A_k · x        (A_k applied to axis k; the last axis first, as torch's kernel)

* 'nearest':        A[i, s] = 1 for s = min(⌊i · scale⌋, n − 1) (on a 4-D input an axis of
                    unchanged size is copied and a doubled one reads i >> 1, as torch's 2-D kernel)
* 'nearest-exact':  A[i, s] = 1 for s = min(⌊(i + ½) · scale⌋, n − 1)
* 'linear' / 'bilinear' / 'trilinear': src = scale · i (``align_corners``) or
  max(scale · (i + ½) − ½, 0); s0 = ⌊src⌋, s1 = min(s0 + 1, n − 1), λ = src − s0:
  A[i, s0] += 1 − λ, A[i, s1] += λ; an axis whose size does not change is copied (A = I, whatever
  the scale factor — torch's kernel does so; its nearest modes do not)

with torch's scale: (n − 1)/(m − 1) with ``align_corners``, else 1/scale_factor when a scale
factor was given (and ``recompute_scale_factor`` is not True), else n/m — computed as torch does,
in float32 for the nearest modes, in the input's precision for the linear ones.

**Backward.** The map is linear, so its Jacobian is itself: dL/dx = A_kᵀ ⊗ ... ⊗ A_1ᵀ · g — the
transposes applied in the reverse order (a nearest pixel read by several outputs collects all
their gradients; a linear one receives (1 − λ)·g and λ·g from each output it weights).

A row of A has at most two nonzero weights, so y computed through A is the two-term sum torch
computes (the zeros add nothing — for finite inputs; an inf or nan input spreads along its row).
'area' is ``adaptive_avg_pool1d/2d``, as in torch.
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from ..core.function import ArrayFunction
from ..core.tensor import Tensor
from ._util import as_tensor

__all__ = ["Resample", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle",
           "pixel_unshuffle"]

_LINEAR = {"linear": 3, "bilinear": 4, "trilinear": 5}
_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "trilinear", "area", "bicubic")


def _apply(x: np.ndarray, mats, transpose: bool = False) -> np.ndarray:
    """A_k applied along spatial axis k (last axis first), or the transposes in reverse order."""
    k = len(mats)
    order = range(k) if transpose else reversed(range(k))
    for j in order:
        axis = x.ndim - k + j
        a = mats[j].T if transpose else mats[j]
        x = np.moveaxis(np.tensordot(x, a, axes=([axis], [1])), -1, axis)
    return x


def _contiguous(a):
    """An array in C order (tensordot leaves the resized axis last in memory); a Tensor (the
    backward being differentiated) as it is: ``np.ascontiguousarray`` would take its values out
    of the graph."""
    return a if isinstance(a, Tensor) else np.ascontiguousarray(a)


class Resample(ArrayFunction):
    """y = ⊗ A_k · x along the spatial axes; dL/dx = ⊗ A_kᵀ · g (see the module docstring).
    The backward is the same products (``np.tensordot``, an einsum on Tensors): it runs on
    Tensors and differentiates again (linear in g; the matrices are constants)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, *, mats):
        ctx.mats = mats
        return np.ascontiguousarray(_apply(x, mats)).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        return _contiguous(np.astype(_apply(g, ctx.mats, transpose=True), np.result_type(g), copy=False))


def _nearest_matrix(n: int, m: int, scale, exact: bool, shortcut: bool, dtype) -> np.ndarray:
    """torch's ``nearest_idx`` / ``nearest_neighbor_exact_compute_source_index`` (float32 math);
    ``shortcut``: its 2-D kernel copies an axis of unchanged size and reads i >> 1 for a doubled
    one, whatever the scale factor (its 1-D and 3-D kernels use the formula throughout)."""
    if shortcut and m in (n, 2 * n):
        src = np.arange(m) if m == n else np.arange(m) >> 1
        a = np.zeros((m, n), dtype=dtype)
        a[np.arange(m), src] = 1
        return a
    s = np.float32(1.0 / scale) if scale is not None else np.float32(n) / np.float32(m)
    i = np.arange(m, dtype=np.float32)
    src = np.minimum(np.floor(((i + np.float32(0.5)) if exact else i) * s).astype(np.int64), n - 1)
    a = np.zeros((m, n), dtype=dtype)
    a[np.arange(m), src] = 1
    return a


def _linear_matrix(n: int, m: int, scale, align_corners: bool, dtype) -> np.ndarray:
    """torch's ``area_pixel_compute_scale`` / ``area_pixel_compute_source_index`` and linear
    weights, computed in the input's precision (torch's opmath type on the cpu)."""
    ft = np.dtype(dtype).type
    if m == n:                         # torch copies an axis whose size does not change (any scale)
        return np.eye(n, dtype=dtype)
    if align_corners:
        s = ft(n - 1) / ft(m - 1) if m > 1 else ft(0)
        src = s * np.arange(m, dtype=dtype)
    else:
        s = ft(1.0 / scale) if scale is not None else ft(n) / ft(m)
        src = np.maximum(s * (np.arange(m, dtype=dtype) + ft(0.5)) - ft(0.5), ft(0))
    s0 = src.astype(np.int64)
    s1 = s0 + (s0 < n - 1)
    lam1 = np.clip(src - s0.astype(dtype), 0, 1).astype(dtype)
    lam0 = (ft(1) - lam1).astype(dtype)
    a = np.zeros((m, n), dtype=dtype)
    np.add.at(a, (np.arange(m), s0), lam0)
    np.add.at(a, (np.arange(m), s1), lam1)
    return a


def _spatial(value, k: int, name: str, kind):
    """An int/float or a sequence of k of them (one per spatial dimension)."""
    if isinstance(value, (list, tuple)):
        if len(value) != k:
            raise ValueError(f"interpolate: Input and output must have the same number of spatial dimensions, "
                             f"but got input with {k} spatial dimension(s) and {name}={tuple(value)!r}")
        values = list(value)
    else:
        values = [value] * k
    for v in values:
        if isinstance(v, bool) or not isinstance(v, kind):
            raise TypeError(f"interpolate: {name} must be {'an int' if kind is numbers.Integral else 'a number'} "
                            f"or a sequence of them, got {value!r}")
    return values


def interpolate(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                recompute_scale_factor=None, antialias: bool = False) -> Tensor:
    """``torch.nn.functional.interpolate`` for 3-D, 4-D and 5-D inputs (N, C, spatial...):
    'nearest', 'nearest-exact', 'linear' (3-D), 'bilinear' (4-D), 'trilinear' (5-D), 'area'
    (3-D/4-D). Give ``size`` or ``scale_factor`` (one per spatial dimension, or one for all)."""
    x = as_tensor(input, "interpolate", "input")
    if mode not in _MODES:
        raise NotImplementedError(f"interpolate: mode={mode!r} is not one of {', '.join(_MODES[:-1])}")
    if mode in ("nearest", "nearest-exact", "area"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    if not isinstance(align_corners, (bool, type(None))):
        raise TypeError(f"interpolate: align_corners must be a bool or None, got {align_corners!r}")
    if antialias:
        raise NotImplementedError(f"interpolate: antialias=True is not implemented (mode={mode!r})")
    if x.ndim not in (3, 4, 5):
        raise NotImplementedError(f"interpolate: Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                                  f"{x.ndim}D) for the modes: nearest | linear | bilinear | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if mode in _LINEAR and x.ndim != _LINEAR[mode]:
        raise NotImplementedError(f"Got {x.ndim}D input, but {mode} mode needs {_LINEAR[mode]}D input")
    if mode == "bicubic":
        raise NotImplementedError("interpolate: mode='bicubic' is not implemented; use 'bilinear' or 'nearest'")
    if x._data.dtype.kind != "f":
        raise TypeError(f"interpolate: input must be a floating point tensor, got dtype {x._data.dtype}")
    k = x.ndim - 2
    in_sizes = list(x.shape[2:])
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        out_sizes = [int(s) for s in _spatial(size, k, "size", numbers.Integral)]
        scales = [None] * k
    else:
        factors = [float(f) for f in _spatial(scale_factor, k, "scale_factor", numbers.Real)]
        out_sizes = [int(math.floor(n * f)) for n, f in zip(in_sizes, factors)]
        scales = [None] * k if recompute_scale_factor else factors
    for n, m in zip(in_sizes, out_sizes):
        if n <= 0 or m <= 0:
            raise RuntimeError(f"interpolate: Input and output sizes should be greater than 0, but got input "
                               f"{tuple(in_sizes)} and output {tuple(out_sizes)}")
    if mode == "area":
        from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d
        if k == 3:
            raise NotImplementedError("interpolate: mode='area' on a 5-D input is not implemented")
        return (adaptive_avg_pool1d if k == 1 else adaptive_avg_pool2d)(x, out_sizes[0] if k == 1 else out_sizes)
    dt = x._data.dtype
    if mode in _LINEAR:
        mats = tuple(_linear_matrix(n, m, s, align_corners, dt) for n, m, s in zip(in_sizes, out_sizes, scales))
    else:
        shortcut = k == 2 and mode == "nearest"
        mats = tuple(_nearest_matrix(n, m, s, mode == "nearest-exact", shortcut, dt)
                     for n, m, s in zip(in_sizes, out_sizes, scales))
    return Resample.apply(x, mats=mats)


def upsample(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None) -> Tensor:
    """``F.upsample``: deprecated in torch in favour of ``interpolate`` (same warning)."""
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.",
                  UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None) -> Tensor:
    """``F.upsample_nearest``: ``interpolate(mode='nearest')`` (deprecated in torch, same warning)."""
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use nn.functional.interpolate instead.",
                  UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None) -> Tensor:
    """``F.upsample_bilinear``: ``interpolate(mode='bilinear', align_corners=True)`` (deprecated in
    torch, same warning)."""
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use nn.functional.interpolate instead.",
                  UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def _factor(value, op: str, arg: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{op}: {arg} must be a positive int, got {value!r}")
    return int(value)


def pixel_shuffle(input, upscale_factor: int) -> Tensor:
    """``F.pixel_shuffle``: (*, C·r², H, W) → (*, C, H·r, W·r), out[c, h·r + i, w·r + j] =
    in[c·r² + i·r + j, h, w]. A composite of ``reshape`` and ``permute`` (a permutation of the
    elements: its gradient is the inverse permutation of g, through those ops' backwards)."""
    x = as_tensor(input, "pixel_shuffle", "input")
    r = _factor(upscale_factor, "pixel_shuffle", "upscale_factor")
    if x.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{x.ndim} dimension(s)")
    *batch, c, h, w = x.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                           f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    nb = len(batch)
    y = x.reshape(*batch, c // (r * r), r, r, h, w)
    y = y.permute(*range(nb), nb, nb + 3, nb + 1, nb + 4, nb + 2)
    return y.reshape(*batch, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor: int) -> Tensor:
    """``F.pixel_unshuffle``, the inverse of :func:`pixel_shuffle`: (*, C, H·r, W·r) → (*, C·r², H, W)."""
    x = as_tensor(input, "pixel_unshuffle", "input")
    r = _factor(downscale_factor, "pixel_unshuffle", "downscale_factor")
    if x.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{x.ndim} dimension(s)")
    *batch, c, h, w = x.shape
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by downscale_factor, but "
                           f"got height={h}, width={w} and downscale_factor={r}")
    nb = len(batch)
    y = x.reshape(*batch, c, h // r, r, w // r, r)
    y = y.permute(*range(nb), nb, nb + 2, nb + 4, nb + 1, nb + 3)
    return y.reshape(*batch, c * r * r, h // r, w // r)
