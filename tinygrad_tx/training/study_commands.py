"""The study commands of ``tinygrad-tx``: ``graph``, ``trace``, ``explain`` and ``plot``.

``tinygrad_tx.cli`` calls :func:`register_study_commands` with its sub-command parsers;
each command returns an exit status (errors are raised as ValueError/OSError and turned
into one line by the CLI's ``main``).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

GRAPH_HELP = ("write the autograd graph of your script's first .backward() (FILE.py) or of a small instance "
              "(attention, layernorm, gpt-block, gpt) as DOT/SVG/PNG")
TRACE_HELP = ("run the backward of your script's first .backward() (FILE.py) or of a small instance and print "
              "every node in execution order")
EXPLAIN_HELP = ("show an op's derivation, forward and hand-written backward, its rungs (a fused op: composite, "
                "closed form, fused), whether it is twice differentiable, and a live check against torch")
SCRIPT_NOTE = ("FILE.py runs on tinygrad_tx as 'tinygrad-tx run' runs it (its `import torch` loads tinygrad_tx) "
               "up to its first .backward(), which is the one studied; the rest of the script does not run. "
               "--call EXPR: run FILE.py as a module instead, then evaluate EXPR in its namespace and study the "
               "first .backward() EXPR calls (or, when it calls none, the backward of the Tensor it returns). "
               "Leaves are named after the script's variables (module parameters, tensors that require grad).")


def _example_or_file(value: str) -> str:
    """argparse type of the EXAMPLE|FILE.py argument: an example name, or a path ending in .py
    or naming an existing file."""
    from ..viz.graph import EXAMPLES
    if value in EXAMPLES or value.endswith(".py") or Path(value).exists():
        return value
    raise argparse.ArgumentTypeError(f"{value!r} is neither an example ({', '.join(EXAMPLES)}) nor a Python "
                                     "file (FILE.py)")
PLOT_HELP = ("draw the tutorial's pictures (PNG): the bigram matrix, 3-D embeddings, attention heat-maps, "
             "and section 1's and 10.3's measured claims (seq-cost, grad-distance, name-models, digits-data)")

PROG = "tinygrad-tx"
EMBEDDINGS_OUT = "runs/embeddings/model.safetensors"
ATTENTION_OUT = "runs/attention/model.safetensors"


def register_study_commands(commands) -> None:
    """Add ``graph``, ``trace``, ``explain`` and ``plot`` to the ``tinygrad-tx`` sub-commands."""
    from ..viz.explain import OPS
    from ..viz.graph import EXAMPLES

    def debug_flag(p):
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)

    g = commands.add_parser("graph", help=GRAPH_HELP, description=GRAPH_HELP + ". Boxes are Function calls "
                            "(name, output shape), ellipses are leaves (parameters by name), arrows the forward "
                            "data flow; backward walks them in reverse. " + SCRIPT_NOTE)
    g.add_argument("example", type=_example_or_file, metavar="EXAMPLE|FILE.py",
                   help="what to draw: one of " + ", ".join(EXAMPLES) + ", or your script")
    g.add_argument("--call", default=None, metavar="EXPR", help="with FILE.py: the expression whose backward to draw")
    g.add_argument("-o", "--out", default=None, metavar="PATH",
                   help="output file; its suffix (.dot/.svg/.png) picks the format (default: runs/graph/NAME.svg; "
                        "the DOT source is always written beside it). Drawn by Graphviz's dot when it is "
                        "installed, else by the built-in drawing (an SVG written directly, a PNG with matplotlib)")
    fmt = g.add_mutually_exclusive_group()
    fmt.add_argument("--svg", dest="format", action="store_const", const="svg", help="draw an SVG")
    fmt.add_argument("--png", dest="format", action="store_const", const="png", help="draw a PNG")
    g.add_argument("--renderer", choices=("auto", "graphviz", "builtin"), default="auto",
                   help="who draws the SVG/PNG: Graphviz's dot when installed, else built in (auto, the default); "
                        "graphviz: fail without it; builtin: never use it")
    g.add_argument("--composite", action="store_true",
                   help="build it from primitives where it has a fused op (layer_norm_composite; the tutorial's "
                        "line-by-line attention)")
    g.add_argument("--saved-bytes", action="store_true", help="label every op with the bytes it saved for backward")
    g.add_argument("--constants", action="store_true", help="also draw inputs that need no gradient")
    debug_flag(g)
    g.set_defaults(func=cmd_graph)

    t = commands.add_parser("trace", help=TRACE_HELP, description=TRACE_HELP + ": Function, output shape, "
                            "gradient norms of its output and inputs, bytes saved; then the gradient norm that "
                            "reached every parameter. " + SCRIPT_NOTE)
    t.add_argument("example", type=_example_or_file, metavar="EXAMPLE|FILE.py",
                   help="what to run: one of " + ", ".join(EXAMPLES) + ", or your script")
    t.add_argument("--call", default=None, metavar="EXPR", help="with FILE.py: the expression whose backward to trace")
    t.add_argument("--composite", action="store_true", help="as for 'graph'")
    t.add_argument("--seed", type=int, default=0, help="seed of the weights, input and cotangent (default: 0)")
    debug_flag(t)
    t.set_defaults(func=cmd_trace)

    e = commands.add_parser("explain", help=EXPLAIN_HELP, description=EXPLAIN_HELP + ". Without OP: list the ops.")
    e.add_argument("op", nargs="?", default=None, metavar="OP",
                   help="a fused op (" + ", ".join(OPS) + ") or any ArrayFunction of the engine (matmul, tanh, ...)")
    e.add_argument("--no-source", dest="source", action="store_false", help="skip the source listings")
    e.add_argument("--no-torch", dest="torch", action="store_false", help="skip the PyTorch comparison")
    e.add_argument("--seed", type=int, default=0, help="seed of the random input and cotangent (default: 0)")
    e.add_argument("--kernel", action="store_true",
                   help="print the C kernels the op runs where a compiler is found (tinygrad_tx/kernels)")
    debug_flag(e)
    e.set_defaults(func=cmd_explain)

    p = commands.add_parser("plot", help=PLOT_HELP, description=PLOT_HELP + ".")
    pictures = p.add_subparsers(dest="picture", metavar="PICTURE")
    pictures.required = True

    b = pictures.add_parser("bigram", help="the bigram count matrix N(c_i, c_j) of the training names",
                            description="The section-3.2 count matrix of the training split as an image.")
    b.add_argument("--data", default=None, metavar="PATH", help="names file (default: the offline census names)")
    b.add_argument("--split-seed", type=int, default=42, help="seed of the 80/10/10 split (default: 42)")
    b.add_argument("-o", "--out", default="runs/plots/bigram.png", metavar="PNG", help="(default: %(default)s)")
    debug_flag(b)
    b.set_defaults(func=cmd_plot_bigram)

    em = pictures.add_parser("embeddings", help="train the names GPT with d_model = 3 and scatter the 27 characters",
                             description="Section 5.4: the learned character embeddings in 3-D. Trains the "
                                         "names GPT with d_model = 3 (or loads --checkpoint), writes the scatter "
                                         "and prints how close the vowels came together.")
    _model_flags(em, EMBEDDINGS_OUT, d_model=3, n_heads=1, n_layers=4, steps=1500, lr=1e-2)
    em.add_argument("-o", "--out", default="runs/plots/embeddings.png", metavar="PNG",
                    help="(default: %(default)s)")
    debug_flag(em)
    em.set_defaults(func=cmd_plot_embeddings)

    at = pictures.add_parser("attention", help="attention heat-maps of a names GPT over one name",
                             description="Section 6: the attention weights of every head of every layer of a "
                                         "names GPT reading '$' + NAME. Trains a small GPT (or loads --checkpoint).")
    at.add_argument("--name", default="emma", help="the name to read (default: %(default)s)")
    _model_flags(at, ATTENTION_OUT, d_model=32, n_heads=4, n_layers=2, steps=1000, lr=3e-3)
    at.add_argument("-o", "--out", default="runs/plots/attention.png", metavar="PNG",
                    help="(default: %(default)s)")
    debug_flag(at)
    at.set_defaults(func=cmd_plot_attention)

    from .experiments import register_claim_plots   # plot seq-cost, plot grad-distance: section 1 measured
    register_claim_plots(pictures, debug_flag)
    from .model_claims import register_model_plots   # plot name-models, plot digits-data
    register_model_plots(pictures, debug_flag)


def _model_flags(p, default_out, **defaults):
    from .._argtypes import number   # the CLI's checked int/float argument types
    p.add_argument("--checkpoint", default=None, metavar="PATH",
                   help="use this 'train gpt' checkpoint instead of training one")
    p.add_argument("--data", default=None, metavar="PATH", help="names file (default: the offline census names)")
    p.add_argument("--d-model", type=number(int, 1), default=defaults["d_model"], help="(default: %(default)s)")
    p.add_argument("--n-heads", type=number(int, 1), default=defaults["n_heads"], help="(default: %(default)s)")
    p.add_argument("--n-layers", type=number(int, 1), default=defaults["n_layers"], help="(default: %(default)s)")
    p.add_argument("--steps", type=number(int, 1), default=defaults["steps"], help="(default: %(default)s)")
    p.add_argument("--lr", type=number(float, 1e-12), default=defaults["lr"], help="(default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="(default: %(default)s)")
    p.add_argument("--save", default=default_out, metavar="PATH",
                   help="where the trained checkpoint goes (default: %(default)s)")


# --------------------------------------------------------------------------- graph and trace

def _is_example(args) -> bool:
    from ..viz.graph import EXAMPLES
    if args.example in EXAMPLES:
        if args.call is not None:
            raise ValueError(f"--call {args.call!r} applies to a script (FILE.py), not to the example "
                             f"{args.example!r}")
        return True
    if args.composite:
        raise ValueError(f"--composite applies to the examples, not to a script ({args.example})")
    return False


def _script_backward(args):
    """The first backward of the script ``args.example`` (see :mod:`.script`); None after printing
    the script's own traceback when it raised."""
    from ..viz.script import ScriptFailed, first_backward, print_script_error
    try:
        return first_backward(args.example, call=args.call, seed=args.seed if hasattr(args, "seed") else 0)
    except ScriptFailed as failed:
        print_script_error(failed, debug=getattr(args, "debug", False))
        return None


