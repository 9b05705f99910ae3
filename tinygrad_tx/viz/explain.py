"""The three rungs of a fused op, side by side: ``explain('softmax')``.

Every fused Transformer op exists three times (see ``tinygrad_tx/functional/closed_form.py``):
(1) the composite of primitives, differentiated op by op; (2) the closed form, its derivation
as a plain ``Function`` of a few lines of NumPy; (3) the fused ``Function`` used by default,
the same closed form tuned for speed, each trick a named helper. :func:`explain` returns a
report with

1. the three rungs in that order: the composite's source, the closed form's derivation and
   source (and its size in lines) — the op's one derivation —, the fused Function's docstring
   (what the speed adds: its tricks, refinements and what it saves), source and the named
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
from ..functional.batch_norm import BatchNorm, batch_norm, batch_norm_composite
from ..ops.elementwise import GeluFn
from ..ops.flash_attention import FlashAttention, flash_attention
from ..core.tensor import Tensor
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
    derivation_in_module: bool = False   # the fused Function's account (its tiles, its tricks) is its module's docstring
    note: str = ""
    closed_note: str = ""
    closed_class: type | None = None   # the rung-2 class of an op outside ``F.CLOSED_FORMS`` (conv2d)

    @property
    def closed_function(self) -> type | None:
        """The rung-2 ``Function`` class (``F.CLOSED_FORMS``, else ``closed_class``), or None."""
        return F.CLOSED_FORMS[self.name][0] if self.name in F.CLOSED_FORMS else self.closed_class

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


_register(_last_dim_spec("softmax", F.SoftmaxFn))
_register(_last_dim_spec("log_softmax", F.LogSoftmaxFn))
_register(OpSpec(
    "cross_entropy", F.CrossEntropy,
    call=lambda f, t, c: f(t["input"], c["target"], label_smoothing=0.1),
    composite=F.cross_entropy_composite, closed_form=F.cross_entropy_closed_form, fused=F.cross_entropy,
    inputs=lambda rng: ({"input": 2 * _rows(rng, 6, 5)}, {"target": rng.integers(0, 5, size=6)}),
    torch="cross_entropy",
    summary="mean cross-entropy of (6, 5) logits, label_smoothing=0.1"))
_register(OpSpec(
    "layer_norm", F.LayerNormFn,
    call=lambda f, t, c: f(t["input"], (8,), t["weight"], t["bias"]),
    composite=F.layer_norm_composite, closed_form=F.layer_norm_closed_form, fused=F.layer_norm,
    inputs=lambda rng: ({"input": _rows(rng, 3, 4, 8), "weight": 1 + 0.1 * _rows(rng, 8),
                         "bias": 0.1 * _rows(rng, 8)}, {}),
    torch="layer_norm",
    summary="layer_norm over the last 8 features of a (3, 4, 8) input, with weight and bias"))
_register(OpSpec(
    "embedding", F.EmbeddingFn,
    call=lambda f, t, c: f(c["ids"], t["weight"]),
    composite=F.embedding_composite, closed_form=F.embedding_closed_form, fused=F.embedding,
    inputs=lambda rng: ({"weight": _rows(rng, 10, 4)}, {"ids": rng.integers(0, 10, size=(3, 6))}),
    torch="embedding",
    summary="lookup of (3, 6) ids (repeats included) in a (10, 4) table"))
_register(OpSpec(
    "linear", F.LinearFn, call=_args("input", "weight", "bias"),
    composite=F.linear_composite, closed_form=F.linear_closed_form, fused=F.linear,
    inputs=lambda rng: ({"input": _rows(rng, 2, 3, 5), "weight": _rows(rng, 4, 5), "bias": _rows(rng, 4)}, {}),
    torch="linear",
    summary="x Wᵀ + b with x (2, 3, 5), W (4, 5), b (4,)"))
_register(OpSpec(
    "gelu", GeluFn, call=lambda f, t, c: f(t["input"], approximate="tanh"),
    composite=F.gelu_composite, closed_form=F.gelu_closed_form, fused=F.gelu,
    inputs=lambda rng: ({"input": 2 * _rows(rng, 4, 6)}, {}),
    torch="gelu",
    summary="GELU, tanh approximation (the exact form needs erf, which has no composite), (4, 6) input"))
_register(OpSpec(
    "dropout", F.DropoutFn,
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

_register(OpSpec(
    "conv2d", F.Conv,
    call=lambda f, t, c: f(t["input"], t["weight"], t["bias"], stride=(2, 1), padding=1, dilation=(1, 2)),
    composite=F.conv2d_composite, closed_form=F.conv2d_closed_form, fused=F.conv2d, closed_class=F.ConvClosedForm,
    inputs=lambda rng: ({"input": _rows(rng, 2, 3, 6, 5), "weight": _rows(rng, 4, 3, 3, 2),
                         "bias": _rows(rng, 4)}, {}),
    torch="conv2d",
    summary="3x2 kernels over a (2, 3, 6, 5) batch, stride (2, 1), padding 1, dilation (1, 2), 4 channels out",
    derivation_in_module=True))

ALIASES = {"sdpa": "scaled_dot_product_attention", "attention": "scaled_dot_product_attention",
           "layernorm": "layer_norm", "logsoftmax": "log_softmax", "crossentropy": "cross_entropy",
           "batchnorm": "batch_norm", "flash": "flash_attention", "patch": "patch_embed", "conv": "conv2d"}


def _fused_key(name: str) -> str:
    key = str(name).strip().lower().replace("-", "_")
    return ALIASES.get(key.replace("_", ""), ALIASES.get(key, key))


def op_spec(name: str) -> OpSpec:
    """The spec of the fused op ``name`` (hyphens/underscores and a few aliases accepted)."""
    key = _fused_key(name)
    if key not in OPS:
        raise ValueError(f"unknown op {name!r}; explain knows: {', '.join(OPS)} (fused) and "
                         f"{len(primitives())} primitives ('tinygrad-tx explain' lists them all)")
    return OPS[key]


# --------------------------------------------------------------------------- every other op

def _subclasses(cls):
    stack, found = list(cls.__subclasses__()), []
    while stack:
        c = stack.pop()
        found.append(c)
        stack.extend(c.__subclasses__())
    return found


def primitives() -> dict:
    """``{name: [ArrayFunction classes]}`` of every public op of the engine that is not one of the
    fused ops' pages (:data:`OPS`), keyed by the op's name in lower case: the class name without
    the ``Fn`` suffix of a Function that shares its name with an nn Module (``matmul``, ``tanh``
    for ``TanhFn``, ``im2col``, ``softmaxclosedform``)."""
    from .. import nn  # noqa: F401 - every op module is imported, so every Function is known
    from ..core.function import ArrayFunction
    fused = {spec.function for spec in OPS.values()}
    found: dict = {}
    for cls in sorted(_subclasses(ArrayFunction), key=lambda c: (c.__name__, c.__module__)):
        if cls.__name__.startswith("_") or cls in fused or not cls.__module__.startswith("tinygrad_tx.") \
                or cls.__module__.startswith("tinygrad_tx.exercises."):   # the learner's exercises
            continue
        found.setdefault(cls.name().lower(), []).append(cls)
    return found


def find_op(name: str):
    """``("fused", OpSpec)`` or ``("primitive", [classes])`` for ``name``, any case, with or without
    ``_``/``-``: a fused op's name or alias; an ArrayFunction's class name, with or without its
    ``Fn`` suffix (``matmul``, ``MatMul``, ``log-sigmoid``, ``TanhFn``); a ``grad_fn`` name as a
    learner sees it when walking the graph (``TanhBackward0``, ``SelectBackward0``); or the name
    of the torch function, Tensor method or nn Module a learner calls (``max_pool2d``,
    ``mse_loss``, ``cummax``, ``nn.MaxPool2d``), found by the Functions its code applies, or, where
    its code reaches them through Tensor methods, by running it on small inputs (:func:`_by_running`;
    an op without a derivative -- ``eq``, ``argmax`` -- is ``("nondifferentiable", (name, fn))``).
    ValueError for an unknown name, with the closest known names."""
    if _fused_key(name) in OPS:
        return "fused", OPS[_fused_key(name)]
    key = str(name).strip().lower().replace("-", "").replace("_", "")
    if key.endswith("fn") and len(key) > 2:     # the class name of an engine Function (SoftmaxFn)
        key = key[:-2]
    for found in (_by_class_name(key), _by_grad_fn_name(name), _by_public_name(name)):
        if found is not None:
            return found
    found = _by_running(name)
    if found is not None:
        return found
    raise ValueError(_unknown_op_message(name))


_PROBE_MODULES = ("tinygrad_tx.ops.", "tinygrad_tx.functional.resample", "tinygrad_tx.tensor")


def _probe_arguments():
    """Small float64 inputs for :func:`_by_running`: one to three tensors of one shape, a tensor
    and a number or dims, vectors. Fixed values (no draw from the engine's generator)."""
    rng = np.random.default_rng(0)
    m = [Tensor(rng.standard_normal((3, 3))) for _ in range(3)]
    b = [Tensor(rng.standard_normal((2, 3, 3))) for _ in range(3)]
    v = [Tensor(np.sort(rng.standard_normal(3))) for _ in range(2)]
    q, p = Tensor(rng.standard_normal((2, 4, 4))), Tensor(rng.standard_normal((1, 4, 2, 2)))
    ints = [Tensor(np.array([0, 1, 1, 3])), Tensor(np.array([2, 1, 0, 3]))]
    return [(m[0],), (m[0], m[1]), (m[0], m[1], m[2]), (b[0], b[1], b[2]), (b[0], b[1]), (m[0], v[0]),
            (v[0], m[0], v[1]), (v[0], m[0]), (m[0], Tensor(rng.standard_normal(9))), (v[0], v[1]), (v[0],), (m[0], 2), (q, 2), (p, 2), (m[0], 1, (3, 1)), (m[0], 0, 1),
            ("ij,jk->ik", m[0], m[1]), (Tensor(np.array(0.5)),), (ints[0],), (ints[0], ints[1]),
            (m[0], v[0], v[1])]        # a matrix and two vectors: addr


def _by_running(name: str):
    """The engine Functions of a tensor op that reading its code cannot find (it applies them
    through Tensor methods: ``mm``, ``t``, ``split``), found by running it on small float64 inputs
    (:func:`_probe_arguments`, first that it accepts) and reading its result's graph; an op that
    runs and makes no graph (``eq``, ``argmax``) is ``("nondifferentiable", (name, fn))``. Only ops
    of ``tinygrad_tx.ops`` and the like are run (no factory, random draw, file or setting), never an
    in-place one."""
    import warnings

    import tinygrad_tx
    text = str(name).strip().split(".")[-1]
    if text.endswith("_") or text.startswith("_"):
        return None
    fn, as_method = getattr(tinygrad_tx, text, None), False
    if fn is None:
        fn, as_method = getattr(Tensor, text, None), True
    module = getattr(inspect.unwrap(fn), "__module__", "") if callable(fn) else ""
    if not module or not module.startswith(_PROBE_MODULES) or isinstance(fn, type):
        return None
    for args in _probe_arguments():
        leaves = [a.detach().requires_grad_(a.dtype.kind == "f") if isinstance(a, Tensor) else a for a in args]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = fn(*leaves)
        except Exception:          # noqa: BLE001 - not this argument list: try the next
            continue
        outs = out if isinstance(out, (tuple, list)) else [out]
        if not all(isinstance(o, Tensor) for o in outs) or all(any(o is a for a in leaves) for o in outs):
            continue               # not a tensor op, or it returned its input as it is (atleast_2d of a matrix)
        classes, seen, stack = [], set(), [o.grad_fn for o in outs]
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            cls = getattr(node, "fn", None)
            if cls is not None and cls not in classes:
                classes.append(cls)
            stack.extend(n for n, _ in getattr(node, "next_functions", ()))
        return _classified(classes) if classes else ("nondifferentiable", (text, fn))
    return None


def _by_class_name(key: str):
    fused_by_class = {spec.function.name().lower(): spec for spec in OPS.values()}
    if key in fused_by_class:
        return "fused", fused_by_class[key]
    prims = primitives()
    return ("primitive", prims[key]) if key in prims else None


def _classified(classes):
    """A fused op's page when one of ``classes`` is a fused op's Function, else the primitives."""
    by_function = {spec.function: spec for spec in OPS.values()}
    for cls in classes:
        if cls in by_function:
            return "fused", by_function[cls]
    return ("primitive", list(classes)) if classes else None


def _by_grad_fn_name(name: str):
    """``TanhBackward0`` -> Tanh: the Functions whose graph nodes carry that torch name."""
    import re
    text = str(name).strip()
    if not re.fullmatch(r"[A-Za-z0-9_]+Backward\d*", text):
        return None
    wanted = text.lower()
    try:
        from ..autograd.node_names import torch_names
    except ImportError:          # the engine's own node names only: <Function name>Backward0
        def torch_names(cls):
            return (f"{cls.name()}Backward0",)
    classes = [cls for spec in OPS.values() for cls in (spec.function,)]
    classes += [cls for group in primitives().values() for cls in group]
    hits = [cls for cls in classes
            if wanted in {n.lower() for n in torch_names(cls)} or wanted == f"{cls.name()}backward0".lower()]
    return _classified(list(dict.fromkeys(hits)))


def _public_callables(name: str) -> list:
    """What a learner may mean by ``name``: ``tinygrad_tx.<name>``, ``nn.functional.<name>``,
    ``linalg.<name>``, ``Tensor.<name>`` and the nn Module of that name (a dotted prefix such as
    ``torch.nn.functional.`` or ``F.`` is dropped; a Module matches in any case)."""
    import tinygrad_tx
    from .. import nn
    text = str(name).strip().split(".")[-1]
    found = []
    for where in (nn.functional, tinygrad_tx, getattr(tinygrad_tx, "linalg", None), Tensor):
        fn = getattr(where, text, None) if where is not None else None
        if callable(fn) and not isinstance(fn, type):
            found.append(fn)
    modules = {k.lower(): v for k, v in vars(nn).items() if isinstance(v, type) and issubclass(v, nn.Module)}
    if text.lower() in modules:
        found.append(modules[text.lower()].forward)
    return found


def functions_behind(fn, depth: int = 4) -> list:
    """The engine Functions (ArrayFunction subclasses) that ``fn``'s code applies, found by
    reading the names its code (and the code it calls, ``depth`` levels down) refers to."""
    from ..core.function import ArrayFunction
    found, seen, todo = [], set(), [(fn, depth)]
    while todo:
        f, d = todo.pop(0)
        f = inspect.unwrap(getattr(f, "__func__", f))
        code = getattr(f, "__code__", None)
        if code is None or id(f) in seen:
            continue
        seen.add(id(f))
        names, stack = set(), [code]
        while stack:                     # nested functions and lambdas too
            c = stack.pop()
            names.update(c.co_names)
            stack.extend(k for k in c.co_consts if inspect.iscode(k))
        scope = dict(getattr(f, "__globals__", {}))
        modules = [v for v in scope.values() if inspect.ismodule(v) and v.__name__.startswith("tinygrad_tx")]
        for n in sorted(names):
            for v in [scope.get(n)] + [getattr(m, n, None) for m in modules]:
                if isinstance(v, type) and issubclass(v, ArrayFunction) and not v.__name__.startswith("_") \
                        and v.__module__.startswith("tinygrad_tx.") and v not in found:
                    found.append(v)
                elif d > 0 and inspect.isfunction(v) and v.__module__ and v.__module__.startswith("tinygrad_tx."):
                    todo.append((v, d - 1))
    return found


def _by_public_name(name: str):
    for fn in _public_callables(name):
        classes = functions_behind(fn) or _through_late_imports(fn)
        if classes:
            return _classified(classes)
    return None


def _through_late_imports(fn) -> list:
    """A Module whose forward reaches its function through a late import (``_functional().ctc_loss``):
    the names its code uses that are functions of ``nn.functional``."""
    from .. import nn
    code = getattr(inspect.unwrap(fn), "__code__", None)
    names = code.co_names if code is not None else ()
    found = []
    for n in names:
        f = getattr(nn.functional, n, None)
        if inspect.isfunction(f):
            found += [c for c in functions_behind(f) if c not in found]
    return found


def known_names() -> list[str]:
    """Every name ``explain`` answers to that a suggestion may offer."""
    import tinygrad_tx
    from .. import nn
    names = set(OPS) | set(ALIASES) | set(primitives())
    names |= {n for n in dir(nn.functional) if not n.startswith("_") and callable(getattr(nn.functional, n))}
    names |= {n for n, v in vars(nn).items() if isinstance(v, type) and issubclass(v, nn.Module)}
    names |= {n for n in dir(tinygrad_tx) if not n.startswith("_") and inspect.isfunction(getattr(tinygrad_tx, n))}
    return sorted(names)


def _unknown_op_message(name: str) -> str:
    import difflib
    close = difflib.get_close_matches(str(name), known_names(), n=5, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(str(name).lower(), [n.lower() for n in known_names()], n=5, cutoff=0.6)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    return (f"unknown op {name!r}; explain knows: {', '.join(OPS)} (fused) and {len(primitives())} primitives, "
            f"by their class names, grad_fn names (TanhBackward0) or the torch function, method or Module "
            f"that applies them (max_pool2d, nn.MaxPool2d) ('tinygrad-tx explain' lists them all).{hint}")


def twice_differentiable(cls) -> str:
    """One line: whether ``cls``'s gradient can be differentiated again, and through what."""
    via = getattr(cls, "twice_differentiable_via", None)
    if getattr(cls, "differentiable_backward", False):
        return ("yes: its backward is written to run on Tensors too (differentiable_backward = True), so "
                "backward(create_graph=True) records the backward itself and its gradient can be differentiated")
    if via is not None:
        return (f"yes, through its closed form {via.__name__} (twice_differentiable_via): under "
                "create_graph=True the engine replays that closed form on Tensors and differentiates it")
    return ("no: once differentiable (differentiable_backward = False); backward(create_graph=True) through it "
            "raises, naming it")


POSITIVE = {"log", "log2", "log10", "sqrt", "rsqrt", "reciprocal", "pow", "xlogy", "digamma", "lgamma"}
UNIT = {"asin", "acos", "atanh", "erfinv", "logit"}


def _snake(name: str) -> str:
    import re
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


# ops whose function needs more than float arrays: (dotted name, number of float inputs, keyword
# arguments), the same call in tinygrad_tx and torch
CALLS = {
    "MaxAll": ("max", 1, {}), "MedianAll": ("median", 1, {}), "VectorNorm": ("linalg.vector_norm", 1, {}),
    "Triangle": ("tril", 1, {}), "Flip": ("flip", 1, {"dims": (0,)}), "Roll": ("roll", 1, {"shifts": 1, "dims": 1}),
    "Clamp": ("clamp", 1, {"min": -0.5, "max": 0.5}), "CumSum": ("cumsum", 1, {"dim": 1}),
    "CumProd": ("cumprod", 1, {"dim": 1}), "LogCumSumExp": ("logcumsumexp", 1, {"dim": 1}),
    "LogSumExp": ("logsumexp", 1, {"dim": 1}),
    "SquaredError": ("nn.functional.mse_loss", 2, {"reduction": "none"}),
    "AbsoluteError": ("nn.functional.l1_loss", 2, {"reduction": "none"}),
    "HuberError": ("nn.functional.huber_loss", 2, {"reduction": "none"}),
    "SmoothL1Error": ("nn.functional.smooth_l1_loss", 2, {"reduction": "none"}),
}


class _In(int):
    """In a :data:`SAMPLES` argument list: the i-th float input (the one that gets a gradient)."""


def _log_softmax(a, axis=-1):
    a = a - a.max(axis=axis, keepdims=True)
    return a - np.log(np.exp(a).sum(axis=axis, keepdims=True))


# ops that need more than float arrays of one shape, called as a learner calls them: class name ->
# (dotted name, rng -> (float inputs, positional arguments with _In(i) for input i and integer
# arrays for indices/targets/lengths, keyword arguments)); a tuple result is checked on its first
# element (cummax's values)
SAMPLES = {
    "MaxPool": ("nn.functional.max_pool2d",
                lambda rng: ([rng.standard_normal((2, 3, 6, 6))], [_In(0)], {"kernel_size": 2, "stride": 2})),
    "CumExtreme": ("cummax", lambda rng: ([rng.standard_normal((3, 5))], [_In(0)], {"dim": 1})),
    "ScatterReduce": ("scatter_reduce", lambda rng: (
        [rng.standard_normal((3, 4)), rng.standard_normal((3, 5))],
        [_In(0), 1, rng.integers(0, 4, size=(3, 5)), _In(1)], {"reduce": "amax"})),
    "ScatterReduceProd": ("scatter_reduce", lambda rng: (
        [rng.standard_normal((3, 4)), rng.standard_normal((3, 5))],
        [_In(0), 1, rng.integers(0, 4, size=(3, 5)), _In(1)], {"reduce": "prod"})),
    "LinalgDet": ("linalg.det", lambda rng: ([rng.standard_normal((2, 3, 3)) + 2 * np.eye(3)], [_In(0)], {})),
    "LinalgInvEx": ("linalg.inv", lambda rng: ([rng.standard_normal((2, 3, 3)) + 2 * np.eye(3)], [_In(0)], {})),
    "LinalgSolveEx": ("linalg.solve", lambda rng: (
        [rng.standard_normal((2, 3, 3)) + 2 * np.eye(3), rng.standard_normal((2, 3, 2))], [_In(0), _In(1)], {})),
    "CTCLossFn": ("nn.functional.ctc_loss", lambda rng: (
        [_log_softmax(rng.standard_normal((8, 2, 5)))],
        [_In(0), rng.integers(1, 5, size=(2, 3)), np.array([8, 7]), np.array([3, 2])], {"reduction": "none"})),
}


def _sample_args(args, tensors, make_index):
    """The positional arguments of a :data:`SAMPLES` call with the inputs and index arrays filled in."""
    return [tensors[a] if isinstance(a, _In) else make_index(a) if isinstance(a, np.ndarray) else a for a in args]


def _resolve(module, dotted: str):
    for part in dotted.split("."):
        module = getattr(module, part, None)
    return module


def _torch_call(cls):
    """``(tinygrad_tx function, its dotted name, number of array inputs, keyword arguments)`` that
    computes ``cls`` on its own, for the live check; None when no such function is found."""
    from .. import nn
    import tinygrad_tx
    if cls.__name__ in CALLS:
        dotted, arity, kwargs = CALLS[cls.__name__]
        return _resolve(tinygrad_tx, dotted), dotted, arity, kwargs
    params = [p for p in inspect.signature(cls.forward).parameters.values()][1:]
    arity = sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                and p.default is p.empty)
    if arity < 1 or any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    for name in dict.fromkeys((cls.name().lower(), _snake(cls.name()))):
        for where, module in (("", tinygrad_tx), ("nn.functional.", nn.functional)):
            fn = getattr(module, name, None)
            if callable(fn) and not isinstance(fn, type):
                return fn, where + name, arity, {}
    return None


def _primitive_inputs(name: str, arity: int, rng) -> list:
    shapes = [(3, 4), (4, 5)] if name == "matmul" else [(3, 4)] * arity
    arrays = [rng.standard_normal(s) for s in shapes]
    if name in POSITIVE:
        arrays = [np.abs(a) + 0.5 for a in arrays]
    elif name in UNIT:
        arrays = [0.4 * np.tanh(a) + (0.5 if name == "logit" else 0.0) for a in arrays]
    elif name == "acosh":
        arrays = [np.abs(a) + 1.5 for a in arrays]
    return arrays


def _closed_form_check(name: str, seed: int, use_torch: bool) -> list[str]:
    """The live check of a fused op's rung 2, from that op's own check (:func:`live_check`)."""
    check = live_check(name, seed=seed, use_torch=use_torch)
    lines = [f"    the closed form on {name}'s check ({OPS[name].summary}), float64, seed {seed}, random "
             f"cotangent g; torch: {check['torch_status']}"]
    for (what, rung, versus), err in check["errors"].items():
        if rung == "closed_form":
            lines.append(f"    {what + ' vs ' + versus:<24}{err:.2e}")
    return lines


def primitive_check(cls, seed: int = 0, use_torch: bool = True) -> list[str]:
    """Lines of the live check of a primitive: ``tinygrad_tx.<name>`` on random float64 inputs with
    a random cotangent, output and every input gradient against ``torch.<name>``; a closed form
    is checked on its fused op's inputs."""
    for name in OPS:
        if OPS[name].closed_function is cls:
            return _closed_form_check(name, seed, use_torch)
    rng = np.random.default_rng(seed)
    if cls.__name__ in SAMPLES:
        import tinygrad_tx
        dotted, build = SAMPLES[cls.__name__]
        fn = _resolve(tinygrad_tx, dotted)
        arrays, args, kwargs = build(rng)
        arity = len(arrays)
    else:
        call = _torch_call(cls)
        if call is None:
            return [f"    skipped: no function of tinygrad_tx computes {cls.__name__} alone from array inputs; "
                    "its parity tests are in tests/ (grep the class name)"]
        fn, dotted, arity, kwargs = call
        arrays = _primitive_inputs(dotted.split(".")[-1], arity, rng)
        args = [_In(i) for i in range(arity)]
    tensors = [Tensor(np.array(a), requires_grad=True) for a in arrays]
    try:
        out = fn(*_sample_args(args, tensors, lambda a: Tensor(np.array(a, dtype=np.int64))), **kwargs)
    except Exception as e:   # noqa: BLE001 - any failure means: this function is not the op alone
        return [f"    skipped: tinygrad_tx.{dotted} does not take {arity} float array input(s) "
                f"({type(e).__name__}: {e}); its parity tests are in tests/"]
    if isinstance(out, tuple):      # (values, indices): the values carry the gradient
        out = out[0]
    if not isinstance(out, Tensor) or out._ctx is None or out._ctx.fn is not cls:
        return [f"    skipped: tinygrad_tx.{dotted} does not record {cls.__name__} as its last node"]
    cotangent = rng.standard_normal(out.shape)
    try:
        with trace_backward() as trace:
            out.backward(cotangent)
    except RuntimeError as e:       # an op without a derivative says so, as torch's does
        return [f"    tinygrad_tx.{dotted}: its backward raises, as torch's does: {e}"]
    shapes = ", ".join(str(tuple(a.shape)) for a in arrays)
    shown = "".join(f", {k}={v!r}" for k, v in kwargs.items())
    lines = [f"    tinygrad_tx.{dotted}(<{arity} input{'s' if arity > 1 else ''}>{shown}) on float64 inputs {shapes}, "
             f"seed {seed}; output {tuple(out.shape)}, random cotangent g, backward(g): {_nodes(len(trace))}, "
             f"saved {trace.total_saved_bytes:,} B"]
    if not use_torch:
        return lines + ["    torch: not requested"]
    twins, status = torch_twins()
    if twins is None:
        return lines + [f"    torch: {status}"]
    try:
        t_out, t_grads = twins.run_torch_call(dotted, arrays, args, cotangent, **kwargs)
    except Exception as e:   # noqa: BLE001 - torch's own spelling differs: say so, do not fail the page
        return lines + [f"    torch: torch.{dotted} could not be compared ({type(e).__name__}: {e})"]
    lines.append(f"    torch: {status}, torch.{dotted}")
    lines.append(f"    output vs torch        {rel_err(out._data, t_out):.2e}")
    for i, (t, g) in enumerate(zip(tensors, t_grads)):
        ours = np.zeros_like(arrays[i]) if t.grad is None else t.grad._data
        lines.append(f"    grad input {i} vs torch  {rel_err(ours, g):.2e}")
    lines.append("    (relative errors max|a - b| / max|b|; float64 rounding is ~1e-16)")
    return lines


def explain_primitive(cls, seed: int = 0, use_torch: bool = True, source: bool = True) -> str:
    """The page of one ArrayFunction: where it is, its rungs, its derivation (the class
    docstring), forward and backward source, twice differentiability and a live check."""
    name = cls.__name__
    closed = getattr(cls, "twice_differentiable_via", None)
    out = [f"{name}: {'a closed form (rung 2 of a fused op)' if name.endswith('ClosedForm') else 'a primitive'}"
           f" — ArrayFunction {cls.__module__}.{name}  ({_location(cls)})",
           "  rungs: one — its forward and hand-written backward are the definition" +
           (f"; its closed form is {closed.__name__} ({_location(closed)})" if closed is not None else ""),
           f"  twice differentiable: {twice_differentiable(cls)}", "",
           "Derivation (class docstring)", _indent(inspect.getdoc(cls) or "(none)"), ""]
    if source:
        out += ["    Forward", _indent(_source(cls.forward), "        "), "",
                "    Backward (hand-written)", _indent(_source(cls.backward), "        "), ""]
    out += ["Live check"] + primitive_check(cls, seed=seed, use_torch=use_torch)
    return "\n".join(out) + "\n"


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
    """The report described in the module docstring, as one string: a fused op's three rungs,
    or any other op's page (:func:`explain_primitive`; every class of that name)."""
    kind, found = find_op(op)
    if kind == "nondifferentiable":
        name, fn = found
        return (f"{name}: not differentiable -- tinygrad_tx.{name} applies no engine Function, so its result has "
                f"no grad_fn and backward does not pass through it (torch's result has requires_grad=False too)\n"
                f"  defined in {_location(inspect.unwrap(fn))}\n\n{_indent(inspect.getdoc(fn) or '(no docstring)')}\n")
    if kind == "primitive":
        return "\n".join(explain_primitive(cls, seed=seed, use_torch=use_torch, source=source) for cls in found)
    spec = found
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
    out += [f"  3. fused        {cls.__module__}.{cls.__name__}  ({_location(cls)}), used by default",
            f"  twice differentiable: {twice_differentiable(cls)}", ""]
    if source:
        out += ["Rung 1 — composite (primitives; autograd differentiates it op by op)", _indent(_source(comp)), ""]
    if closed is not None:
        out += ["Rung 2 — closed form (the derivation as a plain Function)", _indent(inspect.getdoc(closed)), ""]
        if source:
            out += [_indent(_source(closed.forward)), "", _indent(_source(closed.backward)), ""]
    doc = inspect.getdoc(inspect.getmodule(cls)) if spec.derivation_in_module else inspect.getdoc(cls)
    out += ["Rung 3 — fused (the closed form tuned for speed; what it adds: "
            + ("module" if spec.derivation_in_module else "class") + " docstring)",
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
