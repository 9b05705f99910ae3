"""The PyTorch side of ``tinygrad-tx explain`` (:mod:`tinygrad_tx.viz.explain`).

tinygrad_tx never imports torch: its live check loads this module with
``importlib.import_module("reference.explain_torch")`` when it is importable, and reports
"torch is not installed: skipped" when it is not.

``TWINS[name](t, c)`` computes the op ``name`` with PyTorch, where ``t`` maps each input
name of the op spec (``OpSpec.inputs``) to a float64 torch tensor that requires grad and
``c`` holds the spec's constants as NumPy values (targets, ids). :func:`run_torch` runs one
twin on one input with one cotangent; the live check compares each of the op's three rungs
(composite, closed form, fused) with that one run. flash_attention has no twin of its own:
its spec names ``scaled_dot_product_attention``, the same function.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


def _patch_embed(t, c):
    """Patch embedding = a conv2d whose stride is its kernel size, flattened to (batch, patches, features)."""
    y = F.conv2d(t["input"], t["weight"], t["bias"], stride=t["weight"].shape[-1])
    return y.flatten(2).transpose(1, 2)


def _sdpa(t, c):
    return F.scaled_dot_product_attention(t["query"], t["key"], t["value"], is_causal=True)


TWINS = {
    "softmax": lambda t, c: torch.softmax(t["input"], dim=-1),
    "log_softmax": lambda t, c: torch.log_softmax(t["input"], dim=-1),
    "cross_entropy": lambda t, c: F.cross_entropy(t["input"], torch.from_numpy(c["target"]), label_smoothing=0.1),
    "layer_norm": lambda t, c: F.layer_norm(t["input"], (8,), t["weight"], t["bias"]),
    "embedding": lambda t, c: F.embedding(torch.from_numpy(c["ids"]), t["weight"]),
    "linear": lambda t, c: F.linear(t["input"], t["weight"], t["bias"]),
    "gelu": lambda t, c: F.gelu(t["input"], approximate="tanh"),
    "scaled_dot_product_attention": _sdpa,
    "patch_embed": _patch_embed,
    "conv2d": lambda t, c: F.conv2d(t["input"], t["weight"], t["bias"], stride=(2, 1), padding=1, dilation=(1, 2)),
    "batch_norm": lambda t, c: F.batch_norm(t["input"], None, None, t["weight"], t["bias"], training=True),
}


def torch_version() -> str:
    """torch's version, asked of the import system on every call, so that a torch made
    unimportable after this module was loaded (``sys.modules['torch'] = None``) raises
    ``ModuleNotFoundError`` here as a missing torch would."""
    import torch as current
    return current.__version__


def run_torch(name: str, arrays: dict, consts: dict, cotangent: np.ndarray):
    """``TWINS[name]`` on float64 copies of ``arrays`` and ``torch.autograd.grad(out, inputs,
    cotangent)``. Returns ``(output, {input name: gradient})`` as NumPy arrays."""
    tensors = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in arrays.items()}
    out = TWINS[name](tensors, consts)
    grads = torch.autograd.grad(out, list(tensors.values()), torch.from_numpy(cotangent))
    return out.detach().numpy(), {k: g.numpy() for k, g in zip(tensors, grads)}


def run_torch_function(path: str, arrays: list, cotangent: np.ndarray, **kwargs):
    """``torch.<path>(*tensors, **kwargs)`` (``path`` such as ``"tanh"`` or ``"nn.functional.silu"``) on
    float64 copies of ``arrays`` and ``torch.autograd.grad(out, tensors, cotangent)``: the torch
    side of a primitive's live check. Returns ``(output, [gradient per input])`` as NumPy arrays."""
    fn = torch
    for part in path.split("."):
        fn = getattr(fn, part)
    tensors = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    out = fn(*tensors, **kwargs)
    grads = torch.autograd.grad(out, tensors, torch.from_numpy(np.asarray(cotangent, dtype=np.float64)),
                                allow_unused=True)
    return out.detach().numpy(), [np.zeros_like(a) if g is None else g.numpy() for a, g in zip(arrays, grads)]


def run_torch_call(path: str, arrays: list, args: list, cotangent: np.ndarray, **kwargs):
    """As :func:`run_torch_function`, with positional ``args`` in which an ``int`` subclass marker
    (``explain._In(i)``) stands for input ``i`` and an integer NumPy array for an index tensor
    (``scatter_reduce``'s index, ``ctc_loss``'s targets and lengths); a tuple result is compared
    on its first element (``cummax``'s values)."""
    fn = torch
    for part in path.split("."):
        fn = getattr(fn, part)
    tensors = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    filled = [tensors[a] if type(a).__name__ == "_In" else torch.from_numpy(np.asarray(a, dtype=np.int64))
              if isinstance(a, np.ndarray) else a for a in args]
    out = fn(*filled, **kwargs)
    if isinstance(out, tuple):
        out = out[0]
    grads = torch.autograd.grad(out, tensors, torch.from_numpy(np.asarray(cotangent, dtype=np.float64)),
                                allow_unused=True)
    return out.detach().numpy(), [np.zeros_like(a) if g is None else g.numpy() for a, g in zip(arrays, grads)]
