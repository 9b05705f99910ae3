"""Fused vs composite, side by side: ``explain('softmax')``.

For every op that exists both as one fused ``Function`` with a hand-derived backward and as
a composite of primitives differentiated op by op, :func:`explain` returns a report with

1. the derivation (the Function's docstring),
2. the source of its ``forward`` and ``backward``, and of the composite,
3. a live check on a random float64 input with a random cotangent g: the output and every
   input gradient of the fused op against the composite and (when torch is installed)
   against PyTorch, as relative errors max|a - b| / max|b|, and what each version records
   for its backward (graph nodes, bytes saved), measured with :func:`trace_backward`.

``tinygrad-tx explain softmax`` prints it; ``tinygrad-tx explain`` lists the ops.
tinygrad_tx never imports torch: the PyTorch side of the live check is
``reference/explain_torch.py``, loaded through importlib only when the check runs.
"""
from __future__ import annotations

import importlib
import inspect
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from .. import functional as F
from ..nn.batch_norm import BatchNorm, batch_norm
from ..ops.elementwise import Gelu
from ..ops.flash_attention import FlashAttention, flash_attention
from ..tensor import Tensor
from .trace import trace_backward


@dataclass(frozen=True)
class OpSpec:
    """One explainable op.

    ``inputs(rng) -> (arrays, consts)``: the float64 arrays that get gradients (by name, in
    call order) and the constant arguments. ``fused`` and ``composite`` are called as
    ``f(tensors, consts)`` with the arrays as our Tensors. ``torch`` names the op's PyTorch
    twin in ``reference.explain_torch.TWINS`` (None: no twin; ``note`` says why).
    """

    name: str
    function: type
    fused: Callable
    composite: Callable
    inputs: Callable
    torch: str | None
    composite_source: Callable
    summary: str
    derivation_in_module: bool = False
    note: str = ""


def _rows(rng, *shape):
    return rng.standard_normal(shape)


def _batch_norm_composite(input, weight, bias, eps=1e-5):
    """Training-mode batch norm from primitives: statistics over every axis but the channels."""
    axes = (0,) + tuple(range(2, input.ndim))
    shape = (1, input.shape[1]) + (1,) * (input.ndim - 2)
    mean = input.mean(axes, keepdim=True)
    centered = input - mean
    var = (centered * centered).mean(axes, keepdim=True)
    return centered / (var + eps).sqrt() * weight.reshape(shape) + bias.reshape(shape)


def _batch_norm_fused(t, c):
    return batch_norm(t["input"], None, None, t["weight"], t["bias"], training=True)


def _attention_inputs(rng):
    return {"query": _rows(rng, 2, 5, 4), "key": _rows(rng, 2, 5, 4), "value": _rows(rng, 2, 5, 3)}, {}


def _sdpa_composite(t, c):
    return F.scaled_dot_product_attention_composite(t["query"], t["key"], t["value"], is_causal=True)


OPS: dict[str, OpSpec] = {}


def _register(spec: OpSpec):
    OPS[spec.name] = spec


def _last_dim_spec(name, function, fused, composite):
    """softmax and log_softmax: ``f(input, dim=-1)`` of a (4, 7) input scaled by 3."""
    return OpSpec(
        name, function,
        fused=lambda t, c: fused(t["input"], dim=-1),
        composite=lambda t, c: composite(t["input"], dim=-1),
        inputs=lambda rng: ({"input": 3 * _rows(rng, 4, 7)}, {}),
        torch=name,
        composite_source=lambda: composite,
        summary=f"{name} along dim=-1 of a (4, 7) input")


_register(_last_dim_spec("softmax", F.Softmax, F.softmax, F.softmax_composite))
_register(_last_dim_spec("log_softmax", F.LogSoftmax, F.log_softmax, F.log_softmax_composite))
_register(OpSpec(
    "cross_entropy", F.CrossEntropy,
    fused=lambda t, c: F.cross_entropy(t["input"], c["target"], label_smoothing=0.1),
    composite=lambda t, c: F.cross_entropy_composite(t["input"], c["target"], label_smoothing=0.1),
    inputs=lambda rng: ({"input": 2 * _rows(rng, 6, 5)}, {"target": rng.integers(0, 5, size=6)}),
    torch="cross_entropy",
    composite_source=lambda: F.cross_entropy_composite,
    summary="mean cross-entropy of (6, 5) logits, label_smoothing=0.1"))
