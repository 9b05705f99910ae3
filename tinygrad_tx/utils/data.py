"""``tinygrad_tx.utils.data``: ``torch.utils.data``'s datasets, samplers, collation and ``DataLoader``.

``from tinygrad_tx.utils.data import Dataset, DataLoader`` runs PyTorch-style input code
unchanged: a map-style dataset is anything with ``__len__`` and ``__getitem__``; the loader
draws indices from a sampler (sequential, or a fresh random permutation per epoch with
``shuffle=True``), groups them with a ``BatchSampler``, fetches the samples and merges them
with ``collate_fn`` (default: :func:`default_collate`, which stacks Tensors, turns NumPy
arrays and Python numbers into Tensors and recurses into tuples, lists and dicts), so batches
are Tensors as in torch.

Randomness (``shuffle``, ``RandomSampler``, ``random_split``) comes from ``generator`` — a
``np.random.Generator`` (a ``tinygrad_tx.Generator`` is one) — or, when None, from the global
generator that ``tinygrad_tx.manual_seed`` seeds. The permutations are NumPy's, so the
*order* differs from torch's for the same seed; the rules (lengths, rounding, which sample
goes where given a permutation) are torch's.

Differences from torch, by design: ``num_workers > 0`` loads in the main process (there is
nothing to overlap with on a NumPy engine, and results are identical; ``worker_init_fn`` is not
called and :func:`get_worker_info` returns None); ``pin_memory`` has no effect (CPU only).
The array-based ``tinygrad_tx.data.DataLoader`` used by the training code is a separate class.
"""
from __future__ import annotations

import bisect
import math
import numbers
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from .._factory_args import InvalidArgumentAssertion
from ..generator import get_generator as _generator
from ..tensor import Tensor, stack

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset", "RandomSampler",
    "Sampler", "SequentialSampler", "Subset", "SubsetRandomSampler", "TensorDataset", "default_collate",
    "default_convert", "get_worker_info", "random_split",
]


def _positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value!r}")
    return int(value)


def get_worker_info():
    """None: every sample is loaded in the main process (see the module docstring)."""
    return None


# ============================================================================ datasets

class Dataset:
    """A map-style dataset: subclasses define ``__getitem__(idx)`` (and usually ``__len__``).
    ``a + b`` is ``ConcatDataset([a, b])``."""

    def __getitem__(self, index):
        raise NotImplementedError(f"Subclasses of Dataset should implement __getitem__ ({type(self).__name__} does not)")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclasses define ``__iter__``. ``a + b`` chains them."""

    def __iter__(self):
        raise NotImplementedError(f"Subclasses of IterableDataset should implement __iter__ "
                                  f"({type(self).__name__} does not)")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Sample i is ``tuple(t[i] for t in tensors)``; every tensor has the same first dimension."""

    def __init__(self, *tensors):
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(f"TensorDataset: argument {i} is a {type(t).__name__}, expected a Tensor")
            if t.ndim == 0:
                raise ValueError(f"TensorDataset: argument {i} is a 0-d tensor; every tensor needs a first "
                                 "(sample) dimension")
        if tensors and any(t.shape[0] != tensors[0].shape[0] for t in tensors):
            raise InvalidArgumentAssertion("TensorDataset: size mismatch between tensors: first dimensions "
                             f"{[t.shape[0] for t in tensors]} must be equal")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        inner = getattr(self.dataset, "__getitems__", None)
        if callable(inner):
            return inner([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several map-style datasets one after the other; ``cumulative_sizes[i]`` is the length of
    the first i + 1 of them. Negative indices count from the end."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise InvalidArgumentAssertion("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        n = len(self)
        if idx < 0:
            if -idx > n:
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += n
        if idx >= n:
            raise IndexError(f"ConcatDataset: index {idx} is out of range for length {n}")
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = 0 if which == 0 else self.cumulative_sizes[which - 1]
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Several iterable datasets, one after the other."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


def random_split(dataset, lengths, generator=None) -> list:
    """Split ``dataset`` into non-overlapping random ``Subset``s of the given ``lengths``.

    ``lengths`` are counts summing to ``len(dataset)``, or fractions summing to 1: then each
    count is ``floor(len · fraction)`` and the remainder is handed out one by one, round-robin
    from the first subset (torch's rule: 10 samples at [0.3, 0.3, 0.4] give 3, 3, 4; 11 at
    [0.5, 0.5] give 6, 5). The subsets are consecutive slices of one random permutation.
    """
    if isinstance(lengths, (str, bytes)) or not hasattr(lengths, "__iter__"):
        raise TypeError(f"random_split: lengths must be a list of counts or fractions, got "
                        f"{type(lengths).__name__} ({lengths!r})")
    lengths = list(lengths)
    for i, v in enumerate(lengths):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"random_split: lengths[{i}] must be an int or a float, got {type(v).__name__} ({v!r})")
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, frac in enumerate(lengths):
            if not 0 <= frac <= 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            counts.append(int(math.floor(n * frac)))
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, c in enumerate(counts):
            if c == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
        lengths = counts
    if sum(lengths) != n:
        raise ValueError(f"Sum of input lengths does not equal the length of the input dataset! "
                         f"(lengths {lengths} sum to {sum(lengths)}, the dataset has {n} samples)")
    order = _generator(generator).permutation(sum(lengths)).tolist()
    subsets, start = [], 0
    for length in lengths:
        subsets.append(Subset(dataset, order[start:start + length]))
        start += length
    return subsets


# ============================================================================ samplers

class Sampler:
    """Yields dataset indices (subclasses define ``__iter__``, usually ``__len__``)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random order of the indices, drawn anew on every ``iter()``: a permutation (repeated
    when ``num_samples`` exceeds the length), or ``num_samples`` draws with replacement."""

    def __init__(self, data_source, replacement: bool = False, num_samples=None, generator=None):
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement!r}")
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        _positive_int(self.num_samples, "num_samples")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, rng = len(self.data_source), _generator(self.generator)
        if self.replacement:
            yield from rng.integers(0, n, size=self.num_samples).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (a new one every epoch)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _generator(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


def _groups(items, size: int, drop_last: bool):
    """Lists of ``size`` consecutive items (the last one shorter unless ``drop_last``)."""
    group = []
    for item in items:
        group.append(item)
        if len(group) == size:
            yield group
            group = []
    if group and not drop_last:
        yield group


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size`` (the last one shorter unless
    ``drop_last``)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool):
        self.batch_size = _positive_int(batch_size, "batch_size")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last!r}")
        self.sampler = sampler
        self.drop_last = drop_last

    def __iter__(self):
        return _groups(self.sampler, self.batch_size, self.drop_last)

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


