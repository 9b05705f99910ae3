"""The ``tinygrad-tx`` command (also ``python -m tinygrad_tx``).

::

    tinygrad-tx train gpt                  # the tutorial's GPT on the offline names corpus
    tinygrad-tx train gpt --data names.txt --steps 3000
    tinygrad-tx sample --num-samples 20 --temperature 0.8 --top-k 10
    tinygrad-tx train bigram --data names.txt
    tinygrad-tx train vit | encoder | seq2seq
    tinygrad-tx train vit --type cnn         # a LeNet-style CNN on the same digits split
    tinygrad-tx train gpt --compare-torch --steps 200 --dtype float64
    tinygrad-tx train names --type mlp       # makemore's baselines: --type bigram | mlp | rnn | gru | lstm | bow | wavenet
    tinygrad-tx train gpt --resume runs/gpt/model.safetensors   # continue an interrupted run exactly
    tinygrad-tx run script.py ARGS           # a PyTorch script, its ``import torch`` loading tinygrad_tx

Every hyperparameter is a flag (``tinygrad-tx train gpt --help``); they are the fields of
the dataclasses in :mod:`tinygrad_tx.training.config`, and the same training runs from
Python as ``tinygrad_tx.training.train_gpt(steps=...)``.

Errors (a bad flag, a missing file, an empty corpus, a value out of range) print one line
to stderr -- ``tinygrad-tx: error: ...`` -- and exit with status 2 (bad command line) or 1
(anything else); ``--debug`` shows the traceback instead.

SIGINT (Ctrl-C) or SIGTERM during ``train``: the current step finishes, the checkpoint is
written (atomically) and one line says where it is and the exact ``--resume`` command;
exit status 130 (SIGINT) or 143 (SIGTERM). Before the first step or after the last one a
signal ends the command at once, with one line and the same status. The handlers exist only
while ``train`` runs (:class:`tinygrad_tx.training.signals.StopSignals`).

``main`` applies tinygrad_tx's malloc policy (:func:`tinygrad_tx.allocator.apply_default_policy`:
freed arrays are kept for reuse; ``TINYGRAD_TX_MALLOC=default`` opts out); ``import
tinygrad_tx`` alone does not. tinygrad_tx never imports torch:
``--compare-torch`` loads its PyTorch side, ``reference.train``, through importlib.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import shlex
import sys
import warnings
from pathlib import Path

from ._argtypes import number as _number

PROG = "tinygrad-tx"


class CommandLineError(Exception):
    """Raised by the parser instead of printing usage; main() turns it into one line."""


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (no usage block)."""

    def error(self, message):
        raise CommandLineError(f"{self.prog}: error: {message} (see '{self.prog} --help')")


def add_config_flags(parser, config_cls, skip=()):
    """One ``--flag`` per dataclass field, with its help, choices and bounds."""
    for f in dataclasses.fields(config_cls):
        if f.name in skip:
            continue
        meta = f.metadata
        flag = "--" + f.name.replace("_", "-")
        help_text = meta.get("help", "")
        if isinstance(f.default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default,
                                help=f"{help_text} (default: {'on' if f.default else 'off'})")
            continue
        kind = meta.get("type") or type(f.default)
        if kind in (int, float):
            kind = _number(kind, meta.get("min"), meta.get("max"))
        shown = "" if f.default in (None, "") else " (default: %(default)s)"
        parser.add_argument(flag, type=kind, default=f.default, choices=meta.get("choices"),
                            metavar=meta.get("metavar"), help=help_text + shown)


def config_from_args(config_cls, args):
    """The config of the parsed flags; a combination the config's own checks reject (``--d-model 10
    --n-heads 4``) is a :class:`CommandLineError`, raised before any data is loaded."""
    try:
        return config_cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(config_cls)})
    except ValueError as e:
        raise CommandLineError(f"{PROG} train {getattr(args, 'model', '')}: error: {e}") from None


# --------------------------------------------------------------------------- commands

TRAIN_HELP = {
    "gpt": "the tutorial's GPT (d_model 64, 4 heads, 4 layers, block 16) on a names corpus; --type "
           "bigram|mlp|rnn|gru|lstm|bow|wavenet trains makemore's baselines instead (alias: 'train names')",
    "bigram": "the bigram count model: its NLL per character",
    "vit": "the Vision Transformer on scikit-learn's 8x8 digits: test accuracy; --type cnn trains a LeNet-style "
           "CNN on the same split instead",
    "encoder": "the BERT-style encoder: first-name gender (US Census lists), held-out accuracy",
    "seq2seq": "the encoder-decoder: spelled-out dates -> ISO dates (or reversed names), exact match",
}