def cmd_graph(args) -> int:
    from ..viz.graph import GraphvizNotFound, example_graph, graph_summary, renderer_name, to_dot, write_graph
    if _is_example(args):
        out, module, desc = example_graph(args.example, composite=args.composite)
        stem = args.example + ("-composite" if args.composite else "")
    else:
        captured = _script_backward(args)
        if captured is None:
            return 1
        out, module, desc = captured.tensor, captured.names, f"backward of {captured.where}"
        stem = Path(args.example).stem
    summary = graph_summary(out)
    text = to_dot(out, module, constants=args.constants, saved_bytes=args.saved_bytes, title=desc)
    fmt = args.format or (Path(args.out).suffix.lstrip(".").lower() if args.out else "svg") or "dot"
    path = Path(args.out or f"runs/graph/{stem}.{fmt}")
    if path.suffix.lower() in (".svg", ".png", ".dot"):
        path = path.with_suffix("." + fmt)
    by_op = ", ".join(f"{name} {n}" for name, n in summary["by_op"].items())
    print(f"{desc}: {summary['ops']} ops ({by_op}), {summary['leaves']} leaves, "
          f"{summary['saved_bytes']:,} bytes saved for backward")
    try:
        written = write_graph(text, path, fmt, renderer=args.renderer)
    except GraphvizNotFound as e:       # --renderer graphviz without Graphviz: the .dot is written
        print(f"wrote {path.with_suffix('.dot')}")
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    for w in written:
        drawn = f" (drawn by {renderer_name(args.renderer)})" if w.suffix != ".dot" else ""
        print(f"wrote {w}{drawn}")
    return 0


