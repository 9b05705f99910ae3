"""``python -m bench`` / ``tinygrad-tx bench``: the whole benchmark, orchestrated.

Process layout (why: NumPy's OpenBLAS pool and torch's OpenMP pool slow each
other down inside one process):

* a long-lived ``ours`` worker (tinygrad_tx; never imports torch),
* a long-lived ``torch`` worker on the CPU with the same thread count,
* for the training steps (and ``--file`` entries with ``numpy_path=True``: the per-op table's
  kernel-backed ops), a long-lived ``ours_numpy`` worker: ours with ``TINYGRAD_TX_KERNELS=0``
  (the fused ops' NumPy code, where ``ours`` runs them as a user gets them: C kernels if a compiler is found),
* a ``torch`` worker on CUDA when ``torch.cuda.is_available()`` (extra columns),
* one accuracy process (imports both; nothing in it is timed),
* one fresh process per framework for the peak RSS of the large training step.

The accuracy process and the RSS probes run after all timing, side by side.

For every component each worker builds the case from the same seeded NumPy
arrays, runs warm-up calls, then the parent alternates rounds — ours, torch,
(cuda), then the other way round — asking each worker for ``n`` timed calls.
Only one worker runs at any moment. Reported: median and min–max per
framework, and the ratio of medians ours / torch-CPU.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from . import report
from .components import REGISTRY, main_components
from .protocol import REPO_ROOT, FileError, WorkerClient, WorkerError, WorkerTimeout, child_env
from .stats import ratio, summarize, tutorial_attention_macs
from .userfile import BenchFileError, register_described

MODES = ("fwd", "fwdbwd")


def _loadavg():
    try:
        return list(os.getloadavg())
    except (AttributeError, OSError):  # pragma: no cover - not Unix
        return None


def busy_machine(load, threads) -> bool:
    """True when the 1-minute load average plus our threads exceed the CPUs: the workers' threads
    would then share cores with other processes."""
    return bool(load) and load[0] + threads > default_threads() + 0.25


def default_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


CASE_TIMEOUT = 120.0   # --case-timeout: an ``ours`` (or torch) call that never returns stops the bench
COMPILED_TARGETS = {"gpt_tutorial": 0.70, "gpt_large": 0.80}   # issue 18: JAX jit's level on this CPU
FUSED_TARGETS = {"gpt_tutorial": 0.60, "gpt_large": 0.85}      # issue 33: compile(fuse=True)
# the training step's compiled modes: mode -> (result key of its first call's seconds, of why it did not run)
STEP_MODES = {"compiled": ("compile_s", "compiled_error"), "fused": ("fused_compile_s", "fused_error")}
NUMPY_PATH = {"TINYGRAD_TX_KERNELS": "0"}   # the ``ours_numpy`` worker: the fused ops' NumPy code, no C kernels
COMPILE_TIMEOUT = 300.0  # more for a setup that also compiles the training step (torch.compile: 2-26 s measured)


class Settings:
    """Round counts and budgets: --quick trades statistics for speed."""

    def __init__(self, quick: bool, rounds: int | None):
        self.quick = quick
        self.rounds = rounds or (3 if quick else 7)
        # even when the budget is exceeded; --rounds N asks for N rounds, budget or not
        self.min_rounds = rounds or min(2 if quick else 3, self.rounds)
        self.round_s = 0.05 if quick else 0.15      # target seconds of calls per worker per round
        self.case_budget_s = 4.0 if quick else 40.0  # cap on one component's timed calls, all workers
        self.warmup = 1 if quick else 2              # quick: setup's forward+backward is the fwdbwd warm-up
        self.max_n = 200
        self.case_timeout = CASE_TIMEOUT             # seconds one call of a case may take before it is stopped


def log(msg: str):
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- interleaved timing

def measure(contenders, settings: Settings, modes=MODES, seed=0, compiled=()):
    """Time ``contenders`` = [(label, worker, component, cfg)] against each other.

    Each contender's case is built in its worker (key = label); after warm-up the
    rounds alternate between contenders (direction reversed every round), so slow
    drifts of the machine hit all of them alike. Returns {label: {...}}; a
    contender whose setup failed gets {"error": ...}. The contenders named in ``compiled``
    also time mode ``compiled`` (a training step under their framework's compiler), and ours mode
    ``fused`` (under ``compile(fuse=True)``), where their worker could build it; else their result
    says why (``compiled_error``, ``fused_error``).
    """
    results, live, shapes, own_modes = {}, [], {}, {}
    limit = settings.case_timeout
    for label, worker, comp, cfg in contenders:
        want = label in compiled
        reply = worker.request("setup", key=label, component=comp, cfg=cfg, seed=seed, compiled=want,
                               timeout=limit + (COMPILE_TIMEOUT if want else 0))
        if not reply.get("ok"):
            results[label] = {"error": reply.get("error")}
            continue
        shapes[label] = reply.get("out_shape")
        built = [m for m in STEP_MODES if "compile_s" in (reply.get(m) or {})]
        own_modes[label] = tuple(modes) + tuple(built)
        results[label] = {"saved_bytes": reply["saved_bytes"], "first_fwdbwd_s": reply["first_fwdbwd_s"],
                          "saved_bytes_distinct": reply.get("saved_bytes_distinct"),
                          "flops_fwd": reply["flops_fwd"],
                          "flops_fwdbwd": reply["flops_fwdbwd"], "info": reply.get("info", {}),
                          "times": {m: [] for m in own_modes[label]},
                          "cpu_times": {m: [] for m in own_modes[label]}}
        for m, (seconds, why) in STEP_MODES.items():
            c = reply.get(m) or {}
            if want and (c or m == "compiled"):      # fused: ours only
                results[label][seconds if "compile_s" in c else why] = \
                    c.get("compile_s", c.get("error", "this case has no training step to compile"))
        live.append((label, worker))
    reference = shapes.get("torch")
    wrong = {lb: sh for lb, sh in shapes.items() if reference is not None and sh is not None and sh != reference}
    if wrong:      # a contender computing something else is refused, naming the case; nothing is timed
        error = f"{contenders[0][2]}: " + ", ".join(f"{lb} returned shape {tuple(sh)}" for lb, sh in wrong.items()) + \
            f" where torch returns {tuple(reference)}; not timed"
        for label, worker in live:
            worker.call("release", key=label)
            results[label] = {"error": error}
        return results
    if not live:
        return results
    # warm-up, and the per-call estimate that sizes the rounds
    est = {}
    for label, worker in live:
        for m in own_modes[label]:
            if m == "fwdbwd" and settings.quick:
                est[(label, m)] = max(results[label]["first_fwdbwd_s"], 1e-6)
                continue
            t = worker.call("time", key=label, mode=m, n=settings.warmup, timeout=limit * settings.warmup)["times"]
            est[(label, m)] = max(sorted(t)[len(t) // 2], 1e-6)
    n = {k: int(min(settings.max_n, max(1, round(settings.round_s / v)))) for k, v in est.items()}
    per_round = sum(n[k] * est[k] for k in n)
    rounds = max(settings.min_rounds, min(settings.rounds, int(settings.case_budget_s / max(per_round, 1e-9))))
    all_modes = tuple(modes) + tuple(m for m in STEP_MODES if any(m in own for own in own_modes.values()))
    for r in range(rounds):
        order = live if r % 2 == 0 else live[::-1]
        for m in all_modes:
            for label, worker in order:
                if m not in own_modes[label]:
                    continue
                reply = worker.call("time", key=label, mode=m, n=n[(label, m)], timeout=limit * n[(label, m)])
                results[label]["times"][m] += reply["times"]
                results[label]["cpu_times"][m] += reply["cpu_times"]
    for label, worker in live:
        worker.call("release", key=label)
        res = results[label]
        res["stats"] = {m: summarize(res["times"][m]) for m in own_modes[label]}
        res["cpu_stats"] = {m: summarize(res["cpu_times"][m]) for m in own_modes[label]}
        res["rounds"] = rounds
    return results


def gflops(flops, seconds):
    return None if not flops or not seconds else flops / seconds / 1e9


def compiled_contenders(quick: bool) -> tuple:
    """Who times the training steps compiled: ours always; torch.compile (2-26 s of compiling per
    step on a 2-core machine) only in the full run."""
    return ("ours",) if quick else ("ours", "torch")


def run_components(workers, names, settings, attn_impl, numpy_worker=None):
    """Time each component in every worker; a training step (and a ``--file`` entry with
    ``numpy_path``) also in ``numpy_worker`` (``ours_numpy``: ours with ``TINYGRAD_TX_KERNELS=0``),
    a training step compiled too (``compiled_contenders``)."""
    rows = []
    for name in names:
        comp = REGISTRY[name]
        cfg = comp.config(settings.quick)
        if attn_impl and "attn_impl" in cfg and not comp.variant:
            cfg["attn_impl"] = attn_impl
        t0 = time.perf_counter()
        compiled = compiled_contenders(settings.quick) if comp.kind == "train" else ()
        extra = [numpy_worker] if numpy_worker is not None and comp.on_numpy_path() else []
        res = measure([(w.label, w, name, cfg) for w in workers + extra], settings, compiled=compiled)
        row = {"name": name, "kind": comp.kind, "doc": comp.doc, "config": cfg, "target": comp.target,
               "results": {}}
        for label, r in res.items():
            if "error" in r:
                row["results"][label] = {"error": r["error"]}
                continue
            row["results"][label] = {
                "fwd": r["stats"]["fwd"], "fwdbwd": r["stats"]["fwdbwd"], "saved_bytes": r["saved_bytes"],
                "saved_bytes_distinct": r["saved_bytes_distinct"],
                "rounds": r["rounds"], "info": r["info"], "times": r["times"], "cpu": r["cpu_stats"],
                "gflops_fwd": gflops(r["flops_fwd"], r["stats"]["fwd"]["median"]),
                "gflops_fwdbwd": gflops(r["flops_fwdbwd"], r["stats"]["fwdbwd"]["median"])}
            for m, keys in STEP_MODES.items():
                row["results"][label].update({k: r[k] for k in keys if k in r})
                if m in r["stats"]:
                    row["results"][label][m] = r["stats"][m]
            row["flops_fwd"], row["flops_fwdbwd"] = r["flops_fwd"], r["flops_fwdbwd"]
        ours, torch_ = row["results"].get("ours", {}), row["results"].get("torch", {})
        row["available"] = "fwd" in ours and "fwd" in torch_
        row["error"] = ours.get("error") or torch_.get("error")
        if row["available"]:
            row["ratio"] = {m: ratio(ours[m]["median"], torch_[m]["median"]) for m in MODES}
            # CPU-time medians: less sensitive to other processes when each worker runs one thread
            row["ratio_cpu"] = {m: ratio(ours["cpu"][m]["median"], torch_["cpu"][m]["median"]) for m in MODES}
            if "fwd" in row["results"].get("torch_cuda", {}):
                cu = row["results"]["torch_cuda"]
                row["ratio_cuda"] = {m: ratio(ours[m]["median"], cu[m]["median"]) for m in MODES}
            teager = torch_["fwdbwd"]["median"]
            row["ratio_compiled"] = {k: ratio(v["compiled"]["median"], teager)
                                     for k, v in (("ours", ours), ("torch", torch_)) if "compiled" in v}
            if "fused" in ours:
                row["ratio_compiled"]["ours_fused"] = ratio(ours["fused"]["median"], teager)
            if "fwdbwd" in row["results"].get("ours_numpy", {}):
                row["ratio_numpy"] = ratio(row["results"]["ours_numpy"]["fwdbwd"]["median"], teager)
            extra = "".join(f"  {k.replace('_', ' ')} {'' if k.endswith('fused') else 'compiled '}{v:.2f}"
                            for k, v in row["ratio_compiled"].items())
            extra += f"  ours NumPy path {row['ratio_numpy']:.2f}" if "ratio_numpy" in row else ""
            log(f"  {name:18s} f+b ours {ours['fwdbwd']['median'] * 1e3:9.2f} ms  torch "
                f"{teager * 1e3:9.2f} ms  ratio {row['ratio']['fwdbwd']:.2f}{extra}  "
                f"({time.perf_counter() - t0:.1f} s)")
        else:
            log(f"  {name:18s} unavailable: {(row['error'] or '').splitlines()[0] if row['error'] else '?'}")
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- sweeps

def section11_sweep(ours, torch_w, settings, d=64, heads=4, batch=2):
    """One causal self-attention layer (naive path, the tutorial's code) at T = 32 … 2048, fixed d."""
    Ts = [32, 64, 128, 256] if settings.quick else [32, 64, 128, 256, 512, 1024, 2048]
    settings = Settings(settings.quick, min(settings.rounds, 3 if settings.quick else 5))
    rows = []
    for T in Ts:
        cfg = dict(batch=batch, T=T, d=d, heads=heads, attn_impl="naive")
        res = measure([("ours", ours, "attn_layer", cfg), ("torch", torch_w, "attn_layer", cfg)], settings,
                      modes=("fwdbwd",))
        macs_proj, macs_attn = 4 * T * d * d, 2 * T * T * d
        row = {"T": T, "d": d, "heads": heads, "batch": batch,
               "tutorial_macs": tutorial_attention_macs(T, d), "macs_4Td2": macs_proj, "macs_2T2d": macs_attn,
               "t2_share": macs_attn / (macs_proj + macs_attn),
               "score_bytes_f32": batch * heads * T * T * 4, "score_bytes_f16": batch * heads * T * T * 2}
        for label in ("ours", "torch"):
            r = res[label]
            row[label] = {"error": r["error"]} if "error" in r else {
                "fwdbwd": r["stats"]["fwdbwd"], "saved_bytes": r["saved_bytes"],
                "saved_bytes_distinct": r["saved_bytes_distinct"],
                "gflops": gflops(r["flops_fwdbwd"], r["stats"]["fwdbwd"]["median"])}
        rows.append(row)
        log(f"  section 11  T={T:5d}  " + "  ".join(
            f"{lb} {row[lb]['fwdbwd']['median'] * 1e3:8.2f} ms" for lb in ("ours", "torch") if "fwdbwd" in row[lb]))
    return rows


def flash_sweep(ours, torch_w, settings, heads=4, d_head=16, batch=1):
    """Attention core, naive (T×T materialised) vs tiled/flash, T up to 4096."""
    Ts = [256, 512, 1024] if settings.quick else [256, 512, 1024, 2048, 4096]
    paths = [("ours_naive", ours, "naive"), ("ours_flash", ours, "flash"),
             ("torch_naive", torch_w, "naive"), ("torch_fused", torch_w, "flash")]
    sweep_settings = Settings(settings.quick, 2 if settings.quick else 3)
    sweep_settings.warmup = 1
    rows = []
    for T in Ts:
        contenders = [(label, w, "attn_core", dict(batch=batch, heads=heads, T=T, d_head=d_head, impl=impl))
                      for label, w, impl in paths]
        res = measure(contenders, sweep_settings, modes=("fwdbwd",))
        row = {"T": T, "heads": heads, "d_head": d_head, "batch": batch,
               "score_bytes_f32": batch * heads * T * T * 4}
        for label, *_ in paths:
            r = res[label]
            row[label] = {"error": r["error"]} if "error" in r else {
                "fwdbwd": r["stats"]["fwdbwd"], "saved_bytes": r["saved_bytes"],
                "saved_bytes_distinct": r["saved_bytes_distinct"]}
        rows.append(row)
        log(f"  flash sweep T={T:5d}  " + "  ".join(
            f"{lb} {row[lb]['fwdbwd']['median'] * 1e3:.1f} ms/"
            f"{(row[lb]['saved_bytes_distinct'] or row[lb]['saved_bytes']) / 2**20:.1f} MB"
            for lb, *_ in paths if "fwdbwd" in row[lb]))
    return rows


# --------------------------------------------------------------------------- separate processes

def start_json(cmd, threads):
    """Start ``python -m <cmd>`` whose last stdout line is a JSON object; see :func:`finish_json`."""
    return subprocess.Popen([sys.executable, "-m", *cmd], cwd=str(REPO_ROOT), env=child_env(threads),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish_json(proc, timeout):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(proc.args[2:])} failed (code {proc.returncode}):\n{err[-3000:]}")
    return json.loads(out.strip().splitlines()[-1])


def run_json(cmd, threads, timeout):
    return finish_json(start_json(cmd, threads), timeout)


def start_accuracy(names, quick, attn_impl, file=None):
    """The accuracy process, started with one thread: it runs while the RSS probes do (nothing
    in either is timed), after all timing is over. ``file``: a bench --file whose entries it loads."""
    cfgs = {}
    for n in names:
        cfg = REGISTRY[n].config(quick)
        if attn_impl and "attn_impl" in cfg and not REGISTRY[n].variant:
            cfg["attn_impl"] = attn_impl
        cfgs[n] = cfg
    cmd = ["bench.accuracy", "--only", ",".join(names), "--cfg", json.dumps(cfgs)] + (["--quick"] if quick else [])
    cmd += [] if file is None else ["--file", str(file)]
    return start_json(cmd, 1)


def run_rss(component, steps, threads, attn_impl):
    """{"component", "config", "ours": {...}, "torch": {...}} from one fresh process per framework."""
    cfg = dict(REGISTRY[component].full)
    if attn_impl and "attn_impl" in cfg and not REGISTRY[component].variant:
        cfg["attn_impl"] = attn_impl
    out = {"component": component, "config": cfg, "steps": steps}
    for fw in ("ours", "torch"):
        try:
            out[fw] = run_json(["bench.rss", fw, component, "--steps", str(steps), "--cfg", json.dumps(cfg)],
                               threads, 1800)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            out[fw] = {"error": str(e)}
    if "step_delta" in out["ours"] and "step_delta" in out["torch"]:
        out["ratio_step_delta"] = ratio(out["ours"]["step_delta"], out["torch"]["step_delta"])
        out["ratio_peak"] = ratio(out["ours"]["peak"], out["torch"]["peak"])
    return out


# --------------------------------------------------------------------------- targets

ACCURACY_GOAL, ACCURACY_LIMIT, RSS_LIMIT = 1.0, 2.0, 0.6


def evaluate_targets(rows, accuracy, rss):
    targets = []
    for row in rows:
        if row["target"] is None:
            continue
        value = row.get("ratio", {}).get("fwdbwd") if row.get("available") else None
        targets.append({"name": f"{row['name']} fwd+bwd time ours/torch-CPU", "value": value,
                        "limit": row["target"], "met": None if value is None else value <= row["target"]})
    for row in rows:
        for key, limits, what in (("ours", COMPILED_TARGETS, "compiled"),
                                  ("ours_fused", FUSED_TARGETS, "compiled + fused")):
            limit = limits.get(row["name"])
            if limit is not None and key in row.get("ratio_compiled", {}):
                v = row["ratio_compiled"][key]
                targets.append({"name": f"{row['name']} {what} step time ours/torch-CPU eager", "value": v,
                                "limit": limit, "met": v <= limit})
    for entry in (rss or [])[:1]:   # the first entry is the step the target is about
        v = entry.get("ratio_step_delta")
        targets.append({"name": f"{entry['component']} peak RSS of the training step (peak − after imports) "
                                f"ours/torch, attn_impl={entry['config'].get('attn_impl')}",
                        "value": v, "limit": RSS_LIMIT, "met": None if v is None else v <= RSS_LIMIT})
    for name, acc in (accuracy or {}).items():
        if "error" in acc:
            targets.append({"name": f"{name} float32 error ours/torch", "value": None, "limit": ACCURACY_GOAL,
                            "met": None})
            continue
        v = acc["ratio"]
        targets.append({"name": f"{name} float32 error ours/torch", "value": v, "limit": ACCURACY_GOAL,
                        "met": v <= ACCURACY_GOAL, "hard_limit": ACCURACY_LIMIT, "within_hard": v <= ACCURACY_LIMIT})
    return targets


# --------------------------------------------------------------------------- main

def parse_args(argv):
    ap = argparse.ArgumentParser(prog="tinygrad-tx bench", description=__doc__.split("\n")[0].replace("``", ""),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer rounds and a shorter sweep, one thread per "
                    "framework unless --threads says otherwise (64 s measured on an idle 2-core machine, 111 s "
                    "on a loaded one)")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads for NumPy's BLAS and torch (default: 1 with --quick, whose short timings are "
                         "meaningless when threads wait for busy cores; else the CPUs this process may use)")
    ap.add_argument("--file", default=None, metavar="BENCH_FILE.py",
                    help="benchmark your own ops or modules instead of the built-in components: the file "
                         "defines BENCH = [dict(name=, ours=, torch=, inputs=, sizes=), ...] (bench/README.md); "
                         "the sweeps and the RSS probe are skipped")
    ap.add_argument("--replot", default=None, metavar="RESULTS.json",
                    help="time nothing: redraw the report and plots of an earlier run's results.json into --out")
    ap.add_argument("--only", default="", help="comma-separated components (default: all); "
                    f"known: {', '.join(c.name for c in main_components())}")
    ap.add_argument("--out", default=None,
                    help="directory for results.json, results.md and the PNG plots (default: a new folder "
                         "per run, bench/results/run-YYYYmmdd-HHMMSS, with bench/results/latest pointing to it; "
                         "--replot: the results.json's own folder)")
    ap.add_argument("--rounds", type=int, default=None, help="timing rounds per component (default 7, "
                    "quick 3, fewer when a component's calls pass its time budget; when given, exactly these)")
    ap.add_argument("--attn-impl", choices=("naive", "fused", "flash"), default=None,
                    help="attention implementation in both twins' models (default: naive, the tutorial's code)")
    ap.add_argument("--no-cuda", action="store_true", help="skip the CUDA columns even if CUDA is available")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: "
                    "components, accuracy, rss, section11, flash, plots")
    ap.add_argument("--rss-steps", type=int, default=None, help="training steps in each RSS process "
                    "(default 3, quick 1)")
    ap.add_argument("--case-timeout", type=float, default=CASE_TIMEOUT, metavar="SECONDS",
                    help="stop the bench when one call of a case takes longer (an op that never returns); "
                         "default %(default)s")
    ap.add_argument("--rss-component", default="gpt_large", help="training step whose peak RSS is measured "
                    "(gpt_large: also its fused and flash variants, except with --quick)")
    return ap.parse_args(argv)