_register(OpSpec(
    "layer_norm", F.LayerNorm,
    fused=lambda t, c: F.layer_norm(t["input"], (8,), t["weight"], t["bias"]),
    composite=lambda t, c: F.layer_norm_composite(t["input"], (8,), t["weight"], t["bias"]),
    inputs=lambda rng: ({"input": _rows(rng, 3, 4, 8), "weight": 1 + 0.1 * _rows(rng, 8),
                         "bias": 0.1 * _rows(rng, 8)}, {}),
    torch="layer_norm",
    composite_source=lambda: F.layer_norm_composite,
    summary="layer_norm over the last 8 features of a (3, 4, 8) input, with weight and bias"))
_register(OpSpec(
    "embedding", F.Embedding,
    fused=lambda t, c: F.embedding(c["ids"], t["weight"]),
    composite=lambda t, c: F.embedding_composite(c["ids"], t["weight"]),
    inputs=lambda rng: ({"weight": _rows(rng, 10, 4)}, {"ids": rng.integers(0, 10, size=(3, 6))}),
    torch="embedding",
    composite_source=lambda: F.embedding_composite,
    summary="lookup of (3, 6) ids (repeats included) in a (10, 4) table"))
_register(OpSpec(
    "linear", F.Linear,
    fused=lambda t, c: F.linear(t["input"], t["weight"], t["bias"]),
    composite=lambda t, c: F.linear_composite(t["input"], t["weight"], t["bias"]),
    inputs=lambda rng: ({"input": _rows(rng, 2, 3, 5), "weight": _rows(rng, 4, 5), "bias": _rows(rng, 4)}, {}),
    torch="linear",
    composite_source=lambda: F.linear_composite,
    summary="x Wᵀ + b with x (2, 3, 5), W (4, 5), b (4,)"))
_register(OpSpec(
    "gelu", Gelu,
    fused=lambda t, c: F.gelu(t["input"], approximate="tanh"),
    composite=lambda t, c: F.gelu_composite(t["input"], approximate="tanh"),
    inputs=lambda rng: ({"input": 2 * _rows(rng, 4, 6)}, {}),
    torch="gelu",
    composite_source=lambda: F.gelu_composite,
    summary="GELU, tanh approximation (the exact form needs erf, which has no composite), (4, 6) input"))
_register(OpSpec(
    "dropout", F.Dropout,
    fused=lambda t, c: F.dropout(t["input"], 0.3, generator=np.random.default_rng(c["seed"])),
    composite=lambda t, c: F.dropout_composite(t["input"], 0.3, generator=np.random.default_rng(c["seed"])),
    inputs=lambda rng: ({"input": _rows(rng, 4, 6)}, {"seed": int(rng.integers(2**31))}),
    torch=None,
    composite_source=lambda: F.dropout_composite,
    summary="dropout p=0.3 of a (4, 6) input; fused and composite draw the same mask from one seed",
    note="torch draws its own random mask, so only fused and composite are compared"))
_register(OpSpec(
    "scaled_dot_product_attention", F.ScaledDotProductAttention,
    fused=lambda t, c: F.scaled_dot_product_attention(t["query"], t["key"], t["value"], is_causal=True),
    composite=_sdpa_composite,
    inputs=_attention_inputs,
    torch="scaled_dot_product_attention",
    composite_source=lambda: F.scaled_dot_product_attention_composite,
    summary="causal attention, q, k (2, 5, 4), v (2, 5, 3)"))
_register(OpSpec(
    "flash_attention", FlashAttention,
    fused=lambda t, c: flash_attention(t["query"], t["key"], t["value"], is_causal=True, block_q=2, block_k=2),
    composite=_sdpa_composite,
    inputs=_attention_inputs,
    torch="scaled_dot_product_attention",
    composite_source=lambda: F.scaled_dot_product_attention_composite,
    summary="causal tiled attention in 2x2 tiles, q, k (2, 5, 4), v (2, 5, 3); composite = the attention composite",
    derivation_in_module=True))
