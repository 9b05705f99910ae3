"""SIGINT/SIGTERM during a command-line training run: finish the step, save, say how to resume.

:class:`StopSignals` is what ``tinygrad-tx train`` wraps its run in (library calls of
:func:`~tinygrad_tx.training.fit` never install handlers: importing or calling tinygrad_tx
changes no process-wide state). Inside the block:

* while optimiser steps run (``during_steps``), the first SIGINT or SIGTERM only records
  itself; the loop notices at the end of the current step, writes the checkpoint (atomically)
  and raises :class:`TrainingInterrupted`, which the CLI turns into one line naming the
  checkpoint and the exact ``--resume`` command, and exit status 130 (SIGINT) or 143 (SIGTERM);
* anywhere else (loading the corpus, building the model, the test evaluation), or on a second
  signal while a step finishes, the signal raises :class:`Interrupted` (a ``KeyboardInterrupt``)
  at once: one line, the same exit status, no traceback.

The previous handlers are restored when the block ends. A signal the process ignores
(``nohup``; SIGINT of a non-interactive shell's background job) stays ignored, as Python
leaves it. Off the main thread (where Python cannot install handlers) the block does nothing.
"""
from __future__ import annotations

import contextlib
import signal
import threading

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_current: list["StopSignals"] = []
raised: int | None = None   # the signal a block last raised Interrupted for (see StopSignals._handle)


class Interrupted(KeyboardInterrupt):
    """A stop signal outside the optimiser steps: nothing was saved by it. ``signum`` tells which."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class TrainingInterrupted(Exception):
    """Training stopped at the end of step ``step`` of ``steps`` on signal ``signum``; the
    run's state is in the checkpoint ``path`` (None when the run had nowhere to save)."""

    def __init__(self, signum: int, step: int, steps: int, path):
        self.signum, self.step, self.steps, self.path = signum, step, steps, path
        where = f"; checkpoint: {path}" if path is not None else ""
        super().__init__(f"interrupted ({signal.Signals(signum).name}) at step {step}/{steps}{where}")


def exit_status(signum: int) -> int:
    """The shell's status of a process ended by ``signum``: 128 + the signal (130, 143)."""
    return 128 + int(signum)


class StopSignals:
    """Handlers for SIGINT and SIGTERM for the duration of a ``with`` block (see the module)."""

    def __init__(self):
        self.signum = None
        self.armed = False
        self._previous = {}

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def _handle(self, signum, frame):
        global raised
        if self.armed and self.signum is None:
            self.signum = signum            # the loop saves at the end of this step
            return
        # Remembered for the CLI: raised inside a C extension (matplotlib's, SciPy's), the stop
        # can come out as that extension's own error (a TypeError naming its arguments, an
        # ImportError or RuntimeError caused by it); the CLI reports it as the stop anyway.
        raised = signum
        raise Interrupted(signum)

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for s in STOP_SIGNALS:
                if signal.getsignal(s) is signal.SIG_IGN:
                    continue                # ignored on purpose (nohup, a shell's background job): keep it so
                self._previous[s] = signal.signal(s, self._handle)
        _current.append(self)
        return self

    def __exit__(self, *exc):
        _current.remove(self)
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous.clear()
        return False

    @contextlib.contextmanager
    def during_steps(self):
        """Inside: a signal is recorded, for the loop to act on at the end of the step."""
        self.armed = True
        try:
            yield self
        finally:
            self.armed = False


def current() -> StopSignals | None:
    """The innermost active :class:`StopSignals` block, or None (library use)."""
    return _current[-1] if _current else None
