"""The tutorial's section-1 claims, measured on the names models (``tinygrad-tx plot seq-cost``
and ``tinygrad-tx plot grad-distance``).

Section 1 says that an RNN (LSTM, GRU) is bound by an O(N) sequential path and fades
gradients over distance, that the Transformer processes all positions in parallel, and that a
1D CNN needs O(L / K) stacked layers to see L tokens, O(log L) when dilated. Two experiments:

* :func:`sequence_cost` -- one forward + backward (full-sequence loss, float32, batch fixed) of
  each model as the length T grows, timed (median wall clock and CPU time of ``repeats`` calls,
  the models interleaved within each round so that a change of the machine's load hits them
  alike), and, independent of the machine, the size of the recorded graph: the number of ops
  and the **critical path** (:func:`critical_path`: the most ops on one chain from an input to
  the loss, i.e. the ops that must run one after another however many cores there are). With
  ``--torch``, :func:`torch_sequence_cost` times the PyTorch twins the same way in a child
  process (``reference/claims.py``; this package never imports torch).
* :func:`gradient_by_distance` -- ``‖∂loss_p / ∂x_t‖``, the gradient of position p's loss with
  respect to the input embedding x_t (the token embedding's output, made a leaf by a forward
  hook), averaged over a batch of names; :func:`gradient_experiment` plots it against the
  distance p - t for each model at initialisation and after a short training on a names corpus.

The models (:data:`SIZES`) are the ``train gpt --type`` models at comparable parameter counts
(36,763 to 39,963 trainable parameters; the Transformer's position table, block_size x 32,
comes on top): a one-layer tanh RNN with 128 hidden units, a one-layer LSTM with 64, the
tutorial's GPT at d_model 32 with 4 heads and 3 layers, and the WaveNet with 8 dilated layers
of 48 channels (receptive field 256, the longest T measured).
"""
from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import numpy as np

from .. import functional as F
from ..parallel import available_cpus
from ..core.tensor import Tensor

# --type -> the train gpt flags that size it (see the module docstring)
SIZES = {
    "rnn": dict(d_model=128, n_layers=1),
    "lstm": dict(d_model=64, n_layers=1),
    "transformer": dict(d_model=32, n_heads=4, n_layers=3),
    "wavenet": dict(d_model=48, n_layers=8),
}
TITLES = {"rnn": "RNN (tanh)", "lstm": "LSTM", "transformer": "Transformer", "wavenet": "dilated CNN (WaveNet)"}
VOCAB_SIZE = 27


def model_config(kind: str, block_size: int = 16, **overrides):
    """The ``GPTConfig`` of ``train gpt --type KIND`` at the sizes of :data:`SIZES` (dropout 0)."""
    from ..training.config import GPTConfig
    if kind not in SIZES:
        raise ValueError(f"model must be one of {', '.join(SIZES)}, got {kind!r}")
    return GPTConfig(type=kind, block_size=block_size, dropout=0.0, **{**SIZES[kind], **overrides})


def model_spec(kind: str, block_size: int = 16):
    """``(class name, constructor kwargs)`` of :func:`model_config`'s model, the same in
    ``tinygrad_tx.models`` and in its twin package ``reference``."""
    from ..training.names_baselines import baseline_spec
    c = model_config(kind, block_size)
    if kind == "transformer":
        return "GPTLanguageModel", dict(vocab_size=VOCAB_SIZE, d_model=c.d_model, n_heads=c.n_heads,
                                        n_layers=c.n_layers, block_size=block_size, dropout=0.0, attn_impl="fused")
    return baseline_spec(c, VOCAB_SIZE)


def build_model(kind: str, block_size: int = 16, seed: int = 0):
    """The model of :func:`model_spec`, built as ``train gpt`` builds it (seeded)."""
    from .. import models
    from ..generator import manual_seed
    name, kwargs = model_spec(kind, block_size)
    manual_seed(seed)
    return getattr(models, name)(**kwargs)


def parameter_count(model) -> int:
    return sum(p.numel() for p in model.parameters())


