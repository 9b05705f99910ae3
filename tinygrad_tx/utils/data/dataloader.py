"""``tinygrad_tx.utils.data.dataloader`` (torch's ``torch.utils.data.dataloader``): ``DataLoader``,
``default_collate``, ``default_convert`` and ``get_worker_info``."""
from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence

import numpy as np

from ...tensor import Tensor, stack
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler, _groups, _positive_int

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]


def get_worker_info():
    """None: every sample is loaded in the main process (see the module docstring)."""
    return None



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
        # torch's iterator first draws its workers' base seed (an int64 random_()) from the
        # loader's generator, so the sampler's draws that follow are torch's
        from ...generator import get_generator
        from ...torch_streams import random_default
        random_default(get_generator(self.generator), 1, np.int64)
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

