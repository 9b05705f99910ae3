"""Version counters and views: how an in-place change to a saved array is caught.

When a node saves arrays, ``ArrayFunction.apply`` records, for each saved array that is (a view of)
an input's or the output's memory, that tensor's version counter and its value
(:func:`_saved_versions`). Every in-place write bumps the counter (``ops/inplace.py``, the
optimizers, ``nn.init``, ``load_state_dict``); reading ``ctx.saved_tensors`` in backward compares
the values and raises torch's "modified by an inplace operation" error on a change
(:func:`_check_saved`), so a stale saved value never becomes a gradient. An output whose array
shares an input's memory is a view: it shares the input's version counter (:func:`_link_view`).

A learner reading the engine can skip this file: it changes no gradient, it only refuses to
compute one from a value that is no longer there.
"""
from __future__ import annotations

import numpy as np
from .tensor import Tensor, _View

def _root(a: np.ndarray) -> np.ndarray:
    """The array that owns ``a``'s memory (``a`` itself when it owns it). NumPy points a view's
    ``base`` at the owner already, so this is one step but for views built on foreign buffers
    and NumPy's strided views (``as_strided``, ``sliding_window_view``: their base is a helper
    object whose own ``base`` is the array)."""
    b = a.base   # most arrays own their memory or view an owner: answered without a walk
    if b is None or (type(b) is np.ndarray and b.base is None):
        return a if b is None else b
    root, b = a, _array_base(a)
    while b is not None:   # (None at once: a wraps a foreign buffer, memoryview or bytes)
        root, b = b, _array_base(b)
    return root


def _array_base(a):
    """``a.base`` when it is an array (through NumPy's ``as_strided`` helper object), else None."""
    b = a.base
    if b is not None and not isinstance(b, np.ndarray):
        b = getattr(b, "base", None) if type(b).__name__ == "DummyArray" else None
    return b if isinstance(b, np.ndarray) else None


def _tensor_roots(args, arrays) -> list:
    """``(position, tensor, root array)`` for each Tensor argument (computed once per op, shared
    by the view link and the saved-array records)."""
    return [(pos, a, _root(arr)) for pos, (a, arr) in enumerate(zip(args, arrays)) if isinstance(a, Tensor)]


def _link_view(t, fn, args, roots, kwargs) -> None:
    """``t``'s array shares memory with a Tensor input's: ``t`` is a view of it. Give ``t`` that
    input's version counter (an in-place change through either is a change of both) and
    remember how to rebuild ``t`` from the base (``tensor._View``)."""
    root = _root(t._data)
    for pos, a, r in roots:
        if r is root:
            t._vc = a._counter()
            step = (fn, pos, tuple(args), kwargs)
            if a._view is None:
                t._view = _View(a, (step,), a._vc.value)
            else:
                t._view = _View(a._view.base, a._view.steps + (step,), a._vc.value, a._view.multi)
            return


def multi_output(views, op: str) -> tuple:
    """Mark each of ``views`` (the outputs of split/chunk/unbind) as one output of an op that
    returns several views, as torch's creation meta does: a recorded in-place write to one of
    them (or to a view of one) is refused (``ops/inplace.py``). Returns them as a tuple."""
    for k, v in enumerate(views):
        if v._view is not None:
            v._view.multi = (op, k)
    return tuple(views)


def refresh_stale_views(args) -> None:
    """A view input whose base changed in place since the view's node was built is rebuilt
    first (``Tensor._refresh_view``), so the graph sees the new values, as torch's does."""
    for a in args:
        if isinstance(a, Tensor) and a._view is not None and a._view.version != a._view.base._version:
            a._refresh_view()


def track_versions(ctx, t, fn, args, arrays, kwargs):
    """After ``fn``'s forward made ``t``: record the versions of what ``ctx`` saved
    (:func:`_saved_versions`) and, when ``t``'s array shares an input's memory, link ``t`` to it
    as a view (:func:`_link_view`). ``ctx`` is None when no node was recorded. Returns ``t``."""
    out = t._data
    roots = None
    if ctx is not None and ctx._saved:
        roots = _tensor_roots(args, arrays)
        ctx._versions = _saved_versions(ctx._saved, roots, out, t, args)
    if out.base is not None or (arrays and out is arrays[0]):
        _link_view(t, fn, args, _tensor_roots(args, arrays) if roots is None else roots, kwargs)
    return t


class _Never:
    """The version counter of a constant argument (an array passed to an op, not a Tensor): it
    never changes, and the record only says where the saved array came from."""
    value = 0


def _saved_versions(saved, roots, out, t_out, args=()) -> tuple:
    """For each saved array that is (a view of) an input's or the output's array: (position in
    ``saved``, that tensor's version counter, its value now, the tensor's producer, and where the
    array came from: the input's position when it *is* that input's array, -1 when it is the
    output, "const" when it is an array argument that is not a Tensor, None when it is only a view
    of a tensor's array). Arrays computed in the forward belong to no
    tensor and cannot be changed from outside. (The origin lets a backward that is differentiated
    again get the saved value back as a Tensor with its history: ``function._saved_as_tensors``.)"""
    records = []
    out_root = None
    for k, s in enumerate(saved):
        if not isinstance(s, np.ndarray):
            if isinstance(s, np.generic) and len(args) > len(roots) and _is_argument(s, args):
                records.append((k, _Never, 0, None, "const"))
            continue
        origin = None
        if s is out:
            owner, origin = t_out, -1
        else:
            root = _root(s)
            owner = None
            for pos, a, r in roots:   # inputs may be views of one buffer (q, k, v split from one)
                if r is root:
                    if owner is None:
                        owner = a
                    if s is a._data:
                        owner, origin = a, pos
                        break
            if owner is None and (s.base is not None or out.base is not None):
                if out_root is None:   # s is a view of the output, or the output a view of s
                    out_root = _root(out)   # (softmax saves its buffer and returns a view of it)
                if root is out_root:
                    owner = t_out
        if owner is not None:
            vc = owner._counter()
            records.append((k, vc, vc.value, owner._ctx.fn if owner._ctx is not None else None, origin))
        elif len(args) > len(roots) and _is_argument(s, args):
            records.append((k, _Never, 0, None, "const"))
    return tuple(records)


def _is_argument(s, args) -> bool:
    """``s`` is one of the op's arguments that are not Tensors (an array or a NumPy scalar passed
    as it is, and saved as it came): a constant."""
    for a in args:
        if s is a and not isinstance(a, Tensor):
            return True
    return False


def _check_saved(ctx) -> None:
    """Raise, as torch does, when an array this node saved was changed in place since."""
    for k, vc, value, producer, _ in ctx._versions:
        if vc.value != value:
            s = ctx._saved[k]
            what = f"output 0 of {producer.__name__}" if producer else "a leaf or an input"
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: [{s.dtype} tensor of shape {list(s.shape)}], which is {what}, is at version "
                f"{vc.value}; expected version {value} instead (needed by {ctx.fn.__name__}'s backward). "
                "Use an out-of-place op (x = x + 1, not x += 1) on tensors that backward still needs.")


def unshare_saved(ctx, counter) -> None:
    """Give ``ctx`` its own copies of the saved arrays that belong to ``counter``'s tensor: an
    in-place op saves its input's original value (torch's ``original_self``) before writing over it."""
    keep, saved = [], list(ctx._saved)
    for rec in ctx._versions:
        if rec[1] is counter:
            saved[rec[0]] = np.array(saved[rec[0]], copy=True)
        else:
            keep.append(rec)
    ctx._saved, ctx._versions = tuple(saved), tuple(keep)
