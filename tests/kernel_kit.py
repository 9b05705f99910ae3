"""What the kernel tests share (``tests/test_kernels.py``, ``tests/test_kernels_more.py``): the skip
mark for a machine without a C compiler, the NumPy-path switch, a fresh kernel decision per test,
and the size check (``check_sizes``: the NumPy path's values, the same bits at 1 and 2 threads)."""
import contextlib
import os

import pytest

from tinygrad_tx import kernels
from tinygrad_tx.kernels import build


def _compiler_present() -> bool:
    try:
        build.find_compiler()
        return True
    except build.NoCompiler:
        return False


_OFF = os.environ.get("TINYGRAD_TX_KERNELS", "").strip().lower() in ("0", "off", "false", "no")
needs_cc = pytest.mark.skipif(_OFF or not _compiler_present(),
                              reason="TINYGRAD_TX_KERNELS=0 or no C compiler: the NumPy path runs")


@pytest.fixture(autouse=True)
def _fresh_decision():
    """Every test decides afresh (the environment may differ) and leaves the decision unmade."""
    kernels.reset()
    yield
    kernels.reset()


@contextlib.contextmanager
def numpy_path():
    """The NumPy forms in this process (``TINYGRAD_TX_KERNELS=0``), the kernels again after."""
    old = os.environ.get("TINYGRAD_TX_KERNELS")
    os.environ["TINYGRAD_TX_KERNELS"] = "0"
    kernels.reset()
    try:
        yield
    finally:
        if old is None:
            del os.environ["TINYGRAD_TX_KERNELS"]
        else:
            os.environ["TINYGRAD_TX_KERNELS"] = old
        kernels.reset()


def ours(f, x, g):
    """(output, gradient w.r.t. x for cotangent g) of ``f`` on our Tensors, as NumPy arrays."""
    import tinygrad_tx as tg
    X = tg.from_numpy(x.copy()).requires_grad_()
    y = f(X)
    (dx,) = tg.autograd.grad(y, X, tg.from_numpy(g.astype(x.dtype)))
    return y.detach().numpy(), dx.numpy()


def theirs(f, x, g):
    """The same of ``f`` on torch tensors (on the kit's DEVICE)."""
    import torch
    from reference.testing import DEVICE
    X = torch.tensor(x, device=DEVICE, requires_grad=True)
    y = f(X)
    (dx,) = torch.autograd.grad(y, X, torch.tensor(g.astype(x.dtype), device=DEVICE))
    return y.detach().cpu().numpy(), dx.cpu().numpy()


def rel(a, b):
    """max |a - b| / max |b|, in float64."""
    import numpy as np
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


def check_sizes(run, x, g, label):
    """What the size tests share: ``run(x, g)`` (outputs as NumPy arrays) gives the NumPy path's
    values in float64 (to 1e-12), and in float32 the same bits at 2 threads as at 1."""
    import numpy as np
    import tinygrad_tx as tg
    fast = run(x, g)
    with numpy_path():
        slow = run(x, g)
    for a, b in zip(fast, slow):
        assert rel(a, b) <= 1e-12, (label, rel(a, b))
    old = tg.get_num_threads()
    try:
        tg.set_num_threads(1)
        one = run(x.astype(np.float32), g.astype(np.float32))
        tg.set_num_threads(2)
        two = run(x.astype(np.float32), g.astype(np.float32))
    finally:
        tg.set_num_threads(old)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)
