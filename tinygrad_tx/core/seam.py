"""The core's one seam: the slots through which the rings outside the core plug into it.

The core imports nothing from the rest of the package; a ring that must see or change what the
core does sets a slot here, and the core calls the slot. There are four:

* ``recorder``: None except while ``tinygrad_tx.compile`` records a call; then that call's recorder,
  which the core (``apply``, ``run_backward``, tensor creation, value reads, in-place edits) and the
  rings (through the functions below) tell what they do: one ``recorder is not None`` test each.
* ``legacy_constructor``: ``Tensor(2, 3)``, ``Tensor([1, 2])``, ``Tensor(t)``, ``Tensor()`` --
  torch's legacy constructor forms, which need the op library (``legacy.py`` installs it);
* ``node_name``: the name torch gives a graph node where it differs from ``<op>Backward0``
  (``x[0]`` is ``SelectBackward0``): ``autograd/node_names.py`` installs it;
* ``copy_array``: how the engine copies a gradient into a leaf's ``.grad`` -- plainly
  ``np.array(x, dtype, order="C")``; the speed ring (``buffers.py``) installs a tiled copy for
  transposed sources.
"""
import functools
import inspect

import numpy as np

recorder = None
node_name = None


def copy_array(x, dtype) -> np.ndarray:
    """A fresh C-ordered copy of ``x`` in ``dtype`` (replaced by ``buffers.copy_fresh``)."""
    return np.array(x, dtype=dtype, order="C", copy=True)


def legacy_constructor(self, data, sizes, requires_grad, dtype, device) -> None:
    """``Tensor(...)`` with sizes or non-NumPy data (replaced by ``legacy.tensor_constructor``)."""
    raise TypeError(f"Tensor{(data, *sizes)!r}: the legacy constructor forms need the full package "
                    "(import tinygrad_tx)")


# What the core's Tensor tells the recorder: a tensor made outside a Function, a size read into
# Python (a size that depends on values is guarded), ``t.grad = value``, an in-place change.

def created(t, data, dtype) -> None:
    if recorder is not None:
        recorder.created(t, data, dtype)


def shape_read(t) -> None:
    if recorder is not None:
        recorder.shape_read(t)


def grad_set(t, value) -> None:
    if recorder is not None:
        recorder.grad_set(t, value)


def bump(t) -> None:
    if recorder is not None:
        recorder.bump(t)


def call(fn, *args):
    """``fn(*args)``: an array computation the library makes outside a Function (a comparison's
    mask), recorded while a call is recorded so that the replay repeats it."""
    return fn(*args) if recorder is None else recorder.rerun(fn, *args)


def read(t, what: str, values: bool = True) -> None:
    """Library code is about to read tensor ``t``'s values into Python (``allclose``'s bool, a
    one-element tensor used as a number): while a call is recorded, the recorder guards or refuses
    it, as it does ``t.item()``."""
    if recorder is not None and hasattr(t, "_data"):
        recorder.readout(t, what, values=values)


def replayed(fn):
    """Decorator of a library function whose work a replay must redo at each call (a check of the
    inputs' values, a dropout mask's draw): while tinygrad_tx.compile records, the call is
    recorded as a call; otherwise it is just ``fn(...)``."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def run(*args, **kwargs):
        if recorder is None:
            return fn(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return recorder.rerun(fn, *bound.args)
    return run


# What the rings outside the core tell the recorder (no-ops unless tinygrad_tx.compile records):

def method_called(obj, method: str, arg) -> None:
    """An optimizer's ``step``/``zero_grad``, a module's ``zero_grad``: recorded as one call."""
    if recorder is not None:
        recorder.call(obj, method, arg)


def module_called(module) -> None:
    """A module is called: the replay guards on its training flag."""
    if recorder is not None:
        recorder.module_called(module)


def unsupported(what: str) -> None:
    """Something a replay cannot repeat (a random stream reset inside the function): refused."""
    if recorder is not None:
        recorder.unsupported(what)
