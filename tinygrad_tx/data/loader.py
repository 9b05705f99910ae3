"""``DataLoader``: mini-batches of a dataset, optionally shuffled with a seeded NumPy generator.

It follows ``torch.utils.data.DataLoader`` for the arguments it shares
(``batch_size``, ``shuffle``, ``drop_last``, ``generator``) and for ``len()``,
minus worker processes. Each ``iter(loader)`` is one epoch: with
``shuffle=True`` it draws a fresh permutation of ``range(len(dataset))`` from
the loader's generator, so consecutive epochs differ, yet two loaders built
with the same ``seed`` produce the same sequence of epochs.

Batches are tuples of NumPy arrays. An ``ArrayDataset`` (both character
datasets are) is indexed once per batch with the batch's index array; any
other dataset (``__len__`` + integer ``__getitem__``) is read item by item and
each field is stacked with ``np.stack``.
"""
from __future__ import annotations

import numpy as np

from .datasets import ArrayDataset


def _collate(items: list):
    """Stack a list of samples (tuples of array-likes, or array-likes) into one batch."""
    if isinstance(items[0], tuple):
        return tuple(np.stack([np.asarray(item[k]) for item in items]) for k in range(len(items[0])))
    return np.stack([np.asarray(item) for item in items])


class DataLoader:
    """Iterate over ``dataset`` in batches of ``batch_size``.

    Parameters
    ----------
    dataset:
        An ``ArrayDataset`` or anything with ``__len__`` and integer ``__getitem__``.
    batch_size: int
    shuffle: bool
        Visit the samples in a new random order every epoch.
    drop_last: bool
        Drop the final batch when it is smaller than ``batch_size``.
    seed: int or None
        Seed of the loader's own ``np.random.default_rng`` (ignored unless ``shuffle``).
    generator: np.random.Generator or None
        Use this generator instead (then ``seed`` must be None).
        With neither, shuffling is not reproducible.

    ``len(loader)`` is the number of batches per epoch:
    ``len(dataset) // batch_size`` with ``drop_last``, else the ceiling.
    """

    def __init__(self, dataset, batch_size: int = 1, shuffle: bool = False, drop_last: bool = False,
                 seed: int | None = None, generator: np.random.Generator | None = None):
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if generator is not None and seed is not None:
            raise ValueError("pass either seed or generator, not both")
        if generator is not None and not isinstance(generator, np.random.Generator):
            raise TypeError(f"generator must be a numpy.random.Generator, got {type(generator).__name__}")
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.generator = generator if generator is not None else np.random.default_rng(seed)

    def __len__(self) -> int:
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        n = len(self.dataset)
        order = self.generator.permutation(n) if self.shuffle else np.arange(n)
        for start in range(0, len(self) * self.batch_size, self.batch_size):
            idx = order[start:start + self.batch_size]
            if isinstance(self.dataset, ArrayDataset):
                yield self.dataset[idx]
            else:
                yield _collate([self.dataset[int(i)] for i in idx])
