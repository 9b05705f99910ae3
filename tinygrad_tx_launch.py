"""The ``tinygrad-tx`` command's first frame: the console script calls :func:`main` here.

It lives outside the package for one reason: ``import tinygrad_tx`` (NumPy, SciPy, the
engine) takes about half a second, and a Ctrl-C or a ``kill`` in that window used to end
the command with a ``KeyboardInterrupt`` traceback (SIGINT) or silently with -15 (SIGTERM),
because no code of the command was running yet to catch it. A module inside the package
cannot help: its package's ``__init__`` runs first.

So :func:`main` installs a SIGTERM handler before the import (SIGINT already raises
``KeyboardInterrupt``), turns a stop during the import into one line and the shell's status
(130 / 143), and leaves the handler in place for :func:`tinygrad_tx.cli.main`, which reports
a stop before training the same way (``train`` installs its own handlers, which save a
checkpoint, and restores this one afterwards). It imports nothing but the standard library.
"""
from __future__ import annotations

import os
import signal
import sys

PROG = "tinygrad-tx"


class Stopped(KeyboardInterrupt):
    """SIGTERM (or SIGINT) outside training: ``signum`` says which, for the exit status."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _stop(signum, frame):
    raise Stopped(signum)


def _stop_behind(error):
    """The stop (a ``KeyboardInterrupt``: SIGINT, or SIGTERM's :class:`Stopped`) an error was raised
    from, or None. A stop that lands inside a C extension's module initialisation reaches the
    caller as that extension's error: SciPy's pybind11 modules raise ``ImportError('initialization
    failed')`` from it (seen: 2 of 25 kills exited 1 instead of 130 / 143, one of them -6 when
    the interpreter's shutdown then met the half-initialised module). Also used by
    ``tinygrad_tx.cli.main`` for stops after the import."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def main(argv=None) -> int:
    """Import the command line under a SIGTERM handler, then run it; returns the exit status."""
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:   # an ignored SIGTERM (nohup) stays ignored
        signal.signal(signal.SIGTERM, _stop)
    try:
        from tinygrad_tx.cli import main as cli_main
    except (KeyboardInterrupt, ImportError) as e:
        stop = _stop_behind(e)
        if stop is None:                 # a real import error: Python's own report
            raise
        signum = getattr(stop, "signum", signal.SIGINT)
        print(f"{PROG}: interrupted ({signal.Signals(signum).name}) while starting", file=sys.stderr, flush=True)
        # exit at once: a normal shutdown would finalise half-imported modules (NumPy's among them),
        # and Python then reports the interrupt again as its own -2 (measured: 3 in 25 kills)
        os._exit(128 + int(signum))
    return cli_main(argv)


if __name__ == "__main__":     # python -m tinygrad_tx_launch ...
    sys.exit(main())
