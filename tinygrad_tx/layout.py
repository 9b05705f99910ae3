"""Memory formats (``torch.memory_format``): ``contiguous_format``, ``channels_last``,
``channels_last_3d``, ``preserve_format``.

A memory format is the order in which a tensor's elements lie in memory. ``channels_last`` keeps a
4-D (N, C, H, W) tensor's values where they are but stores them as (N, H, W, C), so its strides are
(H·W·C, 1, W·C, C); ``channels_last_3d`` does the same for 5-D (N, C, D, H, W). The values, shapes
and gradients never change; only ``stride()``, ``is_contiguous(memory_format=...)`` and the speed
of some kernels do. NumPy keeps such a layout through elementwise ops (its default order ``K``), as
torch's do.
"""
from __future__ import annotations

import numpy as np


class memory_format:
    """One of torch's memory formats; compared by identity, printed ``tinygrad_tx.channels_last``."""

    __slots__ = ("_name",)

    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return f"tinygrad_tx.{self._name}"

    def __reduce__(self):
        return self._name   # pickled as the module-level name: unpickling gives the same object


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

_PERMUTATION = {channels_last: (4, (0, 2, 3, 1)), channels_last_3d: (5, (0, 2, 3, 4, 1))}


def check(fmt, op: str):
    """``fmt`` when it is None or a memory format, else torch's TypeError naming ``op``."""
    if fmt is not None and not isinstance(fmt, memory_format):
        raise TypeError(f"{op}(): argument 'memory_format' must be tinygrad_tx.memory_format, not "
                        f"{type(fmt).__name__}")
    return fmt


def _permutation(fmt, ndim: int):
    rank, perm = _PERMUTATION[fmt]
    if ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt._name} format")
    return perm


def is_contiguous(arr: np.ndarray, fmt) -> bool:
    """Whether ``arr``'s strides are those of ``fmt`` (C order for contiguous/preserve); a tensor of
    another rank is not channels_last-contiguous (False, as torch's)."""
    if fmt in _PERMUTATION:
        rank, perm = _PERMUTATION[fmt]
        return arr.ndim == rank and bool(arr.transpose(perm).flags.c_contiguous)
    return bool(arr.flags.c_contiguous)


def has_strides_of(arr: np.ndarray, fmt) -> bool:
    """Whether ``arr`` has exactly ``fmt``'s strides (torch's ``suggest_memory_format``: a tensor
    whose size-1 dims make it contiguous in both formats still has the strides of only one)."""
    if fmt in _PERMUTATION:
        return arr.ndim == _PERMUTATION[fmt][0] and arr.strides == strides_of(arr.shape, fmt, arr.itemsize)
    return bool(arr.flags.c_contiguous)


def laid_out(arr: np.ndarray, fmt, *, copy: bool = False) -> np.ndarray:
    """``arr``'s values in ``fmt``'s layout (``arr`` itself when already so, unless ``copy``);
    ``preserve_format`` keeps the layout of a dense array (NumPy's order K), as torch's clone."""
    if fmt is None or fmt is preserve_format:
        return np.copy(arr, order="K") if copy else arr
    if fmt is contiguous_format:
        return np.array(arr, order="C", copy=True) if copy or not arr.flags.c_contiguous else arr
    perm = _permutation(fmt, arr.ndim)
    if not copy and is_contiguous(arr, fmt) and arr.strides == strides_of(arr.shape, fmt, arr.itemsize):
        return arr
    memory = np.ascontiguousarray(arr.transpose(perm))   # the values in (N, H, W, C) order
    return np.lib.stride_tricks.as_strided(memory, arr.shape, strides_of(arr.shape, fmt, memory.itemsize))


def strides_of(shape, fmt, itemsize: int = 1) -> tuple:
    """torch's strides (in bytes, times ``itemsize``) of ``fmt`` for ``shape``: the channel dim
    innermost, then the last spatial dim outwards; a size-1 (or 0) dim counts as 1, as torch's
    ``get_channels_last_strides`` does (NumPy would leave such a dim's stride arbitrary)."""
    rank, perm = _PERMUTATION[fmt]
    strides = [0] * rank
    step = 1
    for d in reversed(perm):
        strides[d] = step * itemsize
        step *= max(shape[d], 1)
    return tuple(strides)
