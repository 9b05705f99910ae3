"""The two frameworks behind one small interface, so a component is written once.

``OursBackend`` wraps tinygrad_tx and never imports torch; ``TorchBackend`` wraps
PyTorch and the ``reference/`` twins. A component receives a backend ``B`` and
uses ``B.F`` (``tinygrad_tx.functional`` / ``torch.nn.functional``), ``B.nn``,
``B.model("gpt", "GPTLanguageModel")`` (``tinygrad_tx.models.gpt`` /
``reference.gpt``), ``B.AdamW``, and the helpers below to turn NumPy arrays into
leaves. Since tinygrad_tx follows torch's API, the component's code is the same
for both.

Same data in both processes: every array comes from one NumPy generator seeded
identically in each worker and drawn in the same order; floats are rounded to
float32 first (so the float64 oracle sees exactly the float32 inputs), then cast
to the backend's dtype. Module weights are drawn the same way, one array per
state-dict key in sorted key order (tied parameters drawn once, by their first key).
"""
from __future__ import annotations

import importlib
from contextlib import contextmanager

import numpy as np


def init_value(key: str, shape, rng: np.random.Generator) -> np.ndarray:
    """The benchmark's initial value for parameter ``key``, float32-rounded float64.

    Matrices and higher: N(0, 1/fan_in) with fan_in = the last dimension (Linear's
    in_features, an embedding's width), or C·kH·kW for 4-D convolution kernels.
    Vectors named ``*weight`` (LayerNorm's gain): 1 + N(0, 0.1²); other vectors and
    scalars (biases): N(0, 0.1²). Random rather than zero biases and unit gains, so
    that every gradient is non-trivial.
    """
    shape = tuple(int(s) for s in shape)
    z = rng.standard_normal(shape)
    if len(shape) >= 2:
        fan_in = int(np.prod(shape[1:])) if len(shape) == 4 else shape[-1]
        v = z / np.sqrt(max(fan_in, 1))
    elif key.endswith("weight"):
        v = 1.0 + 0.1 * z
    else:
        v = 0.1 * z
    return v.astype(np.float32).astype(np.float64)


def draw_float(rng: np.random.Generator, shape, scale: float = 1.0) -> np.ndarray:
    """Standard normal × scale, rounded to float32 (returned as float64)."""
    return (scale * rng.standard_normal(tuple(shape))).astype(np.float32).astype(np.float64)


class _Backend:
    """What both backends share: dtype handling and the state-dict initialisation."""

    name = "?"

    def __init__(self, dtype="float32", device="cpu"):
        self.np_dtype = np.dtype(dtype)
        self.device = device

    def module_values(self, module, rng):
        """Draw a value for every trainable state-dict entry (sorted keys, ties drawn once)."""
        live = module.state_dict(keep_vars=True)
        values, first_of = {}, {}
        for key in sorted(live):
            t = live[key]
            if not getattr(t, "requires_grad", False):
                continue
            if id(t) in first_of:
                values[key] = values[first_of[id(t)]]
                continue
            first_of[id(t)] = key
            values[key] = init_value(key, tuple(t.shape), rng)
        return values

    def parameters(self, module):
        """Trainable parameters, tied ones once, in sorted state-dict key order (name, tensor)."""
        live = module.state_dict(keep_vars=True)
        seen, out = set(), []
        for key in sorted(live):
            t = live[key]
            if getattr(t, "requires_grad", False) and id(t) not in seen:
                seen.add(id(t))
                out.append((key, t))
        return out


class OursBackend(_Backend):
    name = "ours"

    def __init__(self, dtype="float32", device="cpu"):
        if device != "cpu":
            raise ValueError(f"tinygrad_tx runs on the CPU only, got device {device!r}")
        super().__init__(dtype, device)
        import tinygrad_tx
        self.tg = tinygrad_tx
        self.Tensor = tinygrad_tx.Tensor

    # modules and functions are imported lazily: a component whose API has not landed yet
    # fails at build time with an ImportError/AttributeError and is reported as unavailable
    @property
    def F(self):
        return importlib.import_module("tinygrad_tx.functional")

    @property
    def nn(self):
        return importlib.import_module("tinygrad_tx.nn")

    def model(self, module: str, cls: str):
        return getattr(importlib.import_module(f"tinygrad_tx.models.{module}"), cls)

    @property
    def AdamW(self):
        return importlib.import_module("tinygrad_tx.optim").AdamW

    def compile(self, fn, fuse=False):
        """``tinygrad_tx.compile`` (fullgraph: a step it cannot capture is an error, not eager);
        ``fuse=True``: its elementwise chains as generated C loops (``compile(fuse=True)``)."""
        return self.tg.compile(fn, fullgraph=True, fuse=fuse)

    def flash_attention(self, q, k, v, is_causal=False):
        from tinygrad_tx.ops.flash_attention import flash_attention
        return flash_attention(q, k, v, is_causal=is_causal)

    # data
    def leaf(self, arr, requires_grad=True):
        arr = np.asarray(arr)
        if arr.dtype.kind == "f":
            return self.Tensor(arr.astype(np.float32).astype(self.np_dtype), requires_grad=requires_grad)
        return self.Tensor(arr.astype(np.int64) if arr.dtype.kind in "iu" else arr)

    def const(self, arr):
        return self.leaf(arr, requires_grad=False)

    def prepare(self, module, rng):
        module.to(self.np_dtype)
        module.load_state_dict(self.module_values(module, rng), strict=False)
        module.train(True)
        return module

    # autograd
    def backward(self, out, g=None):
        out.backward(g)

    def grad(self, t):
        return None if t.grad is None else np.asarray(t.grad)

    def set_grad_none(self, tensors):
        for t in tensors:
            t.grad = None

    def numpy(self, t):
        return np.asarray(t.data)

    def sync(self):
        pass

    def no_grad(self):
        return self.tg.no_grad()

    @contextmanager
    def count_saved(self, result: dict):
        """Peak bytes held by graph nodes for their backward during the block
        (``SavedMemory``, counted by the engine in ``save_for_backward``)."""
        SM = self.tg.SavedMemory
        base = SM.current
        SM.reset_peak()
        try:
            yield
        finally:
            result["bytes"] = int(SM.peak - base)

    def distinct_saved_bytes(self, out) -> int:
        """Bytes of the distinct buffers the graph behind ``out`` holds for backward.

        ``SavedMemory`` counts per ``save_for_backward`` call, so an array saved by two
        ops (softmax's output P, saved again by ``P @ V``) counts twice there. This walks
        the recorded graph and counts each base buffer once — the measure torch's
        storage-deduplicated count corresponds to. (Reads the engine's private
        ``Tensor._ctx`` / ``Context._saved`` and follows ``Context.input_nodes``; a
        benchmark of our own engine may.)
        """
        seen_ctx, seen_buf, total = set(), set(), 0
        stack = [out._ctx]
        while stack:
            ctx = stack.pop()
            if not isinstance(ctx, self.tg.autograd.Context) or id(ctx) in seen_ctx:
                continue
            seen_ctx.add(id(ctx))
            for a in ctx._saved:
                if isinstance(a, np.ndarray):
                    while isinstance(a.base, np.ndarray):
                        a = a.base
                    if id(a) not in seen_buf:
                        seen_buf.add(id(a))
                        total += a.nbytes
            stack.extend(ctx.input_nodes)
        return total

    def info(self):
        return {"tinygrad_tx": getattr(self.tg, "__version__", "?")}