def critical_path(root: Tensor) -> int:
    """The most recorded ops on one chain from a leaf to ``root`` (the graph's depth): ops that
    must run one after another. Call it before ``backward`` frees the graph."""
    from ..viz.graph import graph_nodes
    nodes = {id(n): (n, inputs) for n, inputs in graph_nodes(root)}
    depth: dict = {}
    for key in nodes:                        # iterative post-order: an RNN's chain is thousands deep
        stack = [(key, False)]
        while stack:
            k, ready = stack.pop()
            if k in depth:
                continue
            node, inputs = nodes[k]
            if ready:
                depth[k] = (not isinstance(node, Tensor)) + max((depth[id(i)] for i in inputs), default=0)
            else:
                stack.append((k, True))
                stack.extend((id(i), False) for i in inputs if id(i) not in depth)
    return depth[id(root if root._ctx is None else root._ctx)]


def token_batch(T: int, batch: int, seed: int = 0) -> np.ndarray:
    """(batch, T + 1) random token ids: inputs ``[:, :-1]``, targets ``[:, 1:]`` (the same in the
    twins' process)."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, VOCAB_SIZE, (batch, T + 1))


def _forward_backward(model, ids):
    for p in model.parameters():
        p.grad = None
    _, loss = model(ids[:, :-1], ids[:, 1:])
    loss.backward()


def sequence_cost(kinds=tuple(SIZES), lengths=(16, 32, 64, 128, 256), batch: int = 8, repeats: int = 15,
                  seed: int = 0, log=None) -> dict:
    """Time one forward + backward of each model (float32) at each length; returns
    ``{"kinds", "lengths", "batch", "repeats", "params": {kind: n}, "wall"/"cpu": {kind: [median
    seconds per length]}, "ops"/"path": {kind: [graph ops / critical path per length]}}``.
    Run it inside :func:`~tinygrad_tx.training.loop.thread_limit` to fix the threads."""
    lengths = [int(T) for T in lengths]
    if not lengths or min(lengths) < 1 or min(batch, repeats) < 1:
        raise ValueError(f"lengths, batch and repeats must be >= 1, got {lengths}, {batch}, {repeats}")
    from ..viz.graph import graph_nodes
    models = {k: build_model(k, block_size=max(lengths), seed=seed) for k in kinds}
    data = {T: token_batch(T, batch, seed) for T in lengths}
    out = {"kinds": list(kinds), "lengths": lengths, "batch": batch, "repeats": repeats,
           "params": {k: parameter_count(m) for k, m in models.items()}, "ops": {}, "path": {}}
    for k, m in models.items():
        out["ops"][k], out["path"][k] = [], []
        for T in lengths:
            _, loss = m(data[T][:, :-1], data[T][:, 1:])
            out["ops"][k].append(sum(1 for n, _ in graph_nodes(loss) if not isinstance(n, Tensor)))
            out["path"][k].append(critical_path(loss))
            loss.backward()                  # the untimed warm-up call
    out["wall"], out["cpu"] = interleaved_medians(kinds, lengths, lambda k, T: _forward_backward(models[k], data[T]),
                                                  repeats, log)
    return out


def interleaved_medians(kinds, lengths, call, repeats: int, log=None):
    """``(wall, cpu)``, each ``{kind: [median seconds per length]}`` of ``repeats`` timed calls of
    ``call(kind, T)``; every round runs each length once per kind, the kinds in turn (reversed on
    odd rounds), so that a change of the machine's load hits them alike. Also used by the PyTorch
    side, ``reference/claims.py``."""
    wall = {(k, T): [] for k in kinds for T in lengths}
    cpu = {(k, T): [] for k in kinds for T in lengths}
    for r in range(repeats):
        order = list(kinds) if r % 2 == 0 else list(reversed(kinds))
        for T in lengths:
            for k in order:
                t0, c0 = time.perf_counter(), time.process_time()
                call(k, T)
                wall[k, T].append(time.perf_counter() - t0)
                cpu[k, T].append(time.process_time() - c0)
        if log:
            log(f"round {r + 1}/{repeats} done")
    return ({k: [statistics.median(wall[k, T]) for T in lengths] for k in kinds},
            {k: [statistics.median(cpu[k, T]) for T in lengths] for k in kinds})


def torch_sequence_cost(kinds, lengths, batch: int, repeats: int, seed: int = 0, threads: int = 1) -> dict:
    """The PyTorch twins of :func:`sequence_cost`'s models (``reference``, the same kwargs and
    token ids), timed the same way in a child process (``python -m reference.claims``: this package
    never imports torch), with ``threads`` threads; returns ``{"wall", "cpu", "torch"}``."""
    import json
    import subprocess
    import sys
    root = Path(__file__).resolve().parents[2]
    if not (root / "reference" / "claims.py").is_file():
        raise ValueError("--torch needs the source checkout's reference/ package (reference/claims.py)")
    job = dict(specs={k: model_spec(k, max(lengths)) for k in kinds}, lengths=list(lengths), batch=batch,
               repeats=repeats, seed=seed, threads=threads)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-m", "reference.claims", json.dumps(job)], capture_output=True,
                          text=True, env=env, cwd=str(root), timeout=600)
    if done.returncode:
        raise RuntimeError(f"the PyTorch side failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def loglog_slope(lengths, values) -> float:
    """The least-squares slope of log(value) against log(T): 1 = linear growth, 2 = quadratic."""
    return float(np.polyfit(np.log(lengths), np.log(values), 1)[0])


def _time_rows(times: dict, kinds, lengths) -> list[str]:
    """Table rows of median CPU ms per length (wall-clock ms in brackets), the growth of the CPU
    time from the first length to the last and its log-log slope."""
    lines = [f"| {T} | " + " | ".join(f"{1e3 * times['cpu'][k][i]:.2f} ({1e3 * times['wall'][k][i]:.2f})"
                                     for k in kinds) + " |" for i, T in enumerate(lengths)]
    if len(lengths) > 1:
        lines.append(f"| time T={lengths[-1]} / T={lengths[0]} | " + " | ".join(
            f"{times['cpu'][k][-1] / times['cpu'][k][0]:.1f}x" for k in kinds) + " |")
        lines.append("| log-log slope | " + " | ".join(f"{loglog_slope(lengths, times['cpu'][k]):.2f}"
                                                         for k in kinds) + " |")
    return lines


def cost_table(result: dict) -> str:
    """The Markdown table of :func:`sequence_cost` (:func:`_time_rows`, then the graph's size and
    the parameters); with ``result["torch"]``, the twins' rows follow under their own header.
    CPU time: with one thread it is the work done, steadier than wall clock on a shared machine."""
    kinds, lengths = result["kinds"], result["lengths"]
    rule = "|---" * (len(kinds) + 1) + "|"
    lines = ["| T | " + " | ".join(TITLES[k] for k in kinds) + " |", rule] + _time_rows(result, kinds, lengths)
    lines.append("| graph ops | " + " | ".join(" → ".join(str(n) for n in (result["ops"][k][0], result["ops"][k][-1]))
                                              for k in kinds) + " |")
    lines.append("| critical path (ops) | " + " | ".join(
        " → ".join(str(n) for n in (result["path"][k][0], result["path"][k][-1])) for k in kinds) + " |")
    lines.append("| parameters | " + " | ".join(f"{result['params'][k]:,}" for k in kinds) + " |")
    if "torch" in result:
        lines += ["", f"PyTorch {result['torch']['torch']} twins, same calls:", "",
                  "| T | " + " | ".join(f"{TITLES[k]}, torch" for k in kinds) + " |", rule]
        lines += _time_rows(result["torch"], kinds, lengths)
    return "\n".join(lines)


def plot_cost(result: dict, path, title: str = "") -> Path:
    """Log-log: median CPU ms of one forward + backward against T, one line per model (its
    PyTorch twin dotted, when measured), and the critical path in ops on a second panel."""
    from ..viz.pictures import _save, pyplot
    plt = pyplot()
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.5))
    lengths = result["lengths"]
    for i, k in enumerate(result["kinds"]):
        color, marker = f"C{i}", "os^D"[i % 4]
        ax.plot(lengths, np.array(result["cpu"][k]) * 1e3, marker + "-", color=color,
                label=f"{TITLES[k]} ({result['params'][k]:,} params)")
        if "torch" in result:
            ax.plot(lengths, np.array(result["torch"]["cpu"][k]) * 1e3, marker + ":", color=color, mfc="none",
                    label=f"{TITLES[k]}, PyTorch twin")
        # dashes on every other line: the CNN's path lies on the GPT's
        ax2.plot(lengths, result["path"][k], marker + ("-" if i % 2 == 0 else "--"), color=color, label=TITLES[k])
    for a in (ax, ax2):
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.set_xticks(lengths, [str(T) for T in lengths])
    ax.set_xlabel("sequence length T")
    ax.set_ylabel("CPU ms per forward + backward (median)")
    ax.set_title(title or "time of one training step's forward + backward")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    ax2.set_xlabel("sequence length T")
    ax2.set_ylabel("critical path (ops one after another)")
    ax2.set_title("longest chain of ops in the recorded graph")
    ax2.legend(fontsize=8)
    ax2.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return _save(fig, path)


# --------------------------------------------------------------------------- gradient over distance

def gradient_by_distance(model, ids, targets, position: int = -1) -> np.ndarray:
    """``(T,)``: entry t is the mean over the batch of ``‖∂loss_p / ∂x_t‖``, where x_t is the
    input embedding at position t (the token embedding's output, replaced by a leaf through a
    forward hook), p = ``position`` and loss_p the cross-entropy of position p's logits against
    ``targets`` (B,). The loss is summed over the batch, so each row's gradient is its own."""
    captured = {}

    def make_leaf(module, args, output):
        captured["x"] = output.detach().requires_grad_(True)
        return captured["x"]

    was_training = model.training
    model.eval()
    handle = model.token_embedding.register_forward_hook(make_leaf)
    try:
        logits, _ = model(ids)
    finally:
        handle.remove()
        model.train(was_training)
    loss = F.cross_entropy(logits[:, position], Tensor(np.asarray(targets)), reduction="sum")
    loss.backward()
    return np.linalg.norm(captured["x"].grad.numpy(), axis=-1).mean(axis=0)