def cmd_trace(args) -> int:
    from ..viz.trace import trace_backward
    if _is_example(args):
        from ..viz.graph import example_graph
        out, module, desc = example_graph(args.example, composite=args.composite, seed=args.seed)
        g = np.random.default_rng(args.seed + 1).standard_normal(out.shape).astype(out.dtype)
        with trace_backward(params=module) as trace:
            out.backward(g)
        print(f"backward through {desc}, cotangent g ~ N(0, 1) of shape {tuple(out.shape)}, in execution order:")
    else:
        captured = _script_backward(args)
        if captured is None:
            return 1
        with trace_backward(params=captured.names) as trace:
            captured.run()
        which = "the first .backward() the script calls" if args.call is None else "the backward --call names"
        print(f"backward of {captured.where} ({which}), output shape {tuple(captured.tensor.shape)}, "
              "in execution order:")
    print(trace.table())
    print()
    print(trace.parameter_table())
    return 0


# --------------------------------------------------------------------------- explain

def cmd_explain(args) -> int:
    import textwrap
    from ..viz.explain import OPS, explain, primitives
    if args.op is None:
        width = max(len(n) for n in OPS)
        print("tinygrad-tx explain OP, where OP is one of the fused ops (rungs: composite -> closed form -> "
              "fused Function):")
        for name, spec in OPS.items():
            closed = spec.closed_function.__name__ if spec.closed_function is not None else "(none)"
            print(f"  {name:<{width}}  {spec.composite.__name__} -> {closed} -> {spec.function.__name__}: "
                  f"{spec.summary}")
        names = sorted({c.__name__ for classes in primitives().values() for c in classes}, key=str.lower)
        print(f"or any other op of the engine ({len(names)} ArrayFunctions; any case, e.g. matmul, tanh):")
        print(textwrap.fill(", ".join(names), width=100, initial_indent="  ", subsequent_indent="  "))
        return 0
    if getattr(args, "kernel", False):
        return _explain_kernel(args.op)
    print(explain(args.op, seed=args.seed, use_torch=args.torch, source=args.source), end="")
    return 0