def thread_count(args) -> int:
    """``--threads``, else 1 for ``--quick`` (a few short calls per component: one thread waiting
    for a busy core turned ratios into noise, embedding 0.02), else the CPUs."""
    return args.threads or (1 if args.quick else default_threads())


def check_names(names):
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise SystemExit(f"unknown component(s): {', '.join(unknown)}; known: {', '.join(REGISTRY)}")


def file_component_names(meta, args):
    """``--file``: the components both workers registered from the file (the parent imports
    neither framework, so it learns them from the workers' ``hello``), as ``--quick`` or the
    full run selects them, narrowed by ``--only``."""
    ours, theirs = meta["ours"].get("file_components"), meta["torch"].get("file_components")
    if ours is None or [d["name"] for d in ours] != [d["name"] for d in theirs or []]:
        raise WorkerError(f"bench --file: the workers registered different components: {ours} vs {theirs}")
    register_described(ours)
    names = [d["name"] for d in ours if d["quick" if args.quick else "full"]]
    only = [n for n in args.only.split(",") if n]
    if only:
        check_names(only)
        names = [n for n in names if n in only] or only
    return names


def main(argv=None) -> int:
    """The benchmark; with ``--file``, an error of the file (it does not import, no ``BENCH``, bad
    keys) or a case that does not return within ``--case-timeout`` is one line and status 1."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return _main(args)
    except (BenchFileError, FileError, WorkerTimeout) as e:
        print(f"tinygrad-tx bench: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 1


RESULTS_ROOT = Path(__file__).resolve().parent / "results"
WRITTEN = ("results.json", "results.md") + report.PLOT_FILES


def run_folder(out) -> Path:
    """Where this run writes: ``--out`` as given, cleared of an earlier run's files (so no stale
    plot lies beside new results), or by default a new ``bench/results/run-<time>`` folder, with
    ``bench/results/latest`` pointing to it."""
    if out is not None:
        out_dir = Path(out)
        out_dir.mkdir(parents=True, exist_ok=True)
        for name in WRITTEN:
            (out_dir / name).unlink(missing_ok=True)
        return out_dir
    stamp = datetime.datetime.now().strftime("run-%Y%m%d-%H%M%S")
    out_dir, k = RESULTS_ROOT / stamp, 1
    while out_dir.exists():
        k += 1
        out_dir = RESULTS_ROOT / f"{stamp}-{k}"
    out_dir.mkdir(parents=True)
    latest = RESULTS_ROOT / "latest"
    try:
        if latest.is_symlink() or latest.exists():
            latest.unlink()
        latest.symlink_to(out_dir.name, target_is_directory=True)
    except OSError:
        pass                          # no symlinks here (Windows without the privilege): the folder stands
    return out_dir


def _main(args) -> int:
    if args.replot:
        return replot(args.replot, args.out if args.out is not None else Path(args.replot).resolve().parent)
    t_start = time.perf_counter()
    threads = thread_count(args)
    skip = {s for s in args.skip.split(",") if s}
    settings = Settings(args.quick, args.rounds)
    settings.case_timeout = args.case_timeout
    bench_file = None
    if args.file:
        bench_file = Path(args.file).resolve()
        if not bench_file.is_file():
            raise SystemExit(f"bench --file: no such file {args.file!r}")
        skip |= {"section11", "flash", "rss"}   # they measure the built-in models
    else:
        names = [n for n in args.only.split(",") if n] or [c.name for c in main_components(args.quick)]
        check_names(names)
    out_dir = run_folder(args.out)

    log(f"bench: {threads} thread(s), {'quick' if args.quick else 'full'} run, results in {out_dir}")
    load = _loadavg()
    if busy_machine(load, threads):
        log(f"warning: load average {load[0]:.2f} before starting: other processes compete for the CPUs, "
            "and multi-threaded timings (torch's OpenMP above all) suffer; an idle machine or --threads 1 "
            "gives steadier ratios")
    results = {"meta": {"date": datetime.datetime.now().isoformat(timespec="seconds"), "quick": args.quick,
                        "threads": threads, "python": platform.python_version(), "machine": platform.machine(),
                        "processor": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
                        "attn_impl": args.attn_impl or "naive", "loadavg_start": load,
                        "busy_machine": busy_machine(load, threads)}}
    if bench_file is not None:
        results["meta"]["file"] = str(bench_file)
    ours = WorkerClient("ours", threads=threads, file=bench_file)
    try:
        torch_w = WorkerClient("torch", threads=threads, file=bench_file)
    except WorkerError:
        ours.close()
        raise
    workers = [ours, torch_w]
    numpy_w = None     # ours on the NumPy path: training steps and --file entries with numpy_path (not in the matmul peaks)
    try:
        results["meta"]["ours"] = ours.call("hello")
        results["meta"]["torch"] = torch_w.call("hello")
        if bench_file is not None:
            names = file_component_names(results["meta"], args)
        if results["meta"]["torch"].get("torch_imported") is False:
            raise WorkerError("torch worker did not import torch")
        if results["meta"]["ours"]["torch_imported"]:
            raise WorkerError("the ours worker imported torch")
        if any(REGISTRY[n].on_numpy_path() for n in names) and "components" not in skip:
            numpy_w = WorkerClient("ours", threads=threads, label="ours_numpy", env=NUMPY_PATH, file=bench_file)
            results["meta"]["ours_numpy"] = numpy_w.call("hello")
        if results["meta"]["torch"].get("cuda_available") and not args.no_cuda:
            cuda = WorkerClient("torch", device="cuda", threads=threads, file=bench_file)
            workers.append(cuda)
            results["meta"]["torch_cuda"] = cuda.call("hello")
        peak_n = 1024
        results["meta"]["matmul_peak"] = {w.label: w.call("matmul_peak", n=peak_n, reps=10) for w in workers}
        log(f"float32 matmul peak ({peak_n}³): " + ", ".join(
            f"{k} {v['gflops']:.1f} GFLOP/s" for k, v in results["meta"]["matmul_peak"].items()))

        if "components" not in skip:
            log("components:")
            results["components"] = run_components(workers, names, settings, args.attn_impl, numpy_w)
        if "section11" not in skip:
            log("section 11 sweep (one causal self-attention layer, d = 64):")
            results["section11"] = section11_sweep(ours, torch_w, settings)
        if "flash" not in skip:
            log("naive vs tiled/flash attention:")
            results["flash_sweep"] = flash_sweep(ours, torch_w, settings)
        if ours.call("hello")["torch_imported"]:
            raise WorkerError("the ours worker imported torch while running the components")
        # measure the peak again at the end and keep the best: one busy moment must not lower it
        for w in workers:
            again = w.call("matmul_peak", n=peak_n, reps=10)
            if again["gflops"] > results["meta"]["matmul_peak"][w.label]["gflops"]:
                results["meta"]["matmul_peak"][w.label] = again
    finally:
        for w in workers + ([numpy_w] if numpy_w is not None else []):
            w.close()

    acc_proc = None
    if "accuracy" not in skip:
        log("accuracy (float32 vs float64 oracle) in the background ...")
        acc_proc = start_accuracy(names, args.quick, args.attn_impl, bench_file)
    if "rss" not in skip:
        steps = args.rss_steps or (1 if args.quick else 3)
        rss_names = [args.rss_component] + ([] if args.quick or args.rss_component != "gpt_large"
                                            else ["gpt_large_fused", "gpt_large_flash"])
        results["rss"] = []
        for comp in rss_names:
            log(f"peak RSS of the {comp} training step (fresh process per framework) ...")
            results["rss"].append(run_rss(comp, steps, threads, args.attn_impl))
    if acc_proc is not None:
        try:
            results["accuracy"] = finish_json(acc_proc, 3600)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            results["accuracy"] = {}
            results["accuracy_error"] = str(e)
            log(f"  accuracy failed: {e}")
    results["meta"]["loadavg_end"] = _loadavg()

    results["targets"] = evaluate_targets(results.get("components", []), results.get("accuracy"),
                                          results.get("rss"))
    results["meta"]["elapsed_s"] = time.perf_counter() - t_start
    md = report.markdown(results)
    (out_dir / "results.json").write_text(json.dumps(results, indent=1, default=str))
    (out_dir / "results.md").write_text(md)
    if "plots" not in skip:
        try:
            results["plots"] = report.plots(results, out_dir)
        except ImportError as e:
            log(f"plots skipped: {e} (pip install matplotlib)")
    print(md)
    log(f"wrote {out_dir / 'results.json'}, {out_dir / 'results.md'}"
        + (f" and {len(results.get('plots', []))} plots" if results.get("plots") else "")
        + f" in {results['meta']['elapsed_s']:.0f} s")
    return 0


def replot(results_json, out) -> int:
    """``--replot``: results.md and the PNG plots again from a saved results.json (nothing is timed)."""
    results = json.loads(Path(results_json).read_text())
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.md").write_text(report.markdown(results))
    written = report.plots(results, out_dir)
    log(f"wrote {out_dir / 'results.md'} and {len(written)} plots from {results_json}")
    return 0