def name_batch(names, vocab, length: int, count: int):
    """``(ids (B, length), targets (B,))``: ``'$' + name`` cut to ``length`` tokens for the first
    ``count`` names with at least ``length - 1`` letters; the target is the next character (the
    closing '$' for a name of exactly ``length - 1`` letters)."""
    rows, targets = [], []
    for name in names:
        if len(name) >= length - 1:
            seq = [vocab.sentinel_id] + vocab.encode(name) + [vocab.sentinel_id]
            rows.append(seq[:length])
            targets.append(seq[length])
            if len(rows) == count:
                break
    if not rows:
        raise ValueError(f"no name has {length - 1} letters or more: use a smaller --length")
    return np.array(rows, dtype=np.int64), np.array(targets, dtype=np.int64)


def gradient_experiment(kinds=("rnn", "lstm", "transformer"), data=None, steps: int = 1000, length: int = 10,
                        count: int = 64, batch_size: int = 64, seed: int = 0, log=print) -> dict:
    """For each model: ``‖∂loss_T / ∂x_t‖`` by distance T - t (:func:`gradient_by_distance`, at the
    last of ``length`` positions, on dev names of at least ``length - 1`` letters) at
    initialisation and after ``steps`` AdamW steps of ``train gpt --type KIND`` on ``data``
    (block 16, dropout 0). Returns ``{"kinds", "length", "names", "steps", "params", "dev_loss",
    "init"/"trained": {kind: (length,) array indexed by distance}}``."""
    from ..training.gpt import GPTTask
    from ..training.loop import fit
    out = {"kinds": list(kinds), "length": length, "steps": steps, "params": {}, "dev_loss": {},
           "init": {}, "trained": {}}
    for k in kinds:
        task = GPTTask(model_config(k, steps=steps, batch_size=batch_size, seed=seed, eval_every=0,
                                    num_samples=0, progress=False, data=data))
        if length > task.config.block_size:
            raise ValueError(f"--length {length} exceeds the block size {task.config.block_size}")
        ids, targets = name_batch(task.dev_names, task.vocab, length, count)
        out["names"] = len(ids)
        model = task.build_model()
        out["params"][k] = parameter_count(model)
        out["init"][k] = gradient_by_distance(model, ids, targets)[::-1]
        run = fit(task, model, log=lambda line: None, out=None)
        out["dev_loss"][k] = run["history"]["evals"][-1]["dev_loss"]
        out["trained"][k] = gradient_by_distance(run["model"], ids, targets)[::-1]
        if log:
            log(f"{TITLES[k]}: {out['params'][k]:,} parameters, dev loss {out['dev_loss'][k]:.4f} after "
                f"{steps} steps")
    return out


