"""tinygrad_tx.allocator: freed arrays stay in the process, so reallocating them faults no pages."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tinygrad_tx import allocator

ROOT = Path(__file__).resolve().parents[1]

# In a fresh process: import tinygrad_tx (which applies the policy unless TINYGRAD_TX_MALLOC says
# otherwise), then count the minor page faults of what a training step does with activations:
# allocate and fill several arrays (eight of 4 MiB), free them all, and again (the first
# round, before counting, may fault).
_PROBE = """
import resource, numpy as np, tinygrad_tx

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


def _faults(policy: str) -> int:
    env = dict(os.environ, TINYGRAD_TX_MALLOC=policy, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


@pytest.mark.skipif(allocator._libc() is None or not sys.platform.startswith("linux"),
                    reason="needs glibc's mallopt and Linux's page-fault counts")
def test_reallocating_an_array_faults_no_pages_once_memory_is_kept():
    pages = 5 * 8 * 4 * allocator.MIB // 4096         # pages written by the five counted rounds
    assert _faults("default") >= pages // 4           # glibc's default: the heap is trimmed and regrown
    assert _faults("") <= pages // 100                # tinygrad_tx's policy: the memory is reused


def test_default_policy_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("TINYGRAD_TX_MALLOC", "default")
    assert allocator.apply_default_policy() is False
    monkeypatch.delenv("TINYGRAD_TX_MALLOC")
    assert allocator.apply_default_policy() is (allocator._libc() is not None)
