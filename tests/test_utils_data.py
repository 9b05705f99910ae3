"""tinygrad_tx.utils.data against torch.utils.data: datasets, random_split's lengths, collation
(structure, dtypes, values), samplers, DataLoader batches, lengths, shuffling determinism with a
seeded generator, and the errors torch raises. The tutorial's section-4 dataset runs unchanged.
"""
from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tud
from hypothesis import given
from hypothesis import strategies as st

import tinygrad_tx as tg
from tinygrad_tx.utils import data as D
from tinygrad_tx.utils.data import DataLoader, Dataset
from reference.testing import DEVICE


def plain(x):
    """A batch (ours or torch's) as nested Python lists/tuples/dicts of (dtype name, values)."""
    if isinstance(x, tg.Tensor):
        return ("tensor", str(x._data.dtype), x._data.tolist())
    if isinstance(x, torch.Tensor):
        return ("tensor", str(x.numpy().dtype), x.tolist())
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__,) + tuple(plain(v) for v in x)
    if isinstance(x, (list, tuple)):
        return type(x)(plain(v) for v in x)
    return x


def to_torch_sample(x):
    if isinstance(x, tg.Tensor):
        return torch.from_numpy(np.array(x._data)).to(DEVICE)
    if isinstance(x, dict):
        return {k: to_torch_sample(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(to_torch_sample(v) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(to_torch_sample(v) for v in x)
    return x


def raises_like_torch(ours_call, torch_call, ours_exc):
    with pytest.raises(Exception):
        torch_call()
    with pytest.raises(ours_exc):
        ours_call()


Point = collections.namedtuple("Point", "x y")


# ============================================================================ collation

SAMPLES = {
    "tensors": lambda i: tg.Tensor(np.full((2, 3), float(i), dtype=np.float32)),
    "int64 0-d tensors": lambda i: tg.Tensor(np.array(i)),
    "ndarrays": lambda i: np.arange(3, dtype=np.int32) + i,
    "numpy scalars": lambda i: np.float32(i) / 2,
    "floats": lambda i: i / 3,
    "ints": lambda i: i,
    "bools": lambda i: i % 2 == 0,
    "strings": lambda i: f"s{i}",
    "tuple": lambda i: (tg.Tensor(np.array([i, i + 1])), i, "name"),
    "list": lambda i: [float(i), i],
    "dict": lambda i: {"x": tg.Tensor(np.ones(2) * i), "y": i, "z": {"w": [i, 2 * i]}},
    "namedtuple": lambda i: Point(float(i), tg.Tensor(np.array([i]))),
}


@pytest.mark.parametrize("kind", list(SAMPLES))
def test_default_collate_matches_torch(kind):
    batch = [SAMPLES[kind](i) for i in range(4)]
    ours = D.default_collate(batch)
    theirs = tud.default_collate([to_torch_sample(s) for s in batch])
    assert plain(ours) == plain(theirs)


def test_default_collate_and_convert_errors_and_convert():
    raises_like_torch(lambda: D.default_collate([[1, 2], [3]]), lambda: tud.default_collate([[1, 2], [3]]), ValueError)
    raises_like_torch(lambda: D.default_collate([object()]), lambda: tud.default_collate([object()]), TypeError)
    raises_like_torch(lambda: D.default_collate([np.array(["a"]), np.array(["b"])]),
                      lambda: tud.default_collate([np.array(["a"]), np.array(["b"])]), TypeError)
    sample = {"a": np.arange(3), "b": (np.ones(2), 5), "c": "text"}
    assert plain(D.default_convert(sample)) == plain(tud.default_convert(sample))
    t = tg.Tensor(np.ones(2), requires_grad=True)
    stacked = D.default_collate([t, t * 2])                  # a graph is kept, as torch.stack keeps it
    stacked.sum().backward()
    np.testing.assert_array_equal(np.asarray(t.grad), [3.0, 3.0])


# ============================================================================ datasets

def test_tensor_dataset_subset_and_concat_match_torch():
    x, y = np.arange(12.0).reshape(6, 2), np.arange(6)
    ours = D.TensorDataset(tg.Tensor(x), tg.Tensor(y))
    theirs = tud.TensorDataset(torch.tensor(x, device=DEVICE), torch.tensor(y, device=DEVICE))
    assert len(ours) == len(theirs) == 6
    for i in (0, 3, -1):
        assert plain(ours[i]) == plain(theirs[i])
    assert plain(ours[[1, 2]]) == plain(theirs[[1, 2]])
    raises_like_torch(lambda: D.TensorDataset(tg.Tensor(np.ones(3)), tg.Tensor(np.ones(4))),
                      lambda: tud.TensorDataset(torch.ones(3, device=DEVICE), torch.ones(4, device=DEVICE)), ValueError)
    sub, tsub = D.Subset(ours, [4, 0, 2]), tud.Subset(theirs, [4, 0, 2])
    assert len(sub) == 3 and plain(sub[0]) == plain(tsub[0]) and plain(sub[-1]) == plain(tsub[-1])
    cat, tcat = ours + sub, theirs + tsub
    assert isinstance(cat, D.ConcatDataset) and cat.cumulative_sizes == tcat.cumulative_sizes == [6, 9]
    for i in (0, 5, 6, 8, -1, -9):
        assert plain(cat[i]) == plain(tcat[i])
    raises_like_torch(lambda: cat[-10], lambda: tcat[-10], ValueError)
    raises_like_torch(lambda: cat[9], lambda: tcat[9], IndexError)
    raises_like_torch(lambda: D.ConcatDataset([]), lambda: tud.ConcatDataset([]), ValueError)
    with pytest.raises(NotImplementedError):
        Dataset()[0]


class Stream(D.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


class TorchStream(tud.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def test_iterable_dataset_loader_and_chain_match_torch():
    for kw in [dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=None)]:
        ours = DataLoader(Stream(7), **kw)
        theirs = tud.DataLoader(TorchStream(7), **kw)
        assert [plain(b) for b in ours] == [plain(b) for b in theirs]
        assert len(ours) == len(theirs)
    assert list(Stream(2) + Stream(3)) == [0, 1, 0, 1, 2]
    raises_like_torch(lambda: DataLoader(Stream(3), shuffle=True), lambda: tud.DataLoader(TorchStream(3), shuffle=True),
                      ValueError)
    raises_like_torch(lambda: D.ConcatDataset([Stream(2)]), lambda: tud.ConcatDataset([TorchStream(2)]), TypeError)


@given(n=st.integers(0, 40), parts=st.lists(st.integers(1, 10), min_size=1, max_size=4), seed=st.integers(0, 99))
def test_random_split_lengths_match_torch_and_partition(n, parts, seed):
    fractions = [p / sum(parts) for p in parts]
    if not abs(sum(fractions) - 1) < 1e-12:
        fractions[-1] = 1 - sum(fractions[:-1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                      # zero-length splits warn in both
        try:   # fractions summing to 1 + 2e-16 are not fractions for torch (sum <= 1 fails): its error, ours too
            theirs = tud.random_split(range(n), fractions, generator=torch.Generator().manual_seed(seed))
        except ValueError:
            with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
                D.random_split(range(n), fractions, generator=np.random.default_rng(seed))
            return
        ours = D.random_split(range(n), fractions, generator=np.random.default_rng(seed))
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    seen = sorted(i for s in ours for i in s)
    assert seen == list(range(n))                            # disjoint and covering
    again = D.random_split(range(n), [len(s) for s in ours], generator=np.random.default_rng(seed))
    assert [list(s) for s in again] == [list(s) for s in ours]   # same generator seed, same split


def test_random_split_errors_and_global_generator():
    for lengths in ([3, 3], [0.5, 0.6], [-0.5, 1.5]):
        raises_like_torch(lambda: D.random_split(range(10), lengths), lambda: tud.random_split(range(10), lengths),
                          ValueError)
    tg.manual_seed(5)
    a = [list(s) for s in D.random_split(range(10), [4, 6])]
    tg.manual_seed(5)
    b = [list(s) for s in D.random_split(range(10), [4, 6])]
    assert a == b and sorted(a[0] + a[1]) == list(range(10))
    with pytest.raises(TypeError, match="generator"):
        D.random_split(range(4), [2, 2], generator=torch.Generator())


# ============================================================================ samplers

def test_samplers_match_torch():
    data = list(range(7))
    assert list(D.SequentialSampler(data)) == list(tud.SequentialSampler(data))
    for kw in [dict(), dict(num_samples=17), dict(num_samples=3)]:
        s = D.RandomSampler(data, generator=np.random.default_rng(0), **kw)
        draws = list(s)
        assert len(draws) == len(s) == len(tud.RandomSampler(data, **kw))
        n = kw.get("num_samples", 7)
        counts = np.bincount(draws, minlength=7)
        assert counts.max() - counts.min() <= 1 and sum(counts) == n   # whole permutations, then a part of one
    with_replacement = list(D.RandomSampler(data, replacement=True, num_samples=200, generator=np.random.default_rng(1)))
    assert len(with_replacement) == 200 and set(with_replacement) == set(data)
    for sampler in (range(10), list(range(5))):
        for size, drop in [(3, False), (3, True), (5, False), (20, True)]:
            assert list(D.BatchSampler(sampler, size, drop)) == list(tud.BatchSampler(sampler, size, drop))
            assert len(D.BatchSampler(sampler, size, drop)) == len(tud.BatchSampler(sampler, size, drop))
    sub = list(D.SubsetRandomSampler([3, 5, 9], generator=np.random.default_rng(0)))
    assert sorted(sub) == [3, 5, 9]
    for kw in [dict(batch_size=0, drop_last=False), dict(batch_size=True, drop_last=False),
               dict(batch_size=2, drop_last=1)]:
        raises_like_torch(lambda: D.BatchSampler(data, **kw), lambda: tud.BatchSampler(data, **kw), ValueError)
    raises_like_torch(lambda: D.RandomSampler(data, replacement=1), lambda: tud.RandomSampler(data, replacement=1),
                      TypeError)
    raises_like_torch(lambda: D.RandomSampler(data, num_samples=0), lambda: tud.RandomSampler(data, num_samples=0),
                      ValueError)


# ============================================================================ DataLoader

class Pairs(Dataset):
    """(features, label) pairs of NumPy arrays and ints, as many tutorials write them."""

    def __init__(self, n):
        self.x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], int(i) * 10


class TorchPairs(Pairs, tud.Dataset):
    pass


@given(n=st.integers(1, 30), batch_size=st.integers(1, 8), drop_last=st.booleans())
def test_loader_batches_and_len_match_torch(n, batch_size, drop_last):
    ours = DataLoader(Pairs(n), batch_size=batch_size, drop_last=drop_last)
    theirs = tud.DataLoader(TorchPairs(n), batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    assert [plain(b) for b in ours] == [plain(b) for b in theirs]


def test_loader_shuffle_is_a_fresh_seeded_permutation_each_epoch():
    ds = D.TensorDataset(tg.Tensor(np.arange(20)))

    def epochs(loader, k=3):
        return [np.concatenate([b[0]._data for b in loader]).tolist() for _ in range(k)]
    a = epochs(DataLoader(ds, batch_size=6, shuffle=True, generator=np.random.default_rng(42)))
    b = epochs(DataLoader(ds, batch_size=6, shuffle=True, generator=np.random.default_rng(42)))
    assert a == b                                            # same seed, same epochs
    assert all(sorted(e) == list(range(20)) for e in a)      # each epoch visits every sample once
    assert a[0] != a[1] and a[0] != list(range(20))          # epochs differ, and are shuffled
    tg.manual_seed(3)
    c = epochs(DataLoader(ds, batch_size=6, shuffle=True), 1)
    tg.manual_seed(3)
    assert epochs(DataLoader(ds, batch_size=6, shuffle=True), 1) == c    # the global generator, seeded
    workers = DataLoader(ds, batch_size=6, shuffle=True, generator=np.random.default_rng(42), num_workers=2,
                         pin_memory=True)
    assert epochs(workers) == a                              # num_workers > 0: same batches, main process
    assert D.get_worker_info() is None


def test_loader_options_match_torch():
    ds, tds = Pairs(10), TorchPairs(10)
    cases = [dict(batch_size=None), dict(sampler=[3, 1, 2]), dict(batch_sampler=[[0, 1], [5], [2, 3, 4]]),
             dict(batch_size=4, collate_fn=lambda batch: len(batch)), dict(batch_size=3, sampler=range(9, -1, -1))]
    for kw in cases:
        ours, theirs = DataLoader(ds, **kw), tud.DataLoader(tds, **kw)
        assert [plain(b) for b in ours] == [plain(b) for b in theirs], kw
        assert len(ours) == len(theirs)
    dict_ds = [{"a": np.ones(2) * i, "b": i} for i in range(5)]
    assert [plain(b) for b in DataLoader(dict_ds, batch_size=2)] == [plain(b) for b in tud.DataLoader(dict_ds, batch_size=2)]
    for kw in [dict(num_workers=-1), dict(shuffle=True, sampler=[1, 2]), dict(batch_sampler=[[1]], batch_size=2),
               dict(batch_size=None, drop_last=True), dict(batch_size=0), dict(batch_size=2.0), dict(timeout=-1),
               dict(prefetch_factor=2), dict(persistent_workers=True)]:
        raises_like_torch(lambda: DataLoader(ds, **kw), lambda: tud.DataLoader(tds, **kw), ValueError)


def test_tutorial_section4_dataset_runs_with_tinygrad_tx_as_torch():
    """The tutorial's CharAutoregressiveDataset snippet, with `torch` replaced by `tinygrad_tx`."""
    torch_ = tg
    special_char = "$"
    names = ["emma", "olivia", "ava", "isabella"]
    stoi = {c: i for i, c in enumerate(sorted(set("".join(names)) | {special_char}))}

    class CharAutoregressiveDataset(Dataset):
        def __init__(self, names, stoi, block_size):
            self.block_size = block_size
            self.stoi = stoi
            self.inputs = []
            self.targets = []
            for name in names:
                encoded = [stoi[special_char]] + [stoi[c] for c in name] + [stoi[special_char]]
                for i in range(1, len(encoded)):
                    subseq = encoded[:i]
                    target = encoded[i]
                    if len(subseq) > block_size:
                        subseq = subseq[-block_size:]
                    else:
                        subseq = [stoi[special_char]] * (block_size - len(subseq)) + subseq
                    self.inputs.append(torch_.tensor(subseq, dtype=torch_.int64))
                    self.targets.append(torch_.tensor(target, dtype=torch_.int64))
            self.inputs = torch_.stack(self.inputs)
            self.targets = torch_.stack(self.targets)

        def __len__(self):
            return len(self.inputs)

        def __getitem__(self, idx):
            return self.inputs[idx], self.targets[idx]

    dataset = CharAutoregressiveDataset(names, stoi, block_size=6)
    dataloader = DataLoader(dataset, batch_size=4, shuffle=True)
    sample_x, sample_y = next(iter(dataloader))
    assert tuple(sample_x.shape) == (4, 6) and tuple(sample_y.shape) == (4,)
    assert sample_x.dtype == np.int64 and sample_y.dtype == np.int64
    assert len(dataset) == sum(len(n) + 1 for n in names) and len(dataloader) == -(-len(dataset) // 4)
    rows = {tuple(r) for r in dataset.inputs._data.tolist()}
    assert all(tuple(r) in rows for r in sample_x._data.tolist())