def gradient_table(result: dict) -> str:
    """Markdown: the mean gradient norm at each distance, per model, at init and trained, and the
    ratio of the farthest distance to distance 0."""
    kinds = result["kinds"]
    cols = [(k, when) for k in kinds for when in ("init", "trained")]
    lines = ["| T - t | " + " | ".join(f"{TITLES[k]}, {when}" for k, when in cols) + " |",
             "|---" * (len(cols) + 1) + "|"]
    for d in range(result["length"]):
        lines.append(f"| {d} | " + " | ".join(f"{result[when][k][d]:.3e}" for k, when in cols) + " |")
    lines.append(f"| ratio {result['length'] - 1} / 0 | " + " | ".join(
        f"{result[when][k][-1] / result[when][k][0]:.2e}" for k, when in cols) + " |")
    if result["length"] > 2:
        lines.append("| factor per step | " + " | ".join(f"{decay_per_step(result[when][k]):.2f}"
                                                          for k, when in cols) + " |")
    return "\n".join(lines)


def decay_per_step(norms) -> float:
    """exp of the least-squares slope of log(norm) against the distance, from distance 1 on (the
    direct path at distance 0 left out): the factor the gradient keeps per step back; < 1 fades."""
    norms = np.asarray(norms, dtype=np.float64)[1:]
    return float(np.exp(np.polyfit(np.arange(1, len(norms) + 1), np.log(norms), 1)[0]))