# ============================================================================ collation

def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _stack_tensors(batch) -> Tensor:
    if any(t.requires_grad for t in batch):   # keep the graph, as torch.stack does
        return stack(list(batch))
    shapes = {t.shape for t in batch}
    if len(shapes) > 1:
        raise ValueError(f"default_collate: stack expects each tensor to be equal size, got shapes {sorted(shapes)}")
    return Tensor(np.stack([t._data for t in batch]))


def default_collate(batch):
    """Merge a list of samples into a batch, as torch's ``default_collate``:

    * Tensors -> stacked along a new first dim; NumPy arrays -> Tensors, stacked;
      NumPy scalars -> a 1-D Tensor of their dtype;
    * Python floats -> float64, ints -> int64, bools -> bool 1-D Tensors; strings stay a list;
    * dicts -> a dict of collated values; namedtuples -> the same namedtuple of collated fields;
      tuples and lists -> a **list** of collated fields (samples must have equal lengths).
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _stack_tensors(batch)
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "OUSV":
            raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                            f"found a numpy array of dtype {elem.dtype}")
        return _stack_tensors([Tensor(np.asarray(b)) for b in batch])
    if isinstance(elem, np.generic) and elem.dtype.kind in "biuf":
        return Tensor(np.array(batch))
    if isinstance(elem, bool):
        return Tensor(np.array(batch, dtype=np.bool_))
    if isinstance(elem, float):
        return Tensor(np.array(batch, dtype=np.float64))
    if isinstance(elem, int):
        return Tensor(np.array(batch, dtype=np.int64))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, Mapping):
        out = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(out)
        except TypeError:
            return out
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, Sequence):
        if any(len(b) != len(elem) for b in batch):
            raise ValueError("default_collate: each element in list of batch should be of equal size, got "
                             f"lengths {[len(b) for b in batch]}")
        fields = [default_collate(s) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return fields
        try:
            return type(elem)(fields)
        except TypeError:
            return fields
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                    f"found {type(elem)}")


def default_convert(data):
    """One sample without batching (``batch_size=None``): NumPy arrays become Tensors,
    recursively inside dicts, namedtuples, tuples and lists; everything else is kept."""
    if isinstance(data, np.ndarray) and data.dtype.kind in "biuf":
        return Tensor(data)
    if isinstance(data, Mapping):
        out = {k: default_convert(v) for k, v in data.items()}
        try:
            return type(data)(out)
        except TypeError:
            return out
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


# ============================================================================ DataLoader

class DataLoader:
    """Batches of ``dataset`` (torch's ``DataLoader``; see the module docstring).

    ``len(loader)`` is the number of batches: ``ceil(len(dataset) / batch_size)``, or the floor
    with ``drop_last``. Each ``iter(loader)`` is one epoch; with ``shuffle=True`` every epoch
    draws a new permutation from ``generator`` (two loaders with equally seeded generators give
    the same epochs).
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers: int = 0,
                 collate_fn=None, pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *, prefetch_factor=None,
                 persistent_workers: bool = False, pin_memory_device: str = "", in_order: bool = True):
        if isinstance(num_workers, bool) or not isinstance(num_workers, numbers.Integral) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             f"multiprocessing (got num_workers={num_workers!r})")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing. "
                             "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, "
                                 f"but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, "
                                 f"but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                                 f"but got batch_sampler={batch_sampler}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None and not iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        if batch_size is not None:
            _positive_int(batch_size, "batch_size")
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self._auto_collation = batch_sampler is not None or (iterable and batch_size is not None)
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    def _fetch(self, indices):
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems(indices)
        return [self.dataset[i] for i in indices]

    def __iter__(self):
        if isinstance(self.dataset, IterableDataset):
            yield from self._iter_stream()
        elif self._auto_collation:
            for indices in self.batch_sampler:
                yield self.collate_fn(self._fetch(indices))
        else:
            for i in self.sampler:
                yield self.collate_fn(self.dataset[i])

    def _iter_stream(self):
        if self.batch_size is None:
            for sample in self.dataset:
                yield self.collate_fn(sample)
            return
        for batch in _groups(self.dataset, self.batch_size, self.drop_last):
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler) if self._auto_collation else len(self.sampler)
