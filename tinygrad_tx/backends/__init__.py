"""``tinygrad_tx.backends``: the accelerator switches teaching code reads or sets
(``torch.backends.mps.is_available()``, ``torch.backends.cuda.matmul.allow_tf32 = True``).
No accelerator exists here; the flags are accepted and change nothing (NumPy computes in the
dtype it is given: there is no TF32)."""
from types import SimpleNamespace

mps = SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
cuda = SimpleNamespace(is_built=lambda: False, matmul=SimpleNamespace(allow_tf32=False),
                       sdp_kernel=None)
from . import cudnn  # noqa: E402  (a module, as torch's: ``import tinygrad_tx.backends.cudnn as cudnn``)
