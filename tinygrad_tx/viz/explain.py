"""The three rungs of a fused op, side by side: ``explain('softmax')``.

Every fused Transformer op exists three times (see ``tinygrad_tx/functional/closed_form.py``):
(1) the composite of primitives, differentiated op by op; (2) the closed form, its derivation
as a plain ``Function`` of a few lines of NumPy; (3) the fused ``Function`` used by default,
the same closed form tuned for speed, each trick a named helper. :func:`explain` returns a
report with

1. the three rungs in that order: the composite's source, the closed form's derivation and
   source (and its size in lines), the fused Function's derivation, source and the named
   helpers it calls;
2. a live check on a random float64 input with a random cotangent g: the output and every
   input gradient of each rung against PyTorch (when torch is installed; else against the
   composite), as relative errors max|a - b| / max|b|, and what each rung records for its
   backward (graph nodes, bytes saved), measured with :func:`trace_backward`.

``tinygrad-tx explain softmax`` prints it; ``tinygrad-tx explain`` lists the ops.
tinygrad_tx never imports torch: the PyTorch side of the live check is
``reference/explain_torch.py``, loaded through importlib only when the check runs.
"""
from __future__ import annotations

import ast
import dis
import importlib
import inspect
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from .. import functional as F
from ..nn.batch_norm import BatchNorm, batch_norm, batch_norm_composite
from ..ops.elementwise import Gelu
from ..ops.flash_attention import FlashAttention, flash_attention
from ..tensor import Tensor
from .trace import trace_backward


@dataclass(frozen=True)
class OpSpec:
    """One explainable op and its rungs.

    ``inputs(rng) -> (arrays, consts)``: the float64 arrays that get gradients (by name, in
    call order) and the constant arguments. ``call(f, tensors, consts)`` applies one rung's
    functional spelling ``f`` to them; ``composite``, ``closed_form`` (None: the fused
    Function is already the plain form; ``closed_note`` says why) and ``fused`` are those spellings.
    ``function`` is the fused ``Function`` class. ``torch`` names the op's PyTorch twin in
    ``reference.explain_torch.TWINS`` (None: no twin; ``note`` says why).
    """

    name: str
    function: type
    call: Callable
    composite: Callable
    closed_form: Callable | None
    fused: Callable
    inputs: Callable
    torch: str | None
    summary: str
    derivation_in_module: bool = False
    note: str = ""
    closed_note: str = ""

    @property
    def closed_function(self) -> type | None:
        """The rung-2 ``Function`` class (``F.CLOSED_FORMS``), or None."""
        return F.CLOSED_FORMS[self.name][0] if self.name in F.CLOSED_FORMS else None

    def rungs(self) -> dict:
        """{rung name: functional spelling} in the order 1, 2, 3 (rungs that exist)."""
        found = {"composite": self.composite, "closed_form": self.closed_form, "fused": self.fused}
        return {k: f for k, f in found.items() if f is not None}


RUNG_TITLES = {"composite": "composite", "closed_form": "closed form", "fused": "fused"}


def _rows(rng, *shape):
    return rng.standard_normal(shape)


def _batch_norm_fused(input, weight, bias):
    return batch_norm(input, None, None, weight, bias, training=True)


def _attention_inputs(rng):
    return {"query": _rows(rng, 2, 5, 4), "key": _rows(rng, 2, 5, 4), "value": _rows(rng, 2, 5, 3)}, {}


def _attention_call(f, t, c):
    return f(t["query"], t["key"], t["value"], is_causal=True)


def _flash_fused(query, key, value, is_causal=False):
    """``flash_attention`` in 2 × 2 tiles, so the (5, 5) check crosses tile borders."""
    return flash_attention(query, key, value, is_causal=is_causal, block_q=2, block_k=2)


def _args(*names):
    """``call`` for an op taking the named arrays positionally: f(t[name], ...)."""
    return lambda f, t, c: f(*(t[n] for n in names))


OPS: dict[str, OpSpec] = {}


def _register(spec: OpSpec):
    OPS[spec.name] = spec


