"""Parameters whose values are views into one contiguous buffer, for fused optimizer steps.

A step that updates every parameter separately costs a dozen NumPy calls per parameter:
for the small GPT (28 parameters, 27k numbers) that is ~340 calls of ~2 us, most of the
step. With all values in one flat buffer the same arithmetic is a dozen calls in total.
"""
from __future__ import annotations

import sys
import weakref

import numpy as np

from ..core.tensor import Tensor


class FlatParameters:
    """``FlatParameters(params)`` copies the values of ``params`` (one floating dtype, distinct
    Tensors) into one 1-D buffer ``data`` and rebinds every ``p._data`` to a view of its
    segment (same shape and values): updating ``data`` in place updates every parameter.

    Code that held a parameter's *previous* array would no longer see the updates;
    :meth:`movable` says when nothing does. ``valid()`` says whether every parameter still
    uses its view (``module.to(float64)`` or an assignment to ``p._data`` replaces it).
    Gradients stay ordinary per-parameter arrays, fresh at every backward as in torch;
    :meth:`gather` copies them into one flat array for the update.
    """

    _buffers = weakref.WeakValueDictionary()   # id -> every live ``data`` buffer made here
    _sole_refcount = None                      # sys.getrefcount(t._data) of an array held by t alone

    def __init__(self, params):
        self.params = list(params)
        problem = self._layout_problem(self.params)
        if problem is not None:
            error, reason = problem
            raise error(f"FlatParameters: {reason}")
        dtype = self.params[0]._data.dtype
        self.offsets = [0]
        for p in self.params:
            self.offsets.append(self.offsets[-1] + p._data.size)
        self.data = np.empty(self.offsets[-1], dtype=dtype)
        FlatParameters._buffers[id(self.data)] = self.data
        self.views = []
        for i, p in enumerate(self.params):
            view = self.segment(self.data, i, p._data.shape)
            view[...] = p._data
            p._data = view
            self.views.append(view)

    def segment(self, buffer: np.ndarray, i: int, shape=None) -> np.ndarray:
        """Parameter ``i``'s part of a flat ``buffer`` (as long as ``data``), in its shape."""
        part = buffer[self.offsets[i]:self.offsets[i + 1]]
        return part.reshape(self.views[i].shape if shape is None else shape)

    def valid(self) -> bool:
        return all(p._data is v for p, v in zip(self.params, self.views))

    def gather(self, grads) -> np.ndarray:
        """One flat array of the per-parameter arrays ``grads`` (in ``params`` order)."""
        return np.concatenate([g.reshape(-1) for g in grads])

    def release(self) -> None:
        """Forget the views (the values stay where they are), so the parameters may move again."""
        self.views = []

    @staticmethod
    def _layout_problem(params):
        """(exception class, reason) when ``params`` cannot share one buffer at all, else None."""
        dtypes = {p._data.dtype for p in params}
        if len(dtypes) != 1 or next(iter(dtypes)).kind != "f":
            return TypeError, f"the parameters must have one floating dtype, got {sorted(str(d) for d in dtypes)}"
        if len({id(p) for p in params}) != len(params):
            return ValueError, "the same parameter appears twice"
        return None

    @classmethod
    def movable(cls, params):
        """None when flattening ``params`` changes nothing that the rest of the program can see,
        else the reason why not.

        Rebinding ``p._data`` is invisible when that array is referenced by ``p`` alone: no
        other Tensor shares it (tied weights made of two Tensors), no view of it exists, no
        variable holds it (``sys.getrefcount`` counts all of those) -- and it is not itself a
        view into someone else's array (only into a buffer made here).
        """
        problem = cls._layout_problem(params)
        if problem is not None:
            return problem[1]
        if cls._sole_refcount is None:
            probe = Tensor(np.empty(1))
            cls._sole_refcount = sys.getrefcount(probe._data)
        for i, p in enumerate(params):
            if not p._data.flags.writeable:   # the per-parameter step refuses it (ReadOnlyParameterError)
                return f"parameter {i} (shape {p._data.shape}) is read-only"
            base = p._data.base
            if base is not None and cls._buffers.get(id(base)) is not base:
                return f"parameter {i} (shape {p._data.shape}) is a view of another array"
            if sys.getrefcount(p._data) > cls._sole_refcount:
                return (f"the array of parameter {i} (shape {p._data.shape}) is also referenced elsewhere "
                        "(another Tensor, a view of it, or a variable), which would stop seeing the updates")
        return None
