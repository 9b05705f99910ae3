"""tinygrad_tx.utils.data laid out as torch.utils.data (``dataset``, ``sampler``, ``distributed``,
``dataloader`` modules, reachable as ``torch.utils.data.*`` through the shim) and its samplers:
exact equality with torch where the output is deterministic (SequentialSampler, BatchSampler,
DistributedSampler without shuffling, StackDataset), torch's lengths, errors and distributions
where it is random (RandomSampler, WeightedRandomSampler, SubsetRandomSampler, shuffled
DistributedSampler), and lazy drawing (``num_samples=10**10`` allocates nothing)."""
from __future__ import annotations

import importlib
import itertools
import time
import tracemalloc

import numpy as np
import pytest
import scipy.stats
import torch
import torch.utils.data as tud

import tinygrad_tx as tg
from tinygrad_tx.utils import data as D

pytestmark = pytest.mark.cpu_only(reason="torch.utils.data on CPU tensors: samplers and loaders compared, "
                                                "no computation on torch's device")

MODULES = ["dataset", "sampler", "dataloader", "distributed"]


# ============================================================================ layout

@pytest.mark.parametrize("module", MODULES)
def test_submodules_hold_torchs_names(module):
    ours = importlib.import_module(f"tinygrad_tx.utils.data.{module}")
    theirs = importlib.import_module(f"torch.utils.data.{module}")
    names = [n for n in getattr(theirs, "__all__", []) if hasattr(D, n)]
    assert names, module
    for name in names:
        assert getattr(ours, name) is getattr(D, name), f"{module}.{name}"


def test_every_old_import_path_still_works():
    from tinygrad_tx.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset,  # noqa: F401
                                        IterableDataset, RandomSampler, Sampler, SequentialSampler, Subset,
                                        SubsetRandomSampler, TensorDataset, default_collate, default_convert,
                                        get_worker_info, random_split)
    assert tg.utils.data.DataLoader is DataLoader and tg.utils.data.default_collate is default_collate
    for name in ("WeightedRandomSampler", "DistributedSampler", "StackDataset"):
        assert hasattr(tg.utils.data, name)


def test_torch_module_paths_through_the_shim():
    from tinygrad_tx.torch_shim import torch_as_tinygrad_tx
    with torch_as_tinygrad_tx():
        from torch.utils.data.dataloader import DataLoader
        from torch.utils.data.dataset import Dataset
        from torch.utils.data.distributed import DistributedSampler
        from torch.utils.data.sampler import WeightedRandomSampler
        import torch.utils.data.sampler as sampler_module
    assert DataLoader is D.DataLoader and Dataset is D.Dataset and DistributedSampler is D.DistributedSampler
    assert WeightedRandomSampler is D.WeightedRandomSampler and sampler_module is D.sampler
    assert importlib.import_module("torch.utils.data.dataloader").DataLoader is tud.DataLoader   # real torch back


# ============================================================================ exact samplers

@pytest.mark.parametrize("n,batch_size,drop_last", [(10, 3, False), (10, 3, True), (9, 3, True), (1, 4, False),
                                                    (1, 4, True), (7, 1, False), (0, 2, False)])
def test_sequential_and_batch_sampler_equal_torch(n, batch_size, drop_last):
    ours = D.BatchSampler(D.SequentialSampler(range(n)), batch_size, drop_last)
    theirs = tud.BatchSampler(tud.SequentialSampler(range(n)), batch_size, drop_last)
    assert list(ours) == list(theirs) and len(ours) == len(theirs)
    assert list(D.SequentialSampler(range(n))) == list(tud.SequentialSampler(range(n)))
    assert list(D.BatchSampler(list("abcdefg"), batch_size, drop_last)) == \
        list(tud.BatchSampler(list("abcdefg"), batch_size, drop_last))


