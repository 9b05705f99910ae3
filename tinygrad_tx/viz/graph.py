"""The autograd graph as Graphviz DOT text, and its rendering to SVG/PNG.

What the picture shows
----------------------
Every Tensor produced by an op carries the :class:`~tinygrad_tx.autograd.Context` of the
``Function`` that made it (``tensor._ctx``); the context remembers the node behind each
input: the context that produced it, or the input Tensor itself when it is a leaf. That
chain of contexts *is* the graph ``backward`` walks. :func:`to_dot` draws it:

* one **box per Function call**: the Function's class name (``LinearFn``, ``SoftmaxFn``,
  ``ScaledDotProductAttention``, ...) and the shape of the tensor it produced (plus the
  bytes it saved for its backward with ``saved_bytes=True``);
* one **ellipse per leaf** that requires grad: a module parameter is labelled with its
  qualified name (``attn.c_attn.weight``; a tied weight with all its names), any other leaf
  with its ``Tensor.name`` or as ``input``, and its shape;
* with ``constants=True``, a grey note per input Tensor that needs no gradient (masks,
  targets as Tensors);
* a key of these colours (``legend=True``), and ``q``/``k``/``v`` on the three ``GetItem``
  ops that split a ``c_attn`` projection;
* an **arrow from each input to the op that consumed it**: the forward data flow.
  ``backward`` visits the boxes in the opposite direction, from the root at the bottom
  to the leaves at the top, and each box's ``backward`` turns the gradient of its output
  into gradients of its inputs.

Only tensors that require grad are part of the graph (the engine records nothing else),
so a frozen input or a bool mask appears only as a constant.

The traversal is iterative (an explicit stack), so a graph 100,000 ops deep is fine.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..core.tensor import Tensor

GRAPHVIZ_HINT = ("install Graphviz to render it (Debian/Ubuntu: apt-get install graphviz; macOS: brew install "
                 "graphviz; conda: conda install graphviz)")
FORMATS = ("dot", "svg", "png")
RENDERERS = ("auto", "graphviz", "builtin")


class GraphvizNotFound(RuntimeError):
    """The ``dot`` program is not on PATH; the DOT text was written, the picture was not."""


def _quote(text: str) -> str:
    """A DOT double-quoted string: backslashes and quotes escaped, newlines as ``\\n``."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _shape(shape) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def format_bytes(n: int) -> str:
    """1536 -> '1.5 KiB'."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0
    return f"{n:.1f} GiB"  # pragma: no cover - unreachable


def parameter_names(params) -> dict:
    """``id(tensor) -> label`` from a Module (every name of a tied Parameter, joined with ' = ')
    or a mapping ``name -> Tensor`` (e.g. ``dict(model.named_parameters())``)."""
    if params is None:
        return {}
    if hasattr(params, "named_parameters") and callable(params.named_parameters):
        items = params.named_parameters(remove_duplicate=False)
    elif isinstance(params, Mapping):
        items = params.items()
    else:
        raise TypeError(f"params must be a Module or a mapping name -> Tensor, got {type(params).__name__}")
    names: dict = {}
    for name, t in items:
        if not isinstance(t, Tensor):
            raise TypeError(f"params[{name!r}] is a {type(t).__name__}, not a Tensor")
        names.setdefault(id(t), []).append(name)
    return {k: " = ".join(v) for k, v in names.items()}


def leaf_label(t: Tensor, names: dict) -> str:
    """The name of a leaf: its parameter name, else its ``Tensor.name``, else None."""
    return names.get(id(t)) or t.name


def graph_nodes(root: Tensor):
    """Nodes of the graph that ends at ``root``, each once, in discovery order (root first).

    A node is a :class:`~tinygrad_tx.autograd.Context` (one recorded op: ``.fn``,
    ``.out_shape``, ``.name``, ``.saved_bytes``) or a leaf Tensor. Follows
    ``ctx.input_nodes`` of every recorded op with an explicit stack; yields
    ``(node, inputs)`` where ``inputs`` are the nodes of the op's Tensor inputs (empty
    for a leaf), in argument order.
    """
    if not isinstance(root, Tensor):
        raise TypeError(f"to_dot expects a Tensor, got {type(root).__name__}")
    start = root if root._ctx is None else root._ctx
    seen = {id(start)}
    stack = [start]
    while stack:
        node = stack.pop()
        if isinstance(node, Tensor):
            yield node, []
            continue
        if node._freed:
            raise RuntimeError(f"the graph through {node.fn.__name__} was freed by a backward pass; draw it "
                               "before calling backward (or call backward(retain_graph=True))")
        inputs = [a for a in node.input_nodes if a is not None]
        yield node, inputs
        for a in reversed(inputs):
            if id(a) not in seen:
                seen.add(id(a))
                stack.append(a)


# (fill colour, shape, legend text) of each kind of node
STYLES = {
    "op": ("#dbe8f6", "box", "Function call (op)"),
    "root": ("#f6dbdb", "box", "the output (backward starts here)"),
    "parameter": ("#e3f2d9", "ellipse", "parameter (leaf, by name)"),
    "input": ("#fff4c2", "ellipse", "other leaf that needs grad"),
    "constant": ("#eeeeee", "note", "input without grad"),
}
QKV = ("q", "k", "v")


def _label(node):
    """The label of a graph node: a leaf Tensor's ``name``, an op node's ``label``."""
    return node.name if isinstance(node, Tensor) else node.label


def split_names(nodes) -> dict:
    """``id(ctx) -> 'q' | 'k' | 'v'`` for the three ``GetItem`` ops that split the output of a
    module named ``...c_attn`` (the fused Q/K/V projection), in the order ``split`` made them."""
    children: dict = {}
    for node, inputs in nodes:
        if not isinstance(node, Tensor) and node.fn.__name__ == "GetItem" and inputs:
            src = inputs[0]
            if (_label(src) or "").split(".")[-1] == "c_attn":
                children.setdefault(id(src), []).append(node)
    labels = {}
    for group in children.values():
        if len(group) == 3:
            for label, ctx in zip(QKV, sorted(group, key=lambda c: c.seq)):
                labels[id(ctx)] = label
    return labels


def _legend(kinds) -> list[str]:
    """A boxed key of the node colours present in the graph (node ids ``legend*``, no edges)."""
    lines = ["  subgraph cluster_legend {", '    label="key"; fontsize=9; color=gray60; style=rounded;']
    present = [k for k in STYLES if k in kinds]
    for i, kind in reversed(list(enumerate(present))):   # dot lays a cluster's loose nodes out right to left
        fill, shape, text = STYLES[kind]
        style = "rounded,filled" if shape == "box" else "filled"
        lines.append(f"    legend{i} [label={_quote(text)}, shape={shape}, style=\"{style}\", "
                     f"fillcolor=\"{fill}\", fontsize=9];")
    lines.append("  }")
    return lines


def to_dot(tensor: Tensor, params=None, *, constants: bool = False, saved_bytes: bool = False,
           title: str | None = None, rankdir: str = "TB", legend: bool = True) -> str:
    """The autograd graph that produced ``tensor`` as Graphviz DOT text.

    Parameters
    ----------
    tensor:
        The output whose graph to draw (a loss, a module's output).
    params:
        A Module, or a mapping ``name -> Tensor`` (``dict(model.named_parameters())``), whose
        parameters are labelled by their qualified names. Leaves not found there use their
        ``Tensor.name`` (set it on inputs: ``x.name = "x"``).
    constants:
        Also draw the input Tensors that need no gradient (grey notes).
    saved_bytes:
        Add to every op the bytes it saved for its backward (``ctx.saved_bytes``): compare
        a fused op with its composite.
    title:
        A caption drawn under the graph.
    rankdir:
        Graphviz layout direction, ``'TB'`` (inputs at the top) or ``'LR'``.
    legend:
        Draw a key of the node colours (op, output, parameter, other leaf, constant).

    The three ``GetItem`` ops that split the output of a ``c_attn`` projection are labelled
    ``q``, ``k`` and ``v`` (:func:`split_names`).

    See the module docstring for what the boxes and arrows mean.
    """
    if rankdir not in ("TB", "LR", "BT", "RL"):
        raise ValueError(f"rankdir must be one of 'TB', 'LR', 'BT', 'RL', got {rankdir!r}")
    names = parameter_names(params)
    ids: dict = {}
    lines = ["digraph autograd {",
             f"  graph [rankdir={rankdir}, fontname=Helvetica, fontsize=11, nodesep=0.25, ranksep=0.35];",
             "  node [fontname=Helvetica, fontsize=10];",
             "  edge [color=gray30, arrowsize=0.7];"]
    if title:
        lines.append(f"  labelloc=b; label={_quote(title)};")
    edges = []

    def node_id(t):
        if id(t) not in ids:
            ids[id(t)] = f"n{len(ids)}"
        return ids[id(t)]

    root = tensor._ctx if isinstance(tensor, Tensor) and tensor._ctx is not None else tensor
    nodes = list(graph_nodes(tensor))
    qkv = split_names(nodes)
    kinds = set()
    for node, inputs in nodes:
        nid = node_id(node)
        if not isinstance(node, Tensor):    # an op
            label = f"{node.fn.__name__}\n{_shape(node.out_shape)}"
            name = node.label or qkv.get(id(node))
            if name:
                label = f"{name} = {label}"
            if saved_bytes:
                label += f"\nsaved {format_bytes(node.saved_bytes)}"
            kind = "root" if node is root else "op"
            kinds.add(kind)
            bold = ",bold" if node is root else ""
            style = f'shape=box, style="rounded,filled{bold}", fillcolor="{STYLES[kind][0]}"'
            lines.append(f"  {nid} [label={_quote(label)}, {style}];")
            for inp in inputs:
                if isinstance(inp, Tensor) and not inp.requires_grad and not constants:
                    continue
                edges.append(f"  {node_id(inp)} -> {nid};")
        elif node.requires_grad or node is root:
            name = leaf_label(node, names)
            kind = "parameter" if id(node) in names else "input"
            kinds.add(kind)
            label = f"{name or 'input'}\n{_shape(node.shape)}"
            fill = STYLES[kind][0]
            lines.append(f"  {nid} [label={_quote(label)}, shape=ellipse, style=filled, fillcolor=\"{fill}\"];")
        elif constants:
            kinds.add("constant")
            label = f"{node.name or 'constant'}\n{_shape(node.shape)} {node._data.dtype}"   # NumPy's name
            lines.append(f"  {nid} [label={_quote(label)}, shape=note, style=filled, fillcolor=\"#eeeeee\", "
                         "fontcolor=gray30];")
    lines.extend(edges)
    if legend:
        lines.extend(_legend(kinds))
    lines.append("}")
    return "\n".join(lines) + "\n"


def dot_program() -> str | None:
    """Path of Graphviz's ``dot`` program, or None when it is not installed."""
    return shutil.which("dot")


def write_graph(dot_text: str, path, format: str | None = None, renderer: str = "auto") -> list[Path]:
    """Write ``dot_text`` to ``path`` (its suffix, or ``format``, picks dot/svg/png).

    The DOT source is always written (as ``path`` itself, or beside it with the suffix
    ``.dot``). An SVG/PNG is drawn by ``renderer``: ``"auto"`` (Graphviz's ``dot`` when it is
    installed, else the built-in drawing), ``"graphviz"`` or ``"builtin"`` (:mod:`.render`:
    an SVG written directly, a PNG drawn with matplotlib; no system program). Returns the
    paths written. Raises :class:`GraphvizNotFound` (after writing the ``.dot`` file) when
    ``renderer="graphviz"`` and ``dot`` is not installed, and ``RuntimeError`` with its
    message when ``dot`` fails.
    """
    path = Path(path)
    fmt = (format or path.suffix.lstrip(".") or "dot").lower()
    if fmt not in FORMATS:
        raise ValueError(f"graph format must be one of {FORMATS}, got {fmt!r} (from {os.fspath(path)!r})")
    if renderer not in RENDERERS:
        raise ValueError(f"renderer must be one of {RENDERERS}, got {renderer!r}")
    if fmt != "dot" and path.suffix.lower() != "." + fmt:
        path = path.with_name(path.name + "." + fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    dot_path = path if fmt == "dot" else path.with_suffix(".dot")
    dot_path.write_text(dot_text)
    written = [dot_path]
    if fmt == "dot":
        return written
    exe = dot_program() if renderer != "builtin" else None
    if exe is None and renderer == "graphviz":
        raise GraphvizNotFound(f"Graphviz's 'dot' program is not installed, so {path} was not drawn; wrote the "
                               f"DOT source {dot_path} instead: {GRAPHVIZ_HINT}, then run "
                               f"'dot -T{fmt} {dot_path} -o {path}'")
    if exe is None:
        from . import render
        if fmt == "svg":
            path.write_text(render.to_svg_text(dot_text))
        else:
            render.write_png(dot_text, path)
        return written + [path]
    proc = subprocess.run([exe, f"-T{fmt}", os.fspath(dot_path), "-o", os.fspath(path)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"dot -T{fmt} {dot_path} failed (exit {proc.returncode}): {proc.stderr.strip()}")
    written.append(path)
    return written


def renderer_name(renderer: str = "auto") -> str:
    """Who draws an SVG/PNG under ``renderer``: ``"Graphviz's dot"`` or ``"the built-in drawing"``."""
    if renderer == "graphviz" or (renderer == "auto" and dot_program() is not None):
        return "Graphviz's dot"
    return "the built-in drawing, without Graphviz"


def graph_summary(tensor: Tensor) -> dict:
    """Counts of a graph: ``{"ops": n, "leaves": n, "saved_bytes": n, "by_op": {name: n}}``."""
    ops, leaves, saved, by_op = 0, 0, 0, {}
    for node, _ in graph_nodes(tensor):
        if isinstance(node, Tensor):
            leaves += node.requires_grad
            continue
        ops += 1
        saved += node.saved_bytes
        name = node.fn.__name__
        by_op[name] = by_op.get(name, 0) + 1
    return {"ops": ops, "leaves": leaves, "saved_bytes": int(saved), "by_op": by_op}


# --------------------------------------------------------------------------- naming activations

def _name_output(name, module, args, output):
    for t in output if isinstance(output, (tuple, list)) else (output,):
        if isinstance(t, Tensor) and t._ctx is not None and not any(t is a for a in args):
            t.name = name


@contextmanager
def name_activations(model):
    """Inside the block, every forward of a sub-module of ``model`` sets ``Tensor.name`` of its
    output to the sub-module's qualified name (``attn``, ``mlp``, ``blocks.0.ln1``): the graph
    and the backward trace then say which module produced each intermediate tensor.

    Uses ``Module.register_forward_hook``; the hooks are removed on exit. A tensor returned
    by nested modules (a Linear that is the last layer of ``mlp``) keeps the outermost name,
    because the outer module's hook runs last. A module that returns its input unchanged
    (Dropout with p = 0 or in eval mode) does not rename it; leaves are never renamed.
    """
    handles = [m.register_forward_hook(functools.partial(_name_output, name))
               for name, m in model.named_modules() if name]
    try:
        yield model
    finally:
        for h in handles:
            h.remove()


# --------------------------------------------------------------------------- small instances

def _attention_module(composite: bool):
    from ..models import CausalSelfAttention
    return CausalSelfAttention(8, 2, 4, dropout=0.0, attn_impl="naive" if composite else "fused")


def _block_module(composite: bool):
    from ..models import TransformerBlock
    return TransformerBlock(8, 2, 4, dropout=0.0, attn_impl="naive" if composite else "fused")


def example_graph(name: str, composite: bool = False, seed: int = 0):
    """``(output, params, description)`` of a small instance of ``name`` (one of
    :data:`EXAMPLES`), built with the real modules on random input ``x`` (named ``"x"``).

    ``composite=True`` builds the same computation from primitives where the example has a
    fused op: ``layer_norm_composite`` for ``layernorm``, the tutorial's line-by-line
    attention (scores, ``masked_fill``, softmax, ``@ v``; ``attn_impl='naive'``) for
    ``attention``, ``gpt-block`` and ``gpt``. Module outputs are named after their modules
    (:func:`name_activations`).
    """
    from .. import functional as F
    from .. import manual_seed, nn
    from ..models import GPTLanguageModel
    if name not in EXAMPLES:
        raise ValueError(f"unknown graph example {name!r}; choose one of {', '.join(EXAMPLES)}")
    manual_seed(seed)
    rng = np.random.default_rng(seed)
    x = Tensor(rng.standard_normal((1, 4, 8)).astype(np.float32), requires_grad=True)
    x.name = "x"
    kind = "composite" if composite else "fused"
    if name == "attention":
        m = _attention_module(composite)
        with name_activations(m):
            out = m(x)
        desc = f"CausalSelfAttention(d_model=8, n_heads=2), x (1, 4, 8), {kind} attention"
    elif name == "layernorm":
        m = nn.LayerNorm(8)
        fn = F.layer_norm_composite if composite else F.layer_norm
        out = fn(x, (8,), m.weight, m.bias)
        desc = f"LayerNorm(8), x (1, 4, 8), {'layer_norm_composite' if composite else 'fused layer_norm'}"
    elif name == "gpt-block":
        m = _block_module(composite)
        with name_activations(m):
            out = m(x)
        desc = f"TransformerBlock(d_model=8, n_heads=2), x (1, 4, 8), {kind} attention"
    else:  # gpt
        m = GPTLanguageModel(27, d_model=8, n_heads=2, n_layers=1, block_size=4, dropout=0.0,
                             attn_impl="naive" if composite else "fused")
        ids = rng.integers(0, 27, size=(1, 4))
        with name_activations(m):
            _, out = m(ids, ids)
        desc = f"GPTLanguageModel(vocab 27, d_model=8, 1 layer) loss on 4 tokens, {kind} attention"
    return out, m, desc


EXAMPLES = ("attention", "layernorm", "gpt-block", "gpt")
