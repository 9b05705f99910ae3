"""The one place where the gradient terms arriving at a tensor are summed: :func:`add_term`.

A tensor used k times receives k gradient terms, one from each consumer's backward; the engine
adds them up before the tensor's own producer runs its backward (or, for a leaf, before ``.grad``).
Plainly that is ``total = total + term``. Two refinements, both for speed:

* **A slice's gradient stays small** (:class:`SliceGrad`). The gradient of ``y = x[index]`` is
  zeros of x's shape with g at ``index``. A model that reads a sequence one step at a time
  (``x[:, t]``, ``x.unbind(1)``, ``split``, ``chunk``, every recurrent layer) makes T such
  terms; written out densely each costs a full-size array and a full-size addition:
  O(T · x.size) for what is O(x.size) of work. So indexing's backward returns (index, g) and
  the sum adds g into place: ``buf[index] += g``.
  Measured (``python -m bench.rnn_ratio``, 1 thread, 2 cores at load 6.5), forward+backward,
  batch 32, hidden 64, T = 256: nn.RNN 1152 -> 127 ms (torch ~50 ms), nn.LSTM 4036 -> 511 ms.
* **The sum is added in place, into a buffer the engine owns** (:class:`Sum`). A term may be an
  alias of an array someone else holds (a backward can return g itself, or a saved array), so the
  first term is kept as it came and never written to; when a second arrives the engine allocates
  the sum, and every later term is added into that buffer.

:func:`dense` gives the ordinary array, which is what everything past the sum sees: the next
backward, hooks, ``retain_grad``, ``.grad`` and ``autograd.grad``. With ``create_graph=True`` the
terms are Tensors and are added out of place (the sum is recorded); indexing's backward then
writes its dense, recorded form.
"""
from __future__ import annotations

import numpy as np


class SliceGrad:
    """The gradient of x from ``y = x[index]`` with dL/dy = ``values``: zeros of ``shape`` with
    ``values`` at ``index``, kept as that (index, values) pair until it is added into a sum.
    ``advanced``: an integer-array index may repeat an element, and each use adds (np.add.at);
    a basic index (ints, slices, None, Ellipsis) selects each element at most once."""

    __slots__ = ("shape", "index", "values", "advanced")

    def __init__(self, shape, index, values, advanced):
        self.shape, self.index, self.values, self.advanced = tuple(shape), index, values, advanced

    @property
    def dtype(self):
        return self.values.dtype

    def add_into(self, buf: np.ndarray) -> np.ndarray:
        """``buf[index] += values`` in place (``buf`` is the engine's own); returns ``buf``."""
        if self.advanced:
            np.add.at(buf, self.index, self.values)
        else:
            buf[self.index] += self.values
        return buf

    def dense(self) -> np.ndarray:
        return self.add_into(np.zeros(self.shape, self.dtype))

    def __array__(self, dtype=None, copy=None):
        out = self.dense()
        return out if dtype is None else out.astype(dtype, copy=False)


class Sum:
    """Two or more gradient terms summed in ``array``, a buffer the engine allocated: later
    terms are added into it in place."""

    __slots__ = ("array",)

    def __init__(self, first, second):
        dense_terms = [t for t in (first, second) if type(t) is not SliceGrad]
        if len(dense_terms) == 2:
            self.array = np.asarray(first + second)   # a new array (np.asarray: a 0-d sum is a scalar)
        elif dense_terms:
            dtype = np.result_type(first.dtype, second.dtype)
            self.array = np.array(dense_terms[0], dtype=dtype, copy=True)
        else:
            self.array = np.zeros(first.shape, np.result_type(first.dtype, second.dtype))
        for term in (first, second):
            if type(term) is SliceGrad:
                term.add_into(self.array)

    def add(self, term) -> None:
        if type(term) is SliceGrad:
            term.add_into(self.array)
        else:
            self.array += term


_ARRAY_TERMS = (np.ndarray, np.generic, SliceGrad)


def add_term(total, term):
    """``total + term`` for a gradient being summed: ``total`` is the first term as it came, or a
    :class:`Sum`. Tensors (create_graph) and a multi-output custom node's lists of (output,
    gradient) pairs are added out of place, as ``+``."""
    if type(total) is Sum:
        total.add(term)
        return total
    if isinstance(total, _ARRAY_TERMS) and isinstance(term, _ARRAY_TERMS):
        return Sum(total, term)
    return dense(total) + dense(term)


def dense(total):
    """The ordinary array (or Tensor) of a gradient: a :class:`SliceGrad` written out, a
    :class:`Sum`'s buffer, anything else as it is."""
    if type(total) is Sum:
        return total.array
    if type(total) is SliceGrad:
        return total.dense()
    return total