def plot_gradients(result: dict, path, title: str = "") -> Path:
    """Two panels (init, trained): mean ‖∂loss_T / ∂x_t‖ against T - t on a log scale."""
    from ..viz.pictures import _save, pyplot
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    distance = np.arange(result["length"])
    for ax, when in zip(axes, ("init", "trained")):
        for k in result["kinds"]:
            label = f"{TITLES[k]} ({result['params'][k]:,} params"
            label += f", dev {result['dev_loss'][k]:.3f})" if when == "trained" else ")"
            ax.semilogy(distance, result[when][k], "o-", label=label)
        ax.set_xlabel("distance T - t (positions back from the predicting one)")
        ax.set_title("at initialisation" if when == "init" else f"after {result['steps']} training steps")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("mean ‖∂loss_T / ∂x_t‖")
    fig.suptitle(title or f"gradient of the last position's loss w.r.t. each input embedding "
                          f"({result['names']} names)")
    fig.tight_layout()
    return _save(fig, path)


def load_line() -> str:
    """The load averages (1, 5, 15 minutes) and the CPUs this process may use."""
    cpus = available_cpus()
    return "load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg()) + f" on {cpus} CPUs"


# --------------------------------------------------------------------------- the commands

def register_claim_plots(pictures, debug_flag) -> None:
    """Add ``plot seq-cost`` and ``plot grad-distance`` to the ``plot`` sub-commands."""
    from .._argtypes import number
    models = ", ".join(SIZES)
    sc = pictures.add_parser("seq-cost", help="section 1's cost claim: time of one forward+backward of the RNN, "
                                              "LSTM, Transformer and dilated CNN as the sequence grows (log-log)",
                             description="Times one forward + backward (float32, full-sequence loss) of each "
                                         "model at each length, interleaved, and counts the recorded graph's ops "
                                         "and critical path; prints a Markdown table and draws a log-log plot.")
    sc.add_argument("--models", nargs="+", choices=list(SIZES), default=list(SIZES), help=f"(default: {models})")
    sc.add_argument("--lengths", nargs="+", type=number(int, 1), default=[16, 32, 64, 128, 256],
                    help="(default: %(default)s)")
    sc.add_argument("--batch", type=number(int, 1), default=8, help="(default: %(default)s)")
    sc.add_argument("--repeats", type=number(int, 1), default=15, help="timed calls per model and length; the "
                    "median is reported (default: %(default)s)")
    sc.add_argument("--threads", type=number(int, 1), default=1, help="BLAS and elementwise threads "
                    "(default: %(default)s)")
    sc.add_argument("--torch", action="store_true", help="also time the PyTorch twins (reference/, in a child "
                    "process; needs torch and the source checkout)")
    sc.add_argument("-o", "--out", default="runs/plots/seq_cost.png", metavar="PNG", help="(default: %(default)s)")
    debug_flag(sc)
    sc.set_defaults(func=cmd_plot_seq_cost)

    gd = pictures.add_parser("grad-distance", help="section 1's fading claim: |d loss_T / d x_t| against T - t "
                                                   "for the RNN, LSTM and Transformer, at init and trained",
                             description="Trains each model briefly on a names corpus (train gpt --type, "
                                         "dropout 0) and measures the gradient of the last position's loss "
                                         "w.r.t. every input embedding, before and after; prints a Markdown "
                                         "table and draws it on a log scale.")
    gd.add_argument("--models", nargs="+", choices=list(SIZES), default=["rnn", "lstm", "transformer"],
                    help="(default: rnn lstm transformer)")
    gd.add_argument("--data", default=None, metavar="PATH", help="names file (default: the offline census names)")
    gd.add_argument("--steps", type=number(int, 1), default=1000, help="training steps (default: %(default)s)")
    gd.add_argument("--batch-size", type=number(int, 1), default=64, help="(default: %(default)s)")
    gd.add_argument("--length", type=number(int, 2), default=10, help="positions read, '$' + the first "
                    "LENGTH - 1 letters of dev names that have them (default: %(default)s)")
    gd.add_argument("--names", type=number(int, 1), default=64, help="at most this many dev names "
                    "(default: %(default)s)")
    gd.add_argument("--seed", type=int, default=0, help="(default: %(default)s)")
    gd.add_argument("--threads", type=number(int, 1), default=1, help="(default: %(default)s)")
    gd.add_argument("-o", "--out", default="runs/plots/grad_distance.png", metavar="PNG",
                    help="(default: %(default)s)")
    debug_flag(gd)
    gd.set_defaults(func=cmd_plot_grad_distance)


