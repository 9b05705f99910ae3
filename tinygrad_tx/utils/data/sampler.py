"""``tinygrad_tx.utils.data.sampler`` (torch's ``torch.utils.data.sampler``): ``Sampler``,
``SequentialSampler``, ``RandomSampler``, ``SubsetRandomSampler``, ``WeightedRandomSampler`` and
``BatchSampler``.

Every sampler draws lazily, as torch's do: ``RandomSampler(ds, replacement=True,
num_samples=10**10)`` costs nothing until iterated, and then draws a chunk at a time. Draws come
from ``generator`` (a ``tinygrad_tx.Generator`` or ``np.random.Generator``) or, when None, the
global generator; they are NumPy's, so the indices differ from torch's for the same seed while
the distributions, lengths and errors are torch's.
"""
from __future__ import annotations

import numbers

import numpy as np

from ...generator import get_generator as _generator
from ...torch_streams import integers, multinomial, randperm, unit_double

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler",
           "WeightedRandomSampler"]


def _positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value!r}")
    return int(value)


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


_CHUNK = 1024   # draws with replacement are made this many at a time (torch: 32), never all at once


def _own_stream(generator) -> np.random.Generator:
    """The generator an iteration draws from: ``generator``, or (None) a fresh one seeded by one
    draw from the global generator, as torch's RandomSampler does, so that the draws of a lazy
    iteration do not interleave with other users of the global generator."""
    if generator is not None:
        return _generator(generator)
    from ...generator import Generator
    from ...torch_streams import random_default
    return Generator().manual_seed(int(random_default(_generator(None), 1, np.int64)[0]))


class RandomSampler(Sampler):
    """A random order of the indices, drawn anew on every ``iter()``: a permutation (another one
    each time ``num_samples`` exceeds the length), or ``num_samples`` draws with replacement,
    drawn lazily, a chunk at a time (``num_samples=10**10`` costs nothing until iterated)."""

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
        n, total = len(self.data_source), self.num_samples
        if n == 0:
            raise ValueError(f"RandomSampler: the data source is empty, there is nothing to draw "
                             f"num_samples={total} samples from")
        rng = _own_stream(self.generator)
        if self.replacement:    # torch's randint(high=n) draws: one 32-bit word each (n < 2**32)
            for _ in range(total // _CHUNK):
                yield from integers(rng, _CHUNK, np.int64, 0, n).tolist()
            yield from integers(rng, total % _CHUNK, np.int64, 0, n).tolist()
            return
        for _ in range(total // n):
            yield from randperm(rng, n).tolist()
        yield from randperm(rng, n)[:total % n].tolist()   # drawn even when empty, as torch

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (a new one every epoch)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in randperm(_generator(self.generator), len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights`` (torch's
    ``multinomial``): with replacement, lazily, a chunk at a time (inverse CDF of uniform draws);
    without, all distinct (as torch, once the positive weights are used up the zero ones follow in a
    random order). Weights that are negative, not finite, or all zero, and ``num_samples`` beyond
    the number of weights without replacement, are torch's RuntimeError when iterated."""

    def __init__(self, weights, num_samples: int, replacement: bool = True, generator=None):
        if isinstance(num_samples, bool) or not isinstance(num_samples, numbers.Integral) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples!r}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement!r}")
        from ...tensor import Tensor
        data = weights._data if isinstance(weights, Tensor) else weights
        try:
            w = np.asarray(data, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"WeightedRandomSampler: weights must be a sequence of numbers, got "
                            f"{type(weights).__name__}") from None
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        self.weights = Tensor(w)
        self.num_samples = int(num_samples)
        self.replacement = replacement
        self.generator = generator

    def _probabilities(self) -> np.ndarray:
        w = self.weights._data
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise RuntimeError("WeightedRandomSampler: probability tensor contains either `inf`, `nan` or element "
                               f"< 0 (weights={w.tolist()[:8]}{'...' if w.size > 8 else ''})")
        if w.sum() <= 0:
            raise RuntimeError("WeightedRandomSampler: invalid multinomial distribution (sum of probabilities <= 0):"
                               " every weight is 0")
        if not self.replacement and self.num_samples > w.size:
            raise RuntimeError(f"WeightedRandomSampler: cannot sample n_sample > prob_dist.size(-1) samples without "
                               f"replacement (num_samples={self.num_samples}, {w.size} weights)")
        return w / w.sum()

    def __iter__(self):
        # torch: multinomial(weights (float64), num_samples, replacement, generator=generator)
        self._probabilities()                      # the checks
        w, rng = self.weights._data.astype(np.float64), _generator(self.generator)
        if not self.replacement or self.num_samples == 1:
            yield from multinomial(rng, w.reshape(1, -1), self.num_samples, self.replacement)[0].tolist()
            return
        # with replacement: one float64 uniform per sample, searched in the normalised cumulative
        # sums (torch's kernel), drawn a chunk at a time: the same words in the same order
        cum = np.cumsum(w)
        cum = cum / cum[-1]
        for start in range(0, self.num_samples, _CHUNK):
            u = unit_double(rng, min(_CHUNK, self.num_samples - start))
            yield from np.searchsorted(cum, u, side="left").tolist()

    def __len__(self):
        return self.num_samples


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

