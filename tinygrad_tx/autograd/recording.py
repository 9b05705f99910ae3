"""The one slot through which the engine tells ``tinygrad_tx.compile`` what a call runs.

``recorder`` is None except while a compiled function's first call is being recorded
(the ``tinygrad_tx/compile/`` package); then it is that call's recorder, and the few places that run or
create arrays outside it (``ArrayFunction.apply``, ``run_backward``, the reduction of broadcast
gradients, tensor creation, reading a value into Python, in-place edits, the optimizers'
``step``/``zero_grad``, a module call, a dropout mask's draw) hand it what they do. Each such
place costs one ``if recording.recorder is not None`` test when nothing is recorded.
"""
recorder = None


def call(fn, *args):
    """``fn(*args)``: an array computation the library makes outside a Function (a comparison's
    mask), recorded while a call is recorded so that the replay repeats it."""
    return fn(*args) if recorder is None else recorder.rerun(fn, *args)


def read(t, what: str) -> None:
    """Library code is about to read tensor ``t``'s values into Python (``allclose``'s bool, a
    one-element tensor used as a number): while a call is recorded, the recorder guards or refuses
    it, as it does ``t.item()``."""
    if recorder is not None and hasattr(t, "_data"):
        recorder.readout(t, what)