def cmd_plot_seq_cost(args) -> int:
    from ..training.loop import thread_limit
    print(f"before: {load_line()}; threads {args.threads}, float32, batch {args.batch}, "
          f"median of {args.repeats} calls")
    start = time.process_time()
    with thread_limit(args.threads):
        result = sequence_cost(args.models, args.lengths, args.batch, args.repeats)
    print(f"after: {load_line()}; {time.process_time() - start:.1f} s of CPU")
    if args.torch:
        result["torch"] = torch_sequence_cost(args.models, result["lengths"], args.batch, args.repeats,
                                              threads=args.threads)
        print(f"after the PyTorch twins (a child process): {load_line()}")
    print("CPU ms per forward + backward (wall-clock ms), medians:")
    print(cost_table(result))
    path = plot_cost(result, args.out, f"one forward + backward, batch {args.batch}, float32, "
                                       f"{args.threads} thread{'s' * (args.threads > 1)}")
    print(f"wrote {path}")
    return 0


def cmd_plot_grad_distance(args) -> int:
    from ..training.gpt import corpus_name
    from ..training.loop import thread_limit
    print(f"before: {load_line()}; threads {args.threads}; corpus {corpus_name(args.data)}")
    start = time.process_time()
    with thread_limit(args.threads):
        result = gradient_experiment(args.models, args.data, args.steps, args.length, args.names,
                                     args.batch_size, args.seed)
    print(f"after: {load_line()}; {time.process_time() - start:.1f} s of CPU")
    print(f"mean ‖∂loss_T / ∂x_t‖ over {result['names']} dev names, T = {args.length} positions:")
    print(gradient_table(result))
    path = plot_gradients(result, args.out)
    print(f"wrote {path}")
    return 0