def _last_dim_spec(name, function):
    """softmax and log_softmax: ``f(input, dim=-1)`` of a (4, 7) input scaled by 3."""
    return OpSpec(
        name, function, call=lambda f, t, c: f(t["input"], dim=-1),
        composite=getattr(F, name + "_composite"), closed_form=getattr(F, name + "_closed_form"),
        fused=getattr(F, name),
        inputs=lambda rng: ({"input": 3 * _rows(rng, 4, 7)}, {}),
        torch=name,
        summary=f"{name} along dim=-1 of a (4, 7) input")


_register(_last_dim_spec("softmax", F.Softmax))
_register(_last_dim_spec("log_softmax", F.LogSoftmax))
_register(OpSpec(
    "cross_entropy", F.CrossEntropy,
    call=lambda f, t, c: f(t["input"], c["target"], label_smoothing=0.1),
    composite=F.cross_entropy_composite, closed_form=F.cross_entropy_closed_form, fused=F.cross_entropy,
    inputs=lambda rng: ({"input": 2 * _rows(rng, 6, 5)}, {"target": rng.integers(0, 5, size=6)}),
    torch="cross_entropy",
    summary="mean cross-entropy of (6, 5) logits, label_smoothing=0.1"))
_register(OpSpec(
    "layer_norm", F.LayerNorm,
    call=lambda f, t, c: f(t["input"], (8,), t["weight"], t["bias"]),
    composite=F.layer_norm_composite, closed_form=F.layer_norm_closed_form, fused=F.layer_norm,
    inputs=lambda rng: ({"input": _rows(rng, 3, 4, 8), "weight": 1 + 0.1 * _rows(rng, 8),
                         "bias": 0.1 * _rows(rng, 8)}, {}),
    torch="layer_norm",
    summary="layer_norm over the last 8 features of a (3, 4, 8) input, with weight and bias"))
_register(OpSpec(
    "embedding", F.Embedding,
    call=lambda f, t, c: f(c["ids"], t["weight"]),
    composite=F.embedding_composite, closed_form=F.embedding_closed_form, fused=F.embedding,
    inputs=lambda rng: ({"weight": _rows(rng, 10, 4)}, {"ids": rng.integers(0, 10, size=(3, 6))}),
    torch="embedding",
    summary="lookup of (3, 6) ids (repeats included) in a (10, 4) table"))
_register(OpSpec(
    "linear", F.Linear, call=_args("input", "weight", "bias"),
    composite=F.linear_composite, closed_form=F.linear_closed_form, fused=F.linear,
    inputs=lambda rng: ({"input": _rows(rng, 2, 3, 5), "weight": _rows(rng, 4, 5), "bias": _rows(rng, 4)}, {}),
    torch="linear",
    summary="x Wᵀ + b with x (2, 3, 5), W (4, 5), b (4,)"))
_register(OpSpec(
    "gelu", Gelu, call=lambda f, t, c: f(t["input"], approximate="tanh"),
    composite=F.gelu_composite, closed_form=F.gelu_closed_form, fused=F.gelu,
    inputs=lambda rng: ({"input": 2 * _rows(rng, 4, 6)}, {}),
    torch="gelu",
    summary="GELU, tanh approximation (the exact form needs erf, which has no composite), (4, 6) input"))
_register(OpSpec(
    "dropout", F.Dropout,
    call=lambda f, t, c: f(t["input"], 0.3, generator=np.random.default_rng(c["seed"])),
    composite=F.dropout_composite, closed_form=None, fused=F.dropout,
    inputs=lambda rng: ({"input": _rows(rng, 4, 6)}, {"seed": int(rng.integers(2**31))}),
    torch=None,
    summary="dropout p=0.3 of a (4, 6) input; fused and composite draw the same mask from one seed",
    note="torch draws its own random mask, so only the rungs are compared",
    closed_note="the fused Function is already the plain closed form (y = x ∘ m / (1 - p), no speed tricks)"))
_register(OpSpec(
    "scaled_dot_product_attention", F.ScaledDotProductAttention, call=_attention_call,
    composite=F.scaled_dot_product_attention_composite,
    closed_form=F.scaled_dot_product_attention_closed_form, fused=F.scaled_dot_product_attention,
    inputs=_attention_inputs,
    torch="scaled_dot_product_attention",
    summary="causal attention, q, k (2, 5, 4), v (2, 5, 3)"))
