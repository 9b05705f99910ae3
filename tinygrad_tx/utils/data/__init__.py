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

It is a package laid out as torch's: :mod:`.dataset` (datasets, ``random_split``), :mod:`.sampler`
(lazy samplers), :mod:`.distributed` (``DistributedSampler``) and :mod:`.dataloader` (``DataLoader``,
collation), so ``from tinygrad_tx.utils.data.dataloader import DataLoader`` works as torch's does.
"""
from . import dataloader, dataset, distributed, sampler
from .dataloader import DataLoader, default_collate, default_convert, get_worker_info
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
                      random_split)
from .distributed import DistributedSampler
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
    "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset",
    "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "default_collate", "default_convert",
    "get_worker_info", "random_split",
]