LOSS_NOTE = ("Loss = mean negative log-likelihood per character (nats) of every character of "
             "'$' + name + '$' after the first, each predicted from the characters before it "
             "(the quantity of the tutorial's 'bigram ~ 2.45').")


def _configs():
    from .training import config
    return {"gpt": config.GPTConfig, "bigram": config.BigramConfig, "vit": config.ViTConfig,
            "encoder": config.EncoderConfig, "seq2seq": config.Seq2SeqConfig}


def _task(kind, cfg):
    from . import training as t
    return {"gpt": t.GPTTask, "vit": t.ViTTask, "encoder": t.EncoderTask, "seq2seq": t.Seq2SeqTask}[kind](cfg)


def _trainer(kind):
    from . import training as t
    return {"gpt": t.train_gpt, "bigram": t.train_bigram, "vit": t.train_vit, "encoder": t.train_encoder,
            "seq2seq": t.train_seq2seq}[kind]


def compare_torch(kind, cfg) -> int:
    """``--compare-torch``: both frameworks from the same weights on the same batches."""
    try:
        compare = importlib.import_module("reference.train").compare
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(f"--compare-torch needs PyTorch and the reference package ({e.msg}); "
                                  "pip install torch") from None
    from .training.plots import plot_compare
    if cfg.dropout:
        print(f"note: dropout {cfg.dropout} -> 0 for the comparison (the frameworks draw different masks)")
        cfg = cfg.replace(dropout=0.0)
    task = _task(kind, cfg)
    print(f"comparing tinygrad_tx with its PyTorch twin: {kind}, {cfg.steps} steps, {cfg.dtype}, "
          f"same initial weights and batches, AdamW + warmup/cosine + clipping on both")
    result = compare(task)
    tol = 1e-8 if cfg.dtype == "float64" else 1e-4
    verdict = "within" if result["max_rel_diff"] <= tol else "NOT within"
    print(f"max relative difference of the loss curves over {cfg.steps} steps: {result['max_rel_diff']:.3e} "
          f"({verdict} {tol:g}); time per step: tinygrad_tx {1e3 * result['seconds_ours'] / cfg.steps:.1f} ms, "
          f"torch {1e3 * result['seconds_torch'] / cfg.steps:.1f} ms")
    out = Path(cfg.plot or f"runs/{kind}/compare_{cfg.dtype}.png")
    plot_compare(result["step"], result["ours"], result["torch"], out,
                 f"{kind}: tinygrad_tx vs PyTorch twin ({cfg.dtype}, same init and batches)")
    from .training.saving import write_text_atomic
    write_text_atomic(out.with_suffix(".json"), json.dumps({"config": cfg.to_dict(), **result}))
    print(f"plot: {out} (curves: {out.with_suffix('.json')})")
    return 0


TRAIN_ALIASES = {"names": "gpt"}   # makemore's spelling: tinygrad-tx train names --type mlp


def resume_command(argv, path) -> str:
    """The command line that resumes an interrupted run: ``argv`` with ``--resume PATH`` (any
    earlier ``--resume`` replaced), quoted for a POSIX shell."""
    words, skip = [], False
    for word in argv:
        if skip:
            skip = False
        elif word == "--resume":
            skip = True
        elif not word.startswith("--resume="):
            words.append(word)
    return shlex.join([PROG, *words, "--resume", str(path)])


def cmd_train(args) -> int:
    from .training.signals import StopSignals, TrainingInterrupted, exit_status
    with StopSignals():             # SIGINT/SIGTERM: see the module docstring; restored on exit
        kind = args.model = TRAIN_ALIASES.get(args.model, args.model)
        cfg = config_from_args(_configs()[kind], args)
        if getattr(cfg, "compare_torch", False):
            if getattr(cfg, "resume", ""):
                raise CommandLineError(f"{PROG} train {kind}: error: --resume does not combine with --compare-torch "
                                       "(the comparison always starts both models from the same fresh weights)")
            return compare_torch(kind, cfg)
        try:
            _trainer(kind)(cfg)
        except TrainingInterrupted as e:
            if e.path is None:
                print(f"{PROG}: {e}; nothing saved", file=sys.stderr)
            else:
                print(f"{PROG}: {e}; resume with: {resume_command(getattr(args, 'argv', []), e.path)}",
                      file=sys.stderr)
            return exit_status(e.signum)
    return 0


