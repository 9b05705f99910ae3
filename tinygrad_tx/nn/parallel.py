"""``tinygrad_tx.nn.parallel``: ``DataParallel`` and ``DistributedDataParallel`` as torch's behave on a
machine with no accelerator (this package's only kind).

* ``DataParallel(module)`` wraps ``module`` and calls it unchanged: torch's own CPU path (no
  device to scatter to: ``device_ids`` is ``[]``, the input goes to ``module`` whole). Its
  parameters and state-dict keys carry the ``module.`` prefix, as torch's do, so a checkpoint
  saved from a wrapped model loads into one.
* ``DistributedDataParallel`` needs a process group, which this package does not have:
  constructing one raises torch's error for a process that never called ``init_process_group``.
* ``data_parallel(module, inputs)`` is torch's functional form, which on such a machine raises
  torch's "device type could not be determined".
"""
from __future__ import annotations

from .module import Module

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]


class DataParallel(Module):
    """``torch.nn.DataParallel(module, device_ids=None, output_device=None, dim=0)`` without an
    accelerator: ``forward`` is ``module``'s own (torch returns before any scatter when no device
    type is available), and ``device_ids`` is ``[]``."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel(): module must be an nn.Module, got {type(module).__name__}")
        self.module = module
        self.device_ids = []

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class DistributedDataParallel(Module):
    """``torch.nn.parallel.DistributedDataParallel``: needs a default process group, which cannot
    exist here (no ``torch.distributed``), so construction raises torch's error."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, **kwargs):
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """torch's functional ``data_parallel``: with no accelerator it raises, as torch's does."""
    raise RuntimeError("device type could not be determined")
