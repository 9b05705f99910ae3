"""tinygrad_tx.allocator: freed arrays stay in the process, so reallocating them faults no pages."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tinygrad_tx import allocator

ROOT = Path(__file__).resolve().parents[1]

# In a fresh process: import tinygrad_tx, apply the policy if asked (APPLY=1: what the
# tinygrad-tx command and the benchmark workers do; the import alone must not), then count the
# minor page faults of what a training step does with activations: allocate and fill several
# arrays (eight of 4 MiB), free them all, and again (the first round, before counting, may fault).
_PROBE = """
import os, resource, numpy as np, tinygrad_tx

if os.environ["APPLY"] == "1":
    tinygrad_tx.allocator.apply_default_policy()

def step():
    live = [np.empty(1 << 19) for _ in range(8)]
    for a in live:
        a.fill(1.0)

step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    step()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""

PAGES = 5 * 8 * 4 * allocator.MIB // 4096         # pages written by the five counted rounds
needs_glibc = pytest.mark.skipif(allocator._libc() is None or not sys.platform.startswith("linux"),
                                 reason="needs glibc's mallopt and Linux's page-fault counts")


def _faults(policy: str, apply: bool = True) -> int:
    env = dict(os.environ, TINYGRAD_TX_MALLOC=policy, PYTHONPATH=str(ROOT), APPLY="1" if apply else "0")
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


@needs_glibc
def test_reallocating_an_array_faults_no_pages_once_memory_is_kept():
    assert _faults("default") >= PAGES // 4           # glibc's default: the heap is trimmed and regrown
    assert _faults("") <= PAGES // 100                # tinygrad_tx's policy: the memory is reused


@needs_glibc
def test_importing_tinygrad_tx_leaves_malloc_alone():
    """The import alone keeps glibc's default behaviour (the pages are faulted again every round)."""
    assert _faults("", apply=False) >= PAGES // 4


def test_import_does_not_touch_mallopt():
    """A fresh interpreter whose ctypes records every look-up of ``mallopt`` on a loaded library:
    importing tinygrad_tx makes none; applying the policy (the control) makes one."""
    code = ("import ctypes\n"
            "seen = []\n"
            "class Recording(ctypes.CDLL):\n"
            "    def __getattr__(self, name):\n"
            "        if name == 'mallopt':\n"
            "            seen.append(name)\n"
            "        return super().__getattr__(name)\n"
            "ctypes.CDLL = Recording\n"
            "import tinygrad_tx\n"
            "after_import = len(seen)\n"
            "tinygrad_tx.allocator.apply_default_policy()\n"
            "print(after_import, len(seen))\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("TINYGRAD_TX_MALLOC", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    after_import, after_apply = map(int, out.stdout.split())
    assert after_import == 0
    if allocator._libc() is not None:
        assert after_apply >= 1


def test_the_command_line_applies_the_policy(monkeypatch, capsys):
    from tinygrad_tx import cli
    calls = []
    monkeypatch.setattr(allocator, "apply_default_policy", lambda: calls.append(1) or True)
    assert cli.main(["--version"]) == 0
    assert calls == [1]


def test_the_benchmark_worker_applies_the_policy_for_ours_only(monkeypatch):
    sys.path.insert(0, str(ROOT))
    try:
        from bench import worker
    finally:
        sys.path.remove(str(ROOT))
    calls = []
    monkeypatch.setattr(allocator, "apply_default_policy", lambda: calls.append(1) or True)
    monkeypatch.setattr("bench.backends.make_backend", lambda *a: None)
    worker.Worker("ours")
    assert calls == [1]


def test_default_policy_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("TINYGRAD_TX_MALLOC", "default")
    assert allocator.apply_default_policy() is False
    monkeypatch.delenv("TINYGRAD_TX_MALLOC")
    assert allocator.apply_default_policy() is (allocator._libc() is not None)