class TorchBackend(_Backend):
    name = "torch"

    def __init__(self, dtype="float32", device="cpu"):
        super().__init__(dtype, device)
        import torch
        self.torch = torch
        self.t_dtype = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64}[self.np_dtype]
        if device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("CUDA requested but torch.cuda.is_available() is False")

    @property
    def F(self):
        return importlib.import_module("torch.nn.functional")

    @property
    def nn(self):
        return importlib.import_module("torch.nn")

    def model(self, module: str, cls: str):
        return getattr(importlib.import_module(f"reference.{module}"), cls)

    @property
    def AdamW(self):
        return self.torch.optim.AdamW

    def compile(self, fn):
        """``torch.compile`` (inductor; on the CPU it needs a C++ compiler, found at the first call)."""
        return self.torch.compile(fn)

    def flash_attention(self, q, k, v, is_causal=False):
        """torch's fused scaled_dot_product_attention (a flash kernel on CPU and CUDA)."""
        return self.F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)

    def leaf(self, arr, requires_grad=True):
        torch = self.torch
        arr = np.asarray(arr)
        if arr.dtype.kind == "f":
            t = torch.tensor(arr.astype(np.float32), device=self.device).to(self.t_dtype)
            return t.requires_grad_(requires_grad)
        if arr.dtype.kind in "iu":
            return torch.tensor(arr.astype(np.int64), device=self.device)
        return torch.tensor(arr, device=self.device)

    def const(self, arr):
        return self.leaf(arr, requires_grad=False)

    def prepare(self, module, rng):
        module.to(device=self.device, dtype=self.t_dtype)
        values = self.module_values(module, rng)
        with self.torch.no_grad():
            live = module.state_dict(keep_vars=True)
            for key, v in values.items():
                live[key].copy_(self.torch.from_numpy(v))
        module.train(True)
        return module

    def backward(self, out, g=None):
        out.backward(g)

    def grad(self, t):
        if t.grad is None:
            return None
        g = t.grad.detach()
        if g._is_zerotensor():     # sgn's gradient (torch 2.13): a ZeroTensor, which .numpy() refuses
            g = g.clone()
        return g.cpu().numpy()

    def set_grad_none(self, tensors):
        for t in tensors:
            t.grad = None

    def numpy(self, t):
        return t.detach().cpu().numpy()

    def sync(self):
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def no_grad(self):
        return self.torch.no_grad()

    @contextmanager
    def count_saved(self, result: dict):
        """Bytes of the storages the autograd graph saves during the block, each storage
        counted once (``saved_tensors_hooks``; torch keeps them until the backward)."""
        seen = set()
        total = [0]

        def pack(t):
            st = t.untyped_storage()
            key = (st.data_ptr(), st.nbytes())
            if key not in seen:
                seen.add(key)
                total[0] += st.nbytes()
            return t

        try:
            with self.torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                yield
        finally:
            result["bytes"] = int(total[0])

    def distinct_saved_bytes(self, out):
        return None   # count_saved already counts each storage once

    def info(self):
        torch = self.torch
        out = {"torch": torch.__version__, "torch_threads": torch.get_num_threads()}
        if self.device == "cuda":
            out["cuda_device"] = torch.cuda.get_device_name(0)
        return out


def true_float32():
    """torch's float32 as the error column's reference must compute it: no TF32 in CUDA matmuls or
    cuDNN convolutions, matmul precision 'highest' (as reference/testing.py sets for the tests).
    Returns the flags as set, for the report."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    return {"float32_matmul_precision": torch.get_float32_matmul_precision(),
            "cuda_matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32}


def make_backend(framework: str, dtype="float32", device="cpu"):
    if framework == "ours":
        return OursBackend(dtype, device)
    if framework == "torch":
        return TorchBackend(dtype, device)
    raise ValueError(f"unknown framework {framework!r} (expected 'ours' or 'torch')")