def _explain_kernel(op: str) -> int:
    """``explain OP --kernel``: which path runs, then the C source of the op's kernels."""
    from .. import kernels
    from ..kernels.source import KERNELS_OF, kernels_source
    from ..viz.explain import find_op
    kind, found = find_op(op) if op.lower() != "adam" else ("fused", None)
    name = "adam" if found is None else (found.name if kind == "fused" else op)
    if name not in KERNELS_OF:
        print(f"{op}: runs no C kernel (ops with kernels: {', '.join(KERNELS_OF)}); its NumPy code is what runs")
        return 0
    print(f"{name}: C kernels (float32 shown; float64 is the same text with double), path now: {kernels.mode()}")
    print()
    print(kernels_source(KERNELS_OF[name]))
    return 0


# --------------------------------------------------------------------------- plots

def cmd_plot_bigram(args) -> int:
    from ..data import CharVocab
    from ..training.gpt import corpus_name, load_split
    from ..viz.pictures import bigram_counts, plot_bigram
    _, train, _, _ = load_split(args.data, args.split_seed)
    vocab = CharVocab.tutorial()
    counts = bigram_counts(train, vocab)
    path = plot_bigram(counts, vocab, args.out,
                       f"bigram counts N(c_i, c_j): {len(train):,} training names of {corpus_name(args.data)}")
    top = np.dstack(np.unravel_index(np.argsort(counts, axis=None)[::-1][:5], counts.shape))[0]
    pairs = ", ".join(f"{vocab.chars[i]}{vocab.chars[j]} {counts[i, j]}" for i, j in top)
    print(f"{int(counts.sum()):,} bigrams of {len(train):,} names; most frequent: {pairs}")
    print(f"wrote {path}")
    return 0


def trained_gpt(args, log=print):
    """``(model, vocab, description)``: the model of ``args.checkpoint``, or a GPT trained with
    the command's flags (checkpoint written to ``args.save``)."""
    from ..training import train_gpt
    from ..training.gpt import describe, load_gpt
    if args.checkpoint:
        model, vocab, info = load_gpt(args.checkpoint)
    else:
        result = train_gpt(data=args.data, d_model=args.d_model, n_heads=args.n_heads, n_layers=args.n_layers,
                           steps=args.steps, lr=args.lr, seed=args.seed, warmup_steps=min(50, args.steps),
                           eval_every=0, num_samples=0, progress=False, out=args.save, log=log)
        model, vocab = result["model"], result["task"].vocab
        info = {**result["task"].info(), "metrics": {"dev_loss": result["dev_loss"]}}
    steps = info.get("config", {}).get("steps")
    return model, vocab, describe(info) + (f", {steps} steps" if steps else "")


def cmd_plot_embeddings(args) -> int:
    from ..viz.pictures import plot_embeddings_3d, vowel_gathering
    model, vocab, desc = trained_gpt(args)
    weight = model.token_embedding.weight._data
    if weight.shape[1] != 3:
        raise ValueError(f"the 3-D picture needs d_model = 3; this model has d_model = {weight.shape[1]}")
    stats = vowel_gathering(weight, vocab)
    path = plot_embeddings_3d(weight, vocab, args.out, f"learned character embeddings\n{desc}")
    nearest = ", ".join(f"{v}->{n}" for v, n in stats["nearest"].items())
    print(f"mean distance vowel-vowel {stats['vowel_vowel']:.3f}, vowel-consonant {stats['vowel_consonant']:.3f}: "
          f"ratio {stats['ratio']:.3f} (< 1: the vowels gathered); nearest letter of each vowel: {nearest}")
    print(f"wrote {path}")
    return 0


def cmd_plot_attention(args) -> int:
    from ..data import CharVocab
    from ..training.gpt import name_letters
    from ..viz.pictures import attention_maps, plot_attention
    name_letters(args.name, CharVocab.tutorial(), "--name")   # before any training
    model, vocab, desc = trained_gpt(args)
    name = name_letters(args.name, vocab, "--name")     # the same rule as sample --prefix
    ids = [vocab.sentinel_id] + vocab.encode(name)
    if len(ids) > model.block_size:
        raise ValueError(f"'$' + {name!r} has {len(ids)} characters; the model reads at most {model.block_size}")
    maps = attention_maps(model, np.array([ids], dtype=np.int64))[:, 0]
    tokens = [vocab.itos[i] for i in ids]
    path = plot_attention(maps, tokens, args.out, f"attention over '${name}': {desc}")
    last = maps[:, :, -1, :]   # what the last position (predicting the character after the name) looks at
    focus = ", ".join(f"L{li}H{hi}: '{tokens[int(np.argmax(last[li, hi]))]}' {last[li, hi].max():.2f}"
                      for li in range(last.shape[0]) for hi in range(last.shape[1]))
    print(f"{maps.shape[0]} layers x {maps.shape[1]} heads over {len(ids)} positions; the last position's "
          f"strongest key per head: {focus}")
    print(f"wrote {path}")
    return 0