def cmd_sample(args) -> int:
    from .data import CharVocab
    from .training.gpt import describe, load_gpt, load_split, mark_novel, name_letters, sample_names
    name_letters(args.prefix, CharVocab.tutorial())            # a bad prefix fails before the checkpoint loads
    model, vocab, info = load_gpt(args.checkpoint)
    print(f"{args.checkpoint}: {describe(info)}")
    names = sample_names(model, vocab, args.num_samples, layout=info.get("layout", "full"), prefix=args.prefix,
                         temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, greedy=args.greedy,
                         seed=args.seed, max_len=args.max_len)
    lines = names
    if args.mark:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                corpus, train, _, _ = load_split(info.get("data"), info.get("split_seed", 42))
            lines = mark_novel(names, train, corpus)
        except (OSError, ValueError) as e:
            print(f"note: cannot reload the training corpus to mark new names ({_one_line(e)})")
    for line in lines:
        print(line)
    return 0


def _bench_roots() -> list[Path]:
    """Where a ``bench/`` package may stand: the repository root of a source or editable checkout
    (the directory above the ``tinygrad_tx`` package), then the current directory."""
    roots = [Path(__file__).resolve().parents[1], Path.cwd().resolve()]
    return [r for i, r in enumerate(roots) if r not in roots[:i] and (r / "bench" / "cli.py").is_file()]


def _bench_main_if_importable():
    """``bench.cli.main``, or None when ``bench`` (or ``bench.cli``) cannot be found."""
    try:
        return importlib.import_module("bench.cli").main
    except ModuleNotFoundError as e:
        if e.name not in ("bench", "bench.cli"):
            raise                                       # bench found, one of its own imports missing
        return None


def _import_bench_main():
    """``bench.cli.main``. The console script does not put the checkout on ``sys.path``, so when
    ``bench`` is not importable each root of :func:`_bench_roots` is tried at ``sys.path[0]``."""
    main = _bench_main_if_importable()
    if main is not None:
        return main
    for root in map(str, _bench_roots()):
        if root in sys.path:
            continue
        sys.path.insert(0, root)
        main = _bench_main_if_importable()
        if main is not None:
            return main
        sys.path.remove(root)
    raise ModuleNotFoundError("the benchmark lives in the source checkout's bench/ directory: "
                              "run 'tinygrad-tx bench' (or 'python -m bench') from the repository root")


def cmd_bench(args) -> int:
    """Hand everything after ``bench`` to the benchmark's own parser (``bench/cli.py``)."""
    return _import_bench_main()(args.args) or 0


RUN_HELP = "run a PyTorch script on tinygrad_tx (its `import torch` loads tinygrad_tx)"
COMPILE_HELP = ("the GPT training step, or a function of your script (FILE.py --call EXPR), recorded by "
                "tinygrad_tx.compile and replayed, against eager")


