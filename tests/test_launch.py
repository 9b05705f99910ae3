"""The ``tinygrad-tx`` launcher (``tinygrad_tx_launch``): a stop while ``import tinygrad_tx`` runs is
one line and the shell's status (130 for SIGINT, 143 for SIGTERM), not a traceback or a silent -15.

To hit the import window every time, the child makes the import of ``tinygrad_tx.cli`` slow (a
meta-path finder that sleeps, then defers to the normal import) and prints ``importing`` first,
so the signal is sent only once the window is open.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

SLOW_IMPORT = r"""
import sys, time
class Slow:
    def find_spec(self, name, path=None, target=None):
        if name == "tinygrad_tx.cli":
            print("importing", flush=True)
            time.sleep(30)
        return None
sys.meta_path.insert(0, Slow())
import tinygrad_tx_launch
sys.exit(tinygrad_tx_launch.main(["--version"]))
"""


def _default_signals():
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_DFL)


def _run(code):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_default_signals)


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stop_during_the_import_is_one_line_and_the_shells_status(signum, status):
    proc = _run(SLOW_IMPORT)
    assert proc.stdout.readline().strip() == "importing"
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == status, err
    assert err.strip() == f"tinygrad-tx: interrupted ({signal.Signals(signum).name}) while starting"


def test_an_ignored_sigterm_stays_ignored_and_the_command_runs():
    code = ("import signal, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); import tinygrad_tx_launch; "
            "rc = tinygrad_tx_launch.main(['--version']); "
            "assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN; sys.exit(rc)")
    proc = _run(code)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.startswith("tinygrad-tx ")


def test_a_sigterm_after_the_import_reaches_the_command_as_one_line():
    """The handler stays for ``cli.main``, which reports the stop with the same status."""
    code = ("import os, signal, sys, tinygrad_tx_launch, tinygrad_tx.cli as cli\n"
            "def work(args):\n    os.kill(os.getpid(), signal.SIGTERM)\n    return 0\n"
            "cli.cmd_run = work\n"
            "sys.exit(tinygrad_tx_launch.main(['run', 'x.py']))")
    proc = _run(code)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert err.strip() == "tinygrad-tx: interrupted (SIGTERM)"


def test_the_console_script_is_the_launcher():
    text = (REPO / "pyproject.toml").read_text()
    assert 'tinygrad-tx = "tinygrad_tx_launch:main"' in text
