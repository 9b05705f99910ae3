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


def main(argv=None) -> int:
    """Import the command line under a SIGTERM handler, then run it; returns the exit status."""
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:   # an ignored SIGTERM (nohup) stays ignored
        signal.signal(signal.SIGTERM, _stop)
    try:
        from tinygrad_tx.cli import main as cli_main
    except KeyboardInterrupt as e:
        signum = getattr(e, "signum", signal.SIGINT)
        print(f"{PROG}: interrupted ({signal.Signals(signum).name}) while starting", file=sys.stderr, flush=True)
        # exit at once: a normal shutdown would finalise half-imported modules (NumPy's among them),
        # and Python then reports the interrupt again as its own -2 (measured: 3 in 25 kills)
        os._exit(128 + int(signum))
    return cli_main(argv)


if __name__ == "__main__":     # python -m tinygrad_tx_launch ...
    sys.exit(main())