def cmd_compile(args) -> int:
    """``tinygrad-tx compile [--show]``: the tutorial GPT's training step (batch 32, T 16, AdamW,
    4 heads) run ``--steps`` times eagerly and under ``tinygrad_tx.compile`` from the same seed;
    prints whether every loss, gradient and parameter is identical, the median step times (the
    first, recording, call left out), and with ``--show`` the program the replay runs. ``--kernels``
    compiles with ``fuse=True`` and prints the C of the fused chains (with ``--show``, after the
    program that calls them)."""
    import statistics
    import time

    import numpy as np
    import tinygrad_tx as tg
    from .models import GPTLanguageModel

    if args.file is not None:                     # the user's own script: --call names the function
        if args.kernels:
            raise CommandLineError(f"{PROG} compile: --kernels shows the built-in GPT step's fused kernels "
                                   "(without FILE.py)")
        if not args.call:
            raise CommandLineError(f"{PROG} compile FILE.py needs --call EXPR, the call of the script's function "
                                   "to compile (e.g. --call 'train_step(x, y)')")
        from .viz.compile_script import compile_script
        from .viz.script import ScriptFailed, print_script_error
        try:
            text, same = compile_script(args.file, args.call, steps=args.steps, show=args.show)
        except ScriptFailed as failed:
            print_script_error(failed, debug=getattr(args, "debug", False))
            return 1
        print(text, end="")
        return 0 if same else 1

    if not 0.0 <= args.dropout < 1.0:
        raise CommandLineError(f"{PROG} compile: --dropout must be in [0, 1), got {args.dropout}")
    rng = np.random.default_rng(0)
    batches = [(tg.from_numpy(rng.integers(0, 27, (32, 16))), tg.from_numpy(rng.integers(0, 27, (32, 16))))
               for _ in range(args.steps)]
    runs = {}
    for mode in ("eager", "compiled"):
        tg.manual_seed(0)
        model = GPTLanguageModel(27, d_model=args.d_model, n_heads=4, n_layers=args.layers, block_size=16,
                                 dropout=args.dropout)
        opt = tg.optim.AdamW(model.parameters(), lr=1e-3)

        def step(idx, targets):
            opt.zero_grad()
            _, loss = model(idx, targets)
            loss.backward()
            opt.step()
            return loss

        fn = tg.compile(step, fullgraph=True, fuse=args.kernels) if mode == "compiled" else step
        tg.manual_seed(1)
        losses, times = [], []
        for idx, targets in batches:
            t0 = time.perf_counter()
            losses.append(fn(idx, targets)._data)
            times.append(time.perf_counter() - t0)
        state = [a for p in model.parameters() for a in (p._data, p.grad._data)]
        runs[mode] = (losses, state, statistics.median(times[1:]) * 1e3, fn)
    (le, se, te, _), (lc, sc, tc, fn) = runs["eager"], runs["compiled"]
    if args.show:
        print(fn.code)
    if args.kernels:
        print(fn.kernels or f"(no fused kernels: {tg.kernels.mode()})")
    same = all(np.array_equal(a, b) for a, b in zip(le + se, lc + sc))
    if not same and args.kernels:                 # fused chains may round differently from NumPy
        worst = max(float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(a))), 1e-30))
                    for a, b in zip(le + se, lc + sc))
        print(f"{args.steps} AdamW steps: losses, gradients and parameters within {worst:.1e} of eager's "
              "(fused kernels)")
        return 0 if worst <= 1e-4 else 1
    print(f"{args.steps} AdamW steps: losses, gradients and parameters identical to eager: {'yes' if same else 'NO'}")
    print(f"median step: eager {te:.1f} ms, compiled {tc:.1f} ms (noisy on a shared machine; "
          "python -m bench.step_overhead --compiled for the benchmark)")
    return 0 if same else 1


def cmd_run(args) -> int:
    """``tinygrad-tx run FILE.py [args...]``: ``tinygrad_tx.torch_shim.run_file(FILE, args)``, where
    ``args`` are the words after FILE (the script's own ``sys.argv[1:]``). An exception raised by
    the script shows its traceback (it is the script's error, not the command line's); the
    script's ``sys.exit(n)`` becomes the exit status."""
    path = Path(args.file)
    if not path.is_file():
        raise FileNotFoundError(2, "No such file", str(path)) if not path.exists() else \
            IsADirectoryError(21, "Is a directory", str(path))
    try:
        run_file = importlib.import_module(f"{__package__}.torch_shim").run_file
    except ModuleNotFoundError as e:
        if e.name != f"{__package__}.torch_shim":
            raise
        raise ModuleNotFoundError("'tinygrad-tx run' needs tinygrad_tx.torch_shim, which this version lacks") from None
    try:
        code = run_file(str(path), list(args.args))
    except SystemExit as e:
        code = e.code
    except KeyboardInterrupt:
        raise
    except BaseException as e:   # the script's own error: its traceback, as python FILE.py would show
        import traceback
        from .viz.script import syntax_error_line
        line = None if getattr(args, "debug", False) else syntax_error_line(e, str(path))
        if line is not None:     # nothing of the script ran: one line, as every other error of ours
            print(f"tinygrad-tx: error: {line}", file=sys.stderr)
            return 1
        traceback.print_exception(type(e), e, _from_frame_of(e.__traceback__, str(path)))
        return 1
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)            # sys.exit("message"), as Python does
    return 1


def _from_frame_of(tb, filename: str):
    """``tb`` from the first frame of ``filename`` on: the runner's own frames (cli, torch_shim,
    runpy) above the script's are left out, as ``python FILE.py`` shows none. Unchanged when no
    frame is the script's (an error before it ran)."""
    first = tb
    while first is not None and first.tb_frame.f_code.co_filename != filename:
        first = first.tb_next
    return first if first is not None else tb


# --------------------------------------------------------------------------- parser