_register(OpSpec(
    "patch_embed", F.PatchEmbed,
    fused=lambda t, c: F.patch_embed(t["input"], t["weight"], t["bias"]),
    composite=lambda t, c: F.patch_embed_composite(t["input"], t["weight"], t["bias"]),
    inputs=lambda rng: ({"input": _rows(rng, 2, 3, 8, 8), "weight": _rows(rng, 6, 3, 4, 4),
                         "bias": _rows(rng, 6)}, {}),
    torch="patch_embed",
    composite_source=lambda: F.patch_embed_composite,
    summary="4x4 patches of a (2, 3, 8, 8) image batch projected to 6 features (torch: strided conv2d)"))
_register(OpSpec(
    "batch_norm", BatchNorm,
    fused=_batch_norm_fused,
    composite=lambda t, c: _batch_norm_composite(t["input"], t["weight"], t["bias"]),
    inputs=lambda rng: ({"input": _rows(rng, 6, 4, 3), "weight": 1 + 0.1 * _rows(rng, 4),
                         "bias": 0.1 * _rows(rng, 4)}, {}),
    torch="batch_norm",
    composite_source=lambda: _batch_norm_composite,
    summary="training-mode batch_norm of a (6, 4, 3) input (4 channels), with weight and bias"))

ALIASES = {"sdpa": "scaled_dot_product_attention", "attention": "scaled_dot_product_attention",
           "layernorm": "layer_norm", "logsoftmax": "log_softmax", "crossentropy": "cross_entropy",
           "batchnorm": "batch_norm", "flash": "flash_attention", "patch": "patch_embed"}


def op_spec(name: str) -> OpSpec:
    """The spec of ``name`` (hyphens/underscores and a few aliases accepted)."""
    key = str(name).strip().lower().replace("-", "_")
    key = ALIASES.get(key.replace("_", ""), ALIASES.get(key, key))
    if key not in OPS:
        raise ValueError(f"unknown op {name!r}; explain knows: {', '.join(OPS)}")
    return OPS[key]


# --------------------------------------------------------------------------- the live check