@pytest.mark.parametrize("n", [10, 11, 3])
@pytest.mark.parametrize("replicas", [1, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_without_shuffle_equals_torch(n, replicas, drop_last):
    for rank in range(replicas):
        ours = D.DistributedSampler(range(n), num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
        theirs = tud.DistributedSampler(range(n), num_replicas=replicas, rank=rank, shuffle=False,
                                        drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
        assert (ours.num_samples, ours.total_size) == (theirs.num_samples, theirs.total_size)


def test_distributed_sampler_shuffle_single_process_and_epochs():
    n = 23
    one = D.DistributedSampler(range(n))                  # no process group: one replica, rank 0
    assert one.num_replicas == 1 and one.rank == 0 and sorted(one) == list(range(n))
    first = list(one)
    assert list(one) == first                                # same seed and epoch: same order
    one.set_epoch(1)
    assert list(one) != first and sorted(one) == list(range(n))
    shares = [list(D.DistributedSampler(range(n), num_replicas=4, rank=r, seed=3)) for r in range(4)]
    assert all(len(s) == len(tud.DistributedSampler(range(n), num_replicas=4, rank=0)) for s in shares)
    assert set(itertools.chain(*shares)) == set(range(n)) and sum(map(len, shares)) == 24   # one index repeated
    with pytest.raises(ValueError, match=r"Invalid rank 4, rank should be in the interval \[0, 3\]"):
        D.DistributedSampler(range(n), num_replicas=4, rank=4)
    with pytest.raises(ValueError, match=r"Invalid rank 4, rank should be in the interval \[0, 3\]"):
        tud.DistributedSampler(range(n), num_replicas=4, rank=4)
    with pytest.raises(TypeError, match="rank"):
        D.DistributedSampler(range(n), num_replicas=2, rank="0")


def test_stack_dataset_equals_torch():
    a, b = np.arange(6.0).reshape(3, 2), np.arange(3)
    ours = D.StackDataset(D.TensorDataset(tg.tensor(a)), list(b))
    theirs = tud.StackDataset(tud.TensorDataset(torch.tensor(a)), list(b))
    assert len(ours) == len(theirs) == 3
    assert np.array_equal(ours[1][0][0].numpy(), theirs[1][0][0].numpy()) and ours[1][1] == theirs[1][1]
    named = D.StackDataset(x=list("abc"), y=[1, 2, 3])
    assert named[2] == tud.StackDataset(x=list("abc"), y=[1, 2, 3])[2] == {"x": "c", "y": 3}
    for bad in (lambda M: M.StackDataset(), lambda M: M.StackDataset([1], y=[2]),
                lambda M: M.StackDataset([1], [1, 2])):
        with pytest.raises(ValueError):
            bad(D)
        with pytest.raises(ValueError):
            bad(tud)


# ============================================================================ random samplers

def test_random_sampler_with_replacement_is_lazy():
    s = D.RandomSampler(range(10), replacement=True, num_samples=int(1e10))
    assert len(s) == len(tud.RandomSampler(range(10), replacement=True, num_samples=int(1e10))) == 10**10
    tracemalloc.start()
    start = time.perf_counter()
    head = list(itertools.islice(iter(s), 5000))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert time.perf_counter() - start < 2 and peak < 20 * 2**20
    assert len(head) == 5000 and set(head) <= set(range(10))
    # without replacement, num_samples beyond the length: one permutation after another, lazily too
    s = D.RandomSampler(range(7), num_samples=10**12)
    block = list(itertools.islice(iter(s), 21))
    assert all(sorted(block[i:i + 7]) == list(range(7)) for i in (0, 7, 14))


@pytest.mark.parametrize("replacement,num_samples", [(True, 4000), (False, 4000), (False, None), (False, 13)])
def test_random_sampler_counts_and_distribution_like_torch(replacement, num_samples):
    n = 10
    g = tg.Generator().manual_seed(0)
    ours = list(D.RandomSampler(range(n), replacement, num_samples, generator=g))
    theirs = list(tud.RandomSampler(range(n), replacement, num_samples, generator=torch.Generator().manual_seed(0)))
    assert len(ours) == len(theirs)
    counts, ref = np.bincount(ours, minlength=n), np.bincount(theirs, minlength=n)
    if replacement:   # uniform: a chi-square test that torch's draws pass too
        assert scipy.stats.chisquare(counts).pvalue > 1e-4 and scipy.stats.chisquare(ref).pvalue > 1e-4
    else:             # permutations: every index k or k + 1 times, as torch's
        assert sorted(counts.tolist()) == sorted(ref.tolist())


def test_random_sampler_generator_semantics():
    ds = range(50)
    g1, g2 = tg.Generator().manual_seed(5), tg.Generator().manual_seed(5)
    s1, s2 = D.RandomSampler(ds, generator=g1), D.RandomSampler(ds, generator=g2)
    e1, e2 = list(s1), list(s2)
    assert e1 == e2 and sorted(e1) == list(ds) and list(s1) != e1    # a new order every epoch
    tg.manual_seed(1)
    a = list(D.RandomSampler(ds, replacement=True, num_samples=30))
    tg.manual_seed(1)
    assert list(D.RandomSampler(ds, replacement=True, num_samples=30)) == a   # global generator, seeded


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(replacement=1), TypeError, "replacement should be a boolean value, but got replacement=1"),
    (dict(num_samples=0), ValueError, "num_samples should be a positive integer value, but got num_samples=0"),
    (dict(num_samples=-3), ValueError, "num_samples should be a positive integer value, but got num_samples=-3"),
    (dict(num_samples=2.5), ValueError, "num_samples should be a positive integer value, but got num_samples=2.5"),
])
def test_random_sampler_errors_equal_torch(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        D.RandomSampler(range(5), **kwargs)
    with pytest.raises(exc, match=match):
        tud.RandomSampler(range(5), **kwargs)


def test_weighted_random_sampler_distribution_and_laziness():
    w = [0.1, 0.0, 0.5, 2.0, 0.4]
    p = np.array(w) / sum(w)
    ours = list(D.WeightedRandomSampler(w, 20000, generator=tg.Generator().manual_seed(1)))
    theirs = list(tud.WeightedRandomSampler(w, 20000, generator=torch.Generator().manual_seed(1)))
    for draws in (ours, theirs):
        counts = np.bincount(draws, minlength=len(w))
        assert counts[1] == 0
        keep = p > 0
        assert scipy.stats.chisquare(counts[keep], p[keep] * len(draws)).pvalue > 1e-4
    assert len(D.WeightedRandomSampler(tg.tensor(w), 7)) == 7
    big = D.WeightedRandomSampler(w, 10**10)
    assert len(big) == 10**10 and set(itertools.islice(iter(big), 3000)) <= {0, 2, 3, 4}
    no_repl = list(D.WeightedRandomSampler(w, 4, replacement=False))
    assert sorted(no_repl) == [0, 2, 3, 4]
    # beyond the positive weights, torch (and we) go on with the zero-weight indices
    assert sorted(D.WeightedRandomSampler(w, 5, replacement=False)) == \
        sorted(tud.WeightedRandomSampler(w, 5, replacement=False)) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("args,exc,match", [
    (([1.0, 2.0], 0), ValueError, "num_samples should be a positive integer value, but got num_samples=0"),
    (([1.0, 2.0], True), ValueError, "num_samples should be a positive integer value, but got num_samples=True"),
    (([1.0, 2.0], 3, 1), ValueError, "replacement should be a boolean value, but got replacement=1"),
    (([[1.0, 2.0]], 3), ValueError, r"weights should be a 1d sequence but given weights have shape \(1, 2\)"),
])
def test_weighted_random_sampler_errors_equal_torch(args, exc, match):
    with pytest.raises(exc, match=match):
        D.WeightedRandomSampler(*args)
    with pytest.raises(exc, match=match):
        tud.WeightedRandomSampler(*args)


@pytest.mark.parametrize("weights,num_samples,replacement", [([1.0, -1.0], 3, True), ([0.0, 0.0], 3, True),
                                                             ([1.0, float("nan")], 3, True), ([1.0, 0.0], 3, False)])
def test_weighted_random_sampler_bad_weights_fail_when_iterated_like_torch(weights, num_samples, replacement):
    ours = D.WeightedRandomSampler(weights, num_samples, replacement)
    theirs = tud.WeightedRandomSampler(weights, num_samples, replacement)
    with pytest.raises(RuntimeError):
        list(theirs)
    with pytest.raises(RuntimeError, match="WeightedRandomSampler"):
        list(ours)


def test_subset_random_sampler():
    idx = [3, 8, 1, 9, 4]
    ours = D.SubsetRandomSampler(idx, generator=tg.Generator().manual_seed(0))
    a, b = list(ours), list(ours)
    assert sorted(a) == sorted(idx) and len(ours) == len(tud.SubsetRandomSampler(idx)) == 5
    assert sorted(b) == sorted(idx)


# ============================================================================ with the DataLoader

def test_dataloader_with_samplers():
    x = np.arange(20.0).reshape(10, 2)
    ours_ds, theirs_ds = D.TensorDataset(tg.tensor(x)), tud.TensorDataset(torch.tensor(x))
    ours = D.DataLoader(ours_ds, batch_sampler=D.BatchSampler(D.SequentialSampler(ours_ds), 4, False))
    theirs = tud.DataLoader(theirs_ds, batch_sampler=tud.BatchSampler(tud.SequentialSampler(theirs_ds), 4, False))
    assert len(ours) == len(theirs) == 3
    for (a,), (b,) in zip(ours, theirs):
        assert np.array_equal(a.numpy(), b.numpy())
    loader = D.DataLoader(ours_ds, batch_size=3, sampler=D.WeightedRandomSampler([0, 0, 1, 0, 0, 0, 0, 0, 0, 1], 7))
    batches = [b for (b,) in loader]
    assert [tuple(b.shape) for b in batches] == [(3, 2), (3, 2), (1, 2)]
    assert set(np.concatenate([b.numpy()[:, 0] for b in batches])) <= {4.0, 18.0}
    dist = D.DataLoader(ours_ds, batch_size=2, sampler=D.DistributedSampler(ours_ds, num_replicas=2, rank=1,
                                                                              shuffle=False))
    ref = tud.DataLoader(theirs_ds, batch_size=2, sampler=tud.DistributedSampler(theirs_ds, num_replicas=2, rank=1,
                                                                                 shuffle=False))
    assert [b.numpy().tolist() for (b,) in dist] == [b.numpy().tolist() for (b,) in ref]
    lazy = D.DataLoader(ours_ds, batch_size=5, sampler=D.RandomSampler(ours_ds, replacement=True,
                                                                       num_samples=10**10))
    assert len(lazy) == 2 * 10**9 and next(iter(lazy))[0].shape == (5, 2)
