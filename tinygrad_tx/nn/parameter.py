"""``Parameter``: a Tensor that a Module registers as a learnable weight.

Exactly as in torch, a Parameter *is* a Tensor (every op works on it and
produces plain Tensors); the subclass only tells ``Module.__setattr__`` to
register it in ``_parameters`` so that ``parameters()``, ``state_dict()``,
``zero_grad()`` and ``.to(dtype)`` find it.
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import default_float
from ..core.tensor import Tensor


class Parameter(Tensor):
    """A learnable tensor: ``requires_grad=True`` by default, floating dtype.

    ``Parameter(data)`` accepts a NumPy array, a Tensor, or anything ``Tensor``
    accepts (Python floats become float32). Like ``torch.nn.Parameter`` it
    shares memory with an array or Tensor it is built from (no copy) and is
    always a leaf: building one from a non-leaf Tensor detaches it. The one
    exception: memory NumPy marks read-only (``np.broadcast_to``, a read-only
    buffer, ``from_numpy`` of either) is copied, since a parameter is updated in
    place (torch has no read-only tensors; its optimizers would write into it).

    >>> w = Parameter(np.zeros((2, 3)))
    >>> w.requires_grad, w.dtype
    (True, tinygrad_tx.float64)
    """

    __slots__ = ()
    _prints_as_tensor = True      # repr: "Parameter containing:\ntensor(...)", as torch's

    def __init__(self, data=None, requires_grad: bool = True):
        if data is None:
            data = np.empty((0,), dtype=default_float())
        super().__init__(data)
        if not self._data.flags.writeable:
            self._data = np.array(self._data)   # a private, writable, C-contiguous copy
        if self._data.dtype.kind != "f":
            raise TypeError(f"Parameter: only floating point data can be a Parameter, got dtype "
                            f"{self._data.dtype} (shape {self._data.shape}); cast it with .astype(np.float32) "
                            "or register it as a buffer")
        self.requires_grad = requires_grad

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        # copy.deepcopy / pickle: rebuild as a Parameter with its own copy of the data (the
        # memo keeps tied parameters tied), keeping requires_grad and any gradient.
        return (_rebuild_parameter, (self._data, self._requires_grad,
                                     None if self._grad is None else self._grad._data))


def _rebuild_parameter(data, requires_grad, grad):
    p = Parameter(np.array(data, copy=True), requires_grad=requires_grad)
    p.grad = None if grad is None else Tensor(np.array(grad, copy=True))
    return p