def build_parser() -> Parser:
    from . import __version__
    parser = Parser(prog=PROG, description="Train and sample the Transformers of tinygrad_tx (NumPy autograd, "
                                           "hand-written backward passes), run PyTorch scripts on it, study "
                                           "their backward (graph, trace, explain, compile, exercise), draw "
                                           "the tutorial's pictures and benchmark against PyTorch.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    commands.required = True

    train = commands.add_parser("train", help="train a model", description="Train a model; each prints "
                                "its held-out metric and writes a checkpoint and a loss plot under runs/.")
    models = train.add_subparsers(dest="model", metavar="MODEL", parser_class=Parser)
    models.required = True
    for kind, cls in _configs().items():
        aliases = [a for a, k in TRAIN_ALIASES.items() if k == kind]
        p = models.add_parser(kind, aliases=aliases, help=TRAIN_HELP[kind], description=TRAIN_HELP[kind] + "." +
                              (" " + LOSS_NOTE if kind in ("gpt", "bigram") else ""))
        add_config_flags(p, cls)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        p.set_defaults(func=cmd_train)

    sample = commands.add_parser("sample", help="generate names from a 'train gpt' checkpoint",
                                 description="Generate names from a checkpoint written by 'train gpt', with any "
                                             "sampling strategy (tutorial section 9.2).")
    sample.add_argument("--checkpoint", default="runs/gpt/model.safetensors", metavar="PATH",
                        help="checkpoint written by 'train gpt' (default: %(default)s)")
    sample.add_argument("-n", "--num-samples", type=_number(int, 0), default=10, help="names (default: %(default)s)")
    sample.add_argument("--temperature", type=_number(float, 0.0), default=1.0,
                        help="softmax temperature; < 1 sharpens, > 1 flattens (default: %(default)s)")
    sample.add_argument("--top-k", type=_number(int, 1), default=None, help="keep the k most likely characters")
    sample.add_argument("--top-p", type=_number(float, 1e-12, 1.0), default=None,
                        help="nucleus: keep the most likely characters up to this total probability")
    sample.add_argument("--greedy", action="store_true", help="always take the most likely character")
    sample.add_argument("--seed", type=_number(int, 0), default=None, help="seed of the draws (default: fresh randomness)")
    sample.add_argument("--prefix", default="", help="start every name with these letters (a-z; upper case is "
                        "lower-cased, as the corpus is)")
    sample.add_argument("--max-len", type=_number(int, 1), default=None,
                        help="longest name in letters (default: block_size - 1)")
    sample.add_argument("--mark", action=argparse.BooleanOptionalAction, default=True,
                        help="mark each name as new, in the training set, or held out (default: on)")
    sample.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    sample.set_defaults(func=cmd_sample)

    bench = commands.add_parser("bench", add_help=False, help="run the benchmark (from a source checkout; "
                                "'tinygrad-tx bench --help' for its flags)")
    bench.add_argument("args", nargs=argparse.REMAINDER)
    bench.set_defaults(func=cmd_bench)

    run = commands.add_parser("run", help=RUN_HELP, description=RUN_HELP + ". The words after FILE are the "
                              "script's own arguments (its sys.argv[1:]).")
    run.add_argument("file", metavar="FILE.py", help="the script")
    run.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="the script's arguments")
    run.set_defaults(func=cmd_run)

    comp = commands.add_parser("compile", help=COMPILE_HELP, description=COMPILE_HELP + ": the same steps "
                               "(same seed, same batches) run eagerly and under tinygrad_tx.compile; says whether "
                               "losses, gradients and parameters are identical, and the median time of each.")
    comp.add_argument("file", nargs="?", default=None, metavar="FILE.py",
                      help="your own script (its `import torch` gives tinygrad_tx): compile the function "
                           "--call calls, against eager (default: the built-in GPT step)")
    comp.add_argument("--call", default=None, metavar="EXPR",
                      help="with FILE.py: the call to compile, evaluated in the script's namespace, e.g. "
                           "'train_step(x, y)'")
    comp.add_argument("--show", action="store_true",
                      help="print the recorded program: one line per NumPy call, forward, backward, update")
    comp.add_argument("--kernels", action="store_true",
                      help="compile with fuse=True (chains of elementwise steps as generated C loops) and "
                           "print their C source")
    comp.add_argument("--layers", type=_number(int, 1), default=4, help="GPT blocks (default: 4, the tutorial's)")
    comp.add_argument("--d-model", type=_number(int, 1), default=64, help="width (default: 64)")
    comp.add_argument("--steps", type=_number(int, 2), default=20,
                      help="AdamW steps (or calls of --call) of each (default: 20)")
    comp.add_argument("--dropout", type=float, default=0.1, help="dropout (default: 0.1)")
    comp.set_defaults(func=cmd_compile)

    from .training.study_commands import register_study_commands
    register_study_commands(commands)  # graph, trace, explain, plot
    from .exercises import register_exercise_commands
    register_exercise_commands(commands)  # exercise list|start|check|solution
    return parser


