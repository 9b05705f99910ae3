"""``tinygrad_tx.utils.data.distributed`` (torch's ``torch.utils.data.distributed``): ``DistributedSampler``."""
from __future__ import annotations

import math
import numbers

import numpy as np

from .sampler import Sampler

__all__ = ["DistributedSampler"]


def _int_arg(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"DistributedSampler: {name} must be an int, got {value!r}")
    return int(value)


class DistributedSampler(Sampler):
    """The share of ``dataset`` that process ``rank`` of ``num_replicas`` reads (torch's rules).

    The indices (a permutation seeded with ``seed + epoch`` when ``shuffle``, else 0..n-1) are
    padded by repeating the first ones up to a multiple of ``num_replicas`` (or cut down to one,
    ``drop_last``); replica ``rank`` takes every ``num_replicas``-th from position ``rank``. Call
    ``set_epoch(e)`` before each epoch for a new order.

    tinygrad_tx has no process groups: ``num_replicas=None`` means 1 and ``rank=None`` means 0
    (one process reads everything; torch would require ``init_process_group`` first). Any
    ``num_replicas``/``rank`` may be given, e.g. to see what each replica of a job would read.
    The shuffled order is NumPy's permutation, not torch's.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False):
        num_replicas = 1 if num_replicas is None else _int_arg(num_replicas, "num_replicas")
        rank = 0 if rank is None else _int_arg(rank, "rank")
        if num_replicas <= 0:
            raise ValueError(f"DistributedSampler: num_replicas must be positive, got {num_replicas}")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = _int_arg(seed, "seed")

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            indices = np.random.default_rng(self.seed + self.epoch).permutation(n).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use ``seed + epoch`` for the next shuffle (every replica must call it with the same epoch)."""
        self.epoch = _int_arg(epoch, "epoch")