def rel_err(a, b) -> float:
    """max |a - b| / max |b| (0 when both are all zero)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    scale = float(np.max(np.abs(b))) if b.size else 0.0
    diff = float(np.max(np.abs(a - b))) if a.size else 0.0
    if scale == 0.0:
        return 0.0 if diff == 0.0 else float("inf")
    return diff / scale


@dataclass
class Run:
    """Output, input gradients and backward bookkeeping of one version of an op."""

    output: np.ndarray
    grads: dict
    nodes: int | None = None
    saved_bytes: int | None = None


def run_ours(fn, arrays: dict, consts: dict, cotangent: np.ndarray) -> Run:
    tensors = {k: Tensor(np.array(v, copy=True), requires_grad=True) for k, v in arrays.items()}
    out = fn(tensors, consts)
    with trace_backward() as trace:
        out.backward(cotangent)
    return Run(out._data, {k: t.grad._data for k, t in tensors.items()}, len(trace), trace.total_saved_bytes)


TORCH_TWINS = "reference.explain_torch"


def torch_twins():
    """``(module, status)``: the PyTorch side of the live check (:data:`TORCH_TWINS`) and
    ``'torch <version>'``, or ``None`` and why it cannot run (torch or ``reference/`` missing)."""
    try:
        twins = importlib.import_module(TORCH_TWINS)
        return twins, f"torch {twins.torch_version()}"
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] == "torch":
            return None, "torch is not installed: skipped"
        return None, f"the PyTorch twins ({TORCH_TWINS}) are not importable (no module {e.name!r}): skipped"


def live_check(name: str, seed: int = 0, use_torch: bool = True) -> dict:
    """Run fused, composite and (``use_torch`` and installed) torch on one random float64
    input with one random cotangent. Returns ``{"fused": Run, "composite": Run, "torch": Run
    | None, "errors": {(what, versus): rel err}, "torch_status": str}``; ``what`` is
    ``'output'`` or ``'grad <input>'``, ``versus`` is ``'composite'`` or ``'torch'``."""
    spec = op_spec(name)
    rng = np.random.default_rng(seed)
    arrays, consts = spec.inputs(rng)
    probe = spec.fused({k: Tensor(v) for k, v in arrays.items()}, consts)  # its shape, for the cotangent
    cotangent = rng.standard_normal(probe.shape)
    fused = run_ours(spec.fused, arrays, consts, cotangent)
    composite = run_ours(spec.composite, arrays, consts, cotangent)
    runs = {"composite": composite}
    torch_run, status = None, "not requested"
    if use_torch and spec.torch is not None:
        twins, status = torch_twins()
        if twins is not None:
            torch_run = Run(*twins.run_torch(spec.torch, arrays, consts, cotangent))
            runs["torch"] = torch_run
    elif spec.torch is None:
        status = spec.note or "no torch counterpart"
    errors = {}
    for versus, run in runs.items():
        errors[("output", versus)] = rel_err(fused.output, run.output)
        for k in arrays:
            errors[(f"grad {k}", versus)] = rel_err(fused.grads[k], run.grads[k])
    return {"fused": fused, "composite": composite, "torch": torch_run, "errors": errors,
            "torch_status": status, "inputs": {k: v.shape for k, v in arrays.items()},
            "output_shape": fused.output.shape}


# --------------------------------------------------------------------------- the report

def _location(obj) -> str:
    path = Path(inspect.getsourcefile(obj)).resolve()
    root = Path(__file__).resolve().parents[2]
    try:
        path = path.relative_to(root)
    except ValueError:
        pass
    return f"{path}:{inspect.getsourcelines(obj)[1]}"


def _source(fn) -> str:
    return textwrap.dedent(inspect.getsource(fn)).rstrip()


def _indent(text: str, prefix: str = "    ") -> str:
    return textwrap.indent(text, prefix)


def _nodes(n: int) -> str:
    return f"{n} node" + ("" if n == 1 else "s")


def explain(op: str, seed: int = 0, use_torch: bool = True, source: bool = True) -> str:
    """The report described in the module docstring, as one string."""
    spec = op_spec(op)
    cls = spec.function
    comp = spec.composite_source()
    out = [f"{spec.name}: fused Function {cls.__module__}.{cls.__name__}  ({_location(cls)})",
           f"composite: {comp.__module__}.{comp.__name__}  ({_location(comp)})", ""]
    doc = inspect.getdoc(inspect.getmodule(cls)) if spec.derivation_in_module else inspect.getdoc(cls)
    out += ["Derivation (" + ("module" if spec.derivation_in_module else "class") + " docstring)",
            _indent(doc or "(none)"), ""]
    if source:
        out += ["Forward", _indent(_source(cls.forward)), "",
                "Backward (hand-written)", _indent(_source(cls.backward)), "",
                "Composite (primitives; autograd differentiates it op by op)", _indent(_source(comp)), ""]
    check = live_check(spec.name, seed=seed, use_torch=use_torch)
    shapes = ", ".join(f"{k} {tuple(s)}" for k, s in check["inputs"].items())
    out += [f"Live check: {spec.summary}",
            f"    float64 inputs {shapes}, seed {seed}; output {tuple(check['output_shape'])} with a random "
            f"cotangent g, backward(g)",
            f"    torch: {check['torch_status']}", ""]
    versus = ["composite"] + (["torch"] if check["torch"] is not None else [])
    header = f"    {'':<16}" + "".join(f"{'fused vs ' + v:>22}" for v in versus)
    out.append(header)
    whats = ["output"] + [f"grad {k}" for k in check["inputs"]]
    for w in whats:
        out.append(f"    {w:<16}" + "".join(f"{check['errors'][(w, v)]:>22.2e}" for v in versus))
    f, c = check["fused"], check["composite"]
    out += ["    (relative errors max|a - b| / max|b|; float64 rounding is ~1e-16)", "",
            f"    backward graph: fused {_nodes(f.nodes)}, saved {f.saved_bytes:,} B;  "
            f"composite {_nodes(c.nodes)}, saved {c.saved_bytes:,} B"]
    return "\n".join(out) + "\n"


def explain_all_names() -> list[str]:
    return list(OPS)
