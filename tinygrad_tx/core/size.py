"""``Size``: a tensor's shape, as ``torch.Size`` — a tuple of ints with ``numel()``.

``t.shape`` and ``t.size()`` return one; it equals the plain tuple of the same ints, so
``t.shape == (2, 3)`` and ``t.shape == tinygrad_tx.Size([2, 3])`` both hold, and it goes
wherever NumPy takes a shape. It prints as torch's does (``print(t.shape)``, ``str``,
f-strings and ``repr`` alike): ``tinygrad_tx.Size([2, 3])``.
"""
from __future__ import annotations

import operator

__all__ = ["Size"]


class Size(tuple):
    """``Size(iterable_of_ints)``: torch.Size's constructor, indexing, ``+`` and ``numel()``."""

    __slots__ = ()

    def __new__(cls, sizes=()):
        if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__iter__"):
            raise TypeError(f"Size(): argument must be an iterable of ints, got {type(sizes).__name__} ({sizes!r})")
        items = []
        for n in sizes:
            if not hasattr(n, "__index__"):
                raise TypeError(f"Size(): every size must be an int, got {type(n).__name__} ({n!r}) in {sizes!r}")
            items.append(operator.index(n))
        return tuple.__new__(cls, items)

    def numel(self) -> int:
        """The number of elements of a tensor of this shape (1 for ``Size([])``)."""
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, index):
        item = tuple.__getitem__(self, index)
        return tuple.__new__(Size, item) if isinstance(index, slice) else item

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(self, other))

    def __mul__(self, n):
        return tuple.__new__(Size, tuple.__mul__(self, n))

    __rmul__ = __mul__

    def __repr__(self):
        return f"tinygrad_tx.Size({list(self)})"

    __str__ = __repr__     # torch.Size prints the same way in print(), str() and f-strings

    def __reduce__(self):
        return (Size, (tuple(self),))


def of(shape) -> Size:
    """A NumPy shape (a tuple of ints, checked already) as a ``Size``, without re-checking it."""
    return tuple.__new__(Size, shape)
