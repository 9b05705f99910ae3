"""tinygrad_tx.allocator: freed arrays stay in the process, so reallocating them faults no pages."""
from __future__ import annotations

import resource
import sys

import numpy as np
import pytest

from tinygrad_tx import allocator

glibc = pytest.mark.skipif(allocator._libc() is None, reason="needs glibc's mallopt")


def _faults_of_reallocating(nbytes: int, times: int = 10) -> int:
    """Minor page faults while allocating, filling and freeing an array ``times`` times."""
    np.ones(nbytes // 8).fill(1.0)                       # warm up: the first one may fault
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(times):
        a = np.empty(nbytes // 8)
        a.fill(1.0)
        del a
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@glibc
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="page-fault counts from Linux getrusage")
def test_reallocating_an_array_faults_no_pages_once_memory_is_kept():
    pages = 4 * allocator.MIB // 4096
    try:
        assert allocator.keep_freed_memory(128 * 1024, 128 * 1024)   # glibc's starting defaults
        assert _faults_of_reallocating(4 * allocator.MIB) >= 2 * pages   # a fresh mapping each time
        assert allocator.keep_freed_memory()
        assert _faults_of_reallocating(4 * allocator.MIB) <= pages // 10
    finally:
        allocator.keep_freed_memory()


def test_default_policy_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("TINYGRAD_TX_MALLOC", "default")
    assert allocator.apply_default_policy() is False
    monkeypatch.delenv("TINYGRAD_TX_MALLOC")
    assert allocator.apply_default_policy() is (allocator._libc() is not None)
