"""tinygrad_tx.parallel: the thread count API and the chunking of large elementwise work."""
import threading

import numpy as np
import pytest

import tinygrad_tx as tg
from tinygrad_tx import parallel
from tinygrad_tx.ops import normal


@pytest.fixture
def threads():
    old = tg.get_num_threads()
    yield tg.set_num_threads
    tg.set_num_threads(old)


def test_set_and_get(threads):
    threads(3)
    assert tg.get_num_threads() == 3
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="positive int"):
            tg.set_num_threads(bad)


def test_default_follows_omp_num_threads(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "5")
    assert parallel._default_threads() == 5
    monkeypatch.setenv("OMP_NUM_THREADS", "")
    assert parallel._default_threads() >= 1


@pytest.mark.parametrize("n_threads", [1, 2, 3, 4])
@pytest.mark.parametrize("n", [0, 5, parallel.MIN_PARALLEL - 1, parallel.MIN_PARALLEL, 3 * parallel.MIN_PARALLEL + 17])
def test_chunks_cover_the_range_once(threads, n_threads, n):
    threads(n_threads)
    seen, names = [], set()
    lock = threading.Lock()

    def fn(lo, hi):
        with lock:
            seen.append((lo, hi))
            names.add(threading.current_thread().name)
    parallel.parallel_chunks(n, fn, align=1000)
    seen.sort()
    assert seen[0][0] == 0 and seen[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(seen, seen[1:]))          # contiguous, no overlap
    assert all(lo % 1000 == 0 for lo, _ in seen)                      # aligned to the block size
    if n_threads == 1 or n < parallel.MIN_PARALLEL:
        assert len(seen) == 1
    else:
        assert 1 < len(seen) <= n_threads and len(names) > 1          # really ran on the pool too


def test_exception_in_a_pool_chunk_reaches_the_caller(threads):
    threads(2)

    def fn(lo, hi):
        if lo > 0:
            raise ValueError(f"chunk {lo}:{hi} failed")
    with pytest.raises(ValueError, match="chunk"):
        parallel.parallel_chunks(4 * parallel.MIN_PARALLEL, fn)


def test_gelu_is_the_same_with_any_thread_count(threads):
    x = np.random.default_rng(0).standard_normal(5 * normal.BLOCK + 123).astype(np.float32)
    results = []
    for n in (1, 2, 3):
        threads(n)
        results.append(normal.gelu_float32(x, True))
    for y, d in results[1:]:
        assert np.array_equal(y, results[0][0]) and np.array_equal(d, results[0][1])


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_pool_works_in_a_forked_child(threads):
    import multiprocessing as mp
    threads(2)
    x = np.random.default_rng(1).standard_normal(4 * parallel.MIN_PARALLEL).astype(np.float32)
    expected = normal.gelu_float32(x, False)[0]          # the parent's pool now exists
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        y = pool.apply_async(normal.gelu_float32, (x, False)).get(timeout=60)[0]
    assert np.array_equal(y, expected)