_register(OpSpec(
    "flash_attention", FlashAttention, call=_attention_call,
    composite=F.scaled_dot_product_attention_composite, closed_form=F.flash_attention_closed_form,
    fused=_flash_fused,
    inputs=_attention_inputs,
    torch="scaled_dot_product_attention",
    summary="causal tiled attention in 2x2 tiles, q, k (2, 5, 4), v (2, 5, 3); composite = the attention composite",
    derivation_in_module=True))
_register(OpSpec(
    "patch_embed", F.PatchEmbed, call=_args("input", "weight", "bias"),
    composite=F.patch_embed_composite, closed_form=F.patch_embed_closed_form, fused=F.patch_embed,
    inputs=lambda rng: ({"input": _rows(rng, 2, 3, 8, 8), "weight": _rows(rng, 6, 3, 4, 4),
                         "bias": _rows(rng, 6)}, {}),
    torch="patch_embed",
    summary="4x4 patches of a (2, 3, 8, 8) image batch projected to 6 features (torch: strided conv2d)"))
_register(OpSpec(
    "batch_norm", BatchNorm, call=_args("input", "weight", "bias"),
    composite=batch_norm_composite, closed_form=F.batch_norm_closed_form, fused=_batch_norm_fused,
    inputs=lambda rng: ({"input": _rows(rng, 6, 4, 3), "weight": 1 + 0.1 * _rows(rng, 4),
                         "bias": 0.1 * _rows(rng, 4)}, {}),
    torch="batch_norm",
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
    """Run every rung (composite, closed form, fused) and, when ``use_torch`` and installed,
    torch, on one random float64 input with one random cotangent.

    Returns ``{"runs": {rung: Run}, "fused": Run, "composite": Run, "closed_form": Run | None,
    "torch": Run | None, "errors": {(what, rung, versus): rel err}, "torch_status": str, ...}``;
    ``what`` is ``'output'`` or ``'grad <input>'``. Each rung is compared with torch when torch
    ran, else with the composite (the definition).
    """
    spec = op_spec(name)
    rng = np.random.default_rng(seed)
    arrays, consts = spec.inputs(rng)
    probe = spec.call(spec.fused, {k: Tensor(v) for k, v in arrays.items()}, consts)  # its shape, for g
    cotangent = rng.standard_normal(probe.shape)
    runs = {rung: run_ours(lambda t, c, f=f: spec.call(f, t, c), arrays, consts, cotangent)
            for rung, f in spec.rungs().items()}
    torch_run, status = None, "not requested"
    if use_torch and spec.torch is not None:
        twins, status = torch_twins()
        if twins is not None:
            torch_run = Run(*twins.run_torch(spec.torch, arrays, consts, cotangent))
    elif spec.torch is None:
        status = spec.note or "no torch counterpart"
    pairs = ([(rung, "torch") for rung in runs] if torch_run is not None else
             [(rung, "composite") for rung in runs if rung != "composite"])
    reference = {"torch": torch_run, **runs}
    errors = {}
    for rung, versus in pairs:
        errors[("output", rung, versus)] = rel_err(runs[rung].output, reference[versus].output)
        for k in arrays:
            errors[(f"grad {k}", rung, versus)] = rel_err(runs[rung].grads[k], reference[versus].grads[k])
    return {"runs": runs, "fused": runs["fused"], "composite": runs["composite"],
            "closed_form": runs.get("closed_form"), "torch": torch_run, "errors": errors,
            "pairs": pairs, "torch_status": status, "inputs": {k: v.shape for k, v in arrays.items()},
            "output_shape": runs["fused"].output.shape}


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


def body_lines(fn) -> int:
    """Lines of code in the body of ``fn`` (a function or staticmethod): its statements without
    the docstring, blank lines and comment-only lines — how the closed forms are sized."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    body = tree.body[0].body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    if not body:
        return 0
    lines = textwrap.dedent(inspect.getsource(fn)).splitlines()[body[0].lineno - 1:body[-1].end_lineno]
    return sum(1 for ln in lines if ln.strip() and not ln.strip().startswith("#"))


def closed_form_lines(cls) -> tuple[int, int]:
    """(forward, backward) body lines of a Function (see :func:`body_lines`)."""
    return body_lines(cls.forward), body_lines(cls.backward)


def speed_helpers(cls) -> list:
    """The named helpers the fused Function's forward and backward call: module-level functions
    of tinygrad_tx reached by name from their code (the tricks of rung 3 live there)."""
    module = inspect.getmodule(cls)
    found = []
    for method in (cls.forward, cls.backward):
        for ins in dis.get_instructions(method):
            if ins.opname != "LOAD_GLOBAL":        # globals only: not ctx.<attribute> of the same name
                continue
            obj = getattr(module, ins.argval, None)
            fn = getattr(obj, "__wrapped__", obj)  # a cached helper (functools.lru_cache)
            if inspect.isfunction(fn) and fn.__module__.startswith("tinygrad_tx") and obj not in found:
                found.append(obj)
    return found


def _first_line(obj, width: int = 110) -> str:
    """The first sentence of ``obj``'s docstring, cut to ``width`` characters."""
    doc = (inspect.getdoc(getattr(obj, "__wrapped__", obj)) or "").split("\n\n")[0].replace("\n", " ")
    end = doc.find(". ")
    doc = doc if end < 0 else doc[:end + 1]
    return doc if len(doc) <= width else doc[:width - 3] + "..."


def explain(op: str, seed: int = 0, use_torch: bool = True, source: bool = True) -> str:
    """The report described in the module docstring, as one string."""
    spec = op_spec(op)
    cls, closed = spec.function, spec.closed_function
    comp = spec.composite
    out = [f"{spec.name}: three rungs",
           f"  1. composite    {comp.__module__}.{comp.__name__}  ({_location(comp)})"]
    if closed is not None:
        fw, bw = closed_form_lines(closed)
        out.append(f"  2. closed form  {closed.__module__}.{closed.__name__}  ({_location(closed)}): "
                   f"forward {fw} + backward {bw} lines of NumPy")
    else:
        out.append(f"  2. closed form  none: {spec.closed_note}")
    out += [f"  3. fused        {cls.__module__}.{cls.__name__}  ({_location(cls)}), used by default", ""]
    if source:
        out += ["Rung 1 — composite (primitives; autograd differentiates it op by op)", _indent(_source(comp)), ""]
    if closed is not None:
        out += ["Rung 2 — closed form (the derivation as a plain Function)", _indent(inspect.getdoc(closed)), ""]
        if source:
            out += [_indent(_source(closed.forward)), "", _indent(_source(closed.backward)), ""]
    doc = inspect.getdoc(inspect.getmodule(cls)) if spec.derivation_in_module else inspect.getdoc(cls)
    out += ["Rung 3 — fused (derivation: " + ("module" if spec.derivation_in_module else "class") + " docstring)",
            _indent(doc or "(none)"), ""]
    if source:
        out += ["    Forward", _indent(_source(cls.forward), "        "), "",
                "    Backward (hand-written)", _indent(_source(cls.backward), "        "), ""]
    helpers = speed_helpers(cls)
    if helpers:
        out.append("    Named helpers it calls (its speed tricks and shared pieces):")
        out += [f"      {getattr(h, '__wrapped__', h).__name__}: {_first_line(h)}" for h in helpers]
        out.append("")
    check = live_check(spec.name, seed=seed, use_torch=use_torch)
    shapes = ", ".join(f"{k} {tuple(s)}" for k, s in check["inputs"].items())
    out += [f"Live check: {spec.summary}",
            f"    float64 inputs {shapes}, seed {seed}; output {tuple(check['output_shape'])} with a random "
            f"cotangent g, backward(g)",
            f"    torch: {check['torch_status']}", ""]
    pairs = check["pairs"]
    out.append(f"    {'':<16}" + "".join(f"{RUNG_TITLES[r] + ' vs ' + v:>24}" for r, v in pairs))
    for w in ["output"] + [f"grad {k}" for k in check["inputs"]]:
        out.append(f"    {w:<16}" + "".join(f"{check['errors'][(w, r, v)]:>24.2e}" for r, v in pairs))
    out += ["    (relative errors max|a - b| / max|b|; float64 rounding is ~1e-16)", ""]
    graphs = [f"{RUNG_TITLES[r]} {_nodes(run.nodes)}, saved {run.saved_bytes:,} B" for r, run in check["runs"].items()]
    out.append("    backward graph: " + ";  ".join(graphs))
    return "\n".join(out) + "\n"


def explain_all_names() -> list[str]:
    return list(OPS)