def _one_line(e: BaseException) -> str:
    if isinstance(e, FileNotFoundError) and e.filename:
        return f"file not found: {e.filename}"
    if isinstance(e, IsADirectoryError) and e.filename:
        return f"is a directory, not a file: {e.filename}"
    text = str(e) or type(e).__name__
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"{PROG}: warning: {_one_line(message if isinstance(message, Warning) else Warning(message))}",
          file=sys.stderr)


def main(argv=None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 error, 2 bad command line, 128 + the
    signal when stopped by SIGINT or, under the ``tinygrad-tx`` launcher, SIGTERM: one line, no traceback)."""
    try:
        return _main(argv)
    except KeyboardInterrupt as e:
        import signal
        signum = getattr(e, "signum", signal.SIGINT)
        print(f"{PROG}: interrupted ({signal.Signals(signum).name})", file=sys.stderr)
        if getattr(e, "exit_at_once", False):
            # a module half initialised by the stop (a SciPy extension) can crash the interpreter's
            # shutdown (seen: "Fatal Python error: PyThreadState_Get", status -6): leave at once,
            # flushing what was written (the checkpoint, if any, is already on disk: atomic writes)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(128 + int(signum))
        return 128 + int(signum)


def _stop_in(error):
    """The stop behind an error, as a KeyboardInterrupt to re-raise, or None. A SIGINT or SIGTERM
    that lands inside a C extension (SciPy's pybind11 modules while they initialise, matplotlib's
    path code) comes out as that extension's error: ImportError('initialization failed') or a
    RuntimeError raised from the stop, or a TypeError that does not even keep it (seen in the
    kill experiment: such stops exited 1, once -6, instead of 130 / 143). So: a KeyboardInterrupt
    in the error's chain, or the one training's handlers last raised (``signals.raised``). Such a
    stop may leave a module half initialised, so main leaves at once (``exit_at_once``)."""
    from tinygrad_tx_launch import _stop_behind   # installed beside the package (pyproject py-modules)
    from .training import signals
    stop = _stop_behind(error)
    if stop is None and signals.raised is not None:
        stop = signals.Interrupted(signals.raised)
    if stop is not None:
        stop.exit_at_once = True
    return stop


def _main(argv) -> int:
    from .training import signals
    signals.raised = None                       # this run's stops only (tests call main repeatedly)
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv
    from . import allocator
    allocator.apply_default_policy()        # the command's process: freed arrays kept for reuse
    try:
        if argv[:1] == ["bench"]:  # its flags (--help included) belong to the benchmark's parser
            args = argparse.Namespace(func=cmd_bench, args=argv[1:])
        elif argv[:1] == ["run"] and len(argv) > 1 and not argv[1].startswith("-"):
            args = argparse.Namespace(func=cmd_run, file=argv[1], args=argv[2:])   # the rest is the script's
        else:
            args = build_parser().parse_args(argv)
            args.argv = argv                # train's interruption line repeats the command with --resume
    except CommandLineError as e:
        print(_one_line(e), file=sys.stderr)
        return 2
    except SystemExit as e:  # --help, --version
        return e.code if isinstance(e.code, int) else 0
    previous = warnings.showwarning
    warnings.showwarning = _show_warning
    try:
        return args.func(args)
    except CommandLineError as e:
        print(_one_line(e), file=sys.stderr)
        return 2
    except BrokenPipeError:  # `tinygrad-tx ... | head`: the reader left; say nothing, as `cat` does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())   # Python's own flush at exit would raise again
        return 141                              # 128 + SIGPIPE, what a shell reports for it
    except Exception as e:                     # noqa: BLE001 - a stop in disguise is told apart here
        stop = _stop_in(e)
        if stop is not None:                    # a stop, not an error: main reports it (130 / 143)
            raise stop from None
        if debug or not isinstance(e, (ValueError, TypeError, OSError, ImportError, FloatingPointError)):
            raise
        print(f"{PROG}: error: {_one_line(e)}", file=sys.stderr)
        return 1
    finally:
        warnings.showwarning = previous


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
