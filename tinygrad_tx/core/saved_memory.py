"""Bytes of arrays held by graph nodes for their backward (read by the benchmark)."""
from __future__ import annotations

import numpy as np

class _SavedMemory:
    """Bytes of arrays currently held by graph nodes for their backward.

    ``save_for_backward`` adds the bytes it is given; they are released when the
    node's backward has run (or the graph is garbage-collected). ``peak`` is the
    high-water mark since the last :meth:`reset_peak`. The benchmark reads it to
    compare the activation memory of two implementations of the same op.
    Arrays that are views of one another are counted once per save call by their
    base buffer. (One instance, ``SavedMemory``: updating an instance's slots is
    cheaper than assigning class attributes, which every op does twice.)
    """

    __slots__ = ("current", "peak")

    def __init__(self):
        self.current = 0
        self.peak = 0

    def reset_peak(self):
        self.peak = self.current


SavedMemory = _SavedMemory()


def _nbytes(arrays):
    """Bytes of the distinct base buffers behind ``arrays`` (non-arrays skipped): views of
    one buffer count once. A list scan, not a dict: a save holds a handful of arrays."""
    bases = []
    for a in arrays:
        if isinstance(a, np.ndarray):
            b = a.base
            while isinstance(b, np.ndarray):
                a, b = b, b.base
            for seen in bases:
                if seen is a:
                    break
            else:
                bases.append(a)
    return sum([b.nbytes for b in bases])
