"""Turn the benchmark's results dict into Markdown tables and PNG plots."""
from __future__ import annotations

from pathlib import Path

MB = 2 ** 20
PLOT_FILES = ("time_per_component.png", "ratio.png", "scaling_section11.png", "flash_vs_naive.png")  # what plots() may write


def _ms(s):
    return "–" if s is None else f"{s * 1e3:.3g}"


def _cell(stats):
    """'median (min–max)' in milliseconds."""
    if not stats or stats.get("median") is None:
        return "–"
    return f"{_ms(stats['median'])} ({_ms(stats['min'])}–{_ms(stats['max'])})"


def _num(x, fmt=".2f"):
    return "–" if x is None else format(x, fmt)


def _mb(b):
    return "–" if b is None else f"{b / MB:.2f}"


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _cfg(cfg):
    return ", ".join(f"{k}={'×'.join(map(str, v)) if isinstance(v, (list, tuple)) else v}" for k, v in cfg.items())


def _kernels(mode):
    """The ours worker's ``kernels.mode()`` in words: 'C kernels (gcc 12.2.0)' or 'NumPy code (why)'."""
    if mode is None:
        return "not recorded"
    return f"C kernels {mode[2:]}" if mode.startswith("c ") else f"NumPy code ({mode.partition(': ')[2]})"


def _compiled_section(rows) -> list:
    """The training steps in each of our modes and torch's, each ratio against torch eager: ours
    eager as a user gets it (with the C kernels where a compiler is found), on the NumPy path
    (``TINYGRAD_TX_KERNELS=0``), under ``tinygrad_tx.compile`` and ``compile(fuse=True)``; torch
    eager and ``torch.compile`` (full run only)."""
    steps = [r for r in rows if r.get("available") and any(
        k in r["results"][f] for f in ("ours", "torch") for k in ("compiled", "compiled_error"))]
    if not steps:
        return []
    out = ["## Training steps: eager, NumPy path, compiled, compiled + fused", "",
           "The same step (grads cleared, forward, backward, AdamW). Ours: *eager* as a user gets it (the fused "
           "ops run generated C kernels where a C compiler is found, see the header), *NumPy path* in a third "
           "process with `TINYGRAD_TX_KERNELS=0`, *compiled* under `tinygrad_tx.compile` (recorded at the first "
           "call, replayed as a straight-line program), *compiled + fused* under `tinygrad_tx.compile(fuse=True)` "
           "(its elementwise chains as generated C loops). Torch: eager and `torch.compile` (inductor; `--quick` "
           "skips it: 2-42 s of compiling per step measured here). Cells: median (min–max) ms, then in bold the "
           "ratio median / torch eager's median, and the same ratio of CPU seconds per call (steadier on a busy "
           "machine when each worker runs one thread).", ""]
    # (column, result label, mode)
    cols = [("ours eager", "ours", "fwdbwd"), ("ours NumPy path", "ours_numpy", "fwdbwd"),
            ("ours compiled", "ours", "compiled"), ("ours compiled + fused", "ours", "fused"),
            ("torch eager", "torch", "fwdbwd"), ("torch.compile", "torch", "compiled")]
    header = ["step"] + [c for c, _, _ in cols] + ["compile s: ours / fused / torch"]
    body = []
    for r in steps:
        res = r["results"]
        teager = res["torch"]["fwdbwd"]["median"]
        tcpu = res["torch"].get("cpu", {}).get("fwdbwd", {}).get("median")

        def cell(label, mode):
            side = res.get(label, {})
            why = {"compiled": "compiled_error", "fused": "fused_error"}.get(mode)
            if mode in side:
                cpu = side.get("cpu", {}).get(mode, {}).get("median")
                return f"{_cell(side[mode])} **{_num(side[mode]['median'] / teager)}**" + \
                    ("" if cpu is None or not tcpu else f" (CPU {_num(cpu / tcpu)})")
            return f"not run: {side[why][:60]}" if why in side else "–"

        seconds = " / ".join(_num(side.get(k), ".1f") for side, k in (
            (res["ours"], "compile_s"), (res["ours"], "fused_compile_s"), (res["torch"], "compile_s")))
        body.append([r["name"]] + [cell(lb, m) for _, lb, m in cols] + [seconds])
    return out + [_table(header, body), ""]


def markdown(res) -> str:
    meta = res["meta"]
    out = ["# tinygrad_tx benchmark" + (" (quick)" if meta.get("quick") else ""), ""]
    if meta.get("file"):
        out.append(f"Components from `{meta['file']}` (`tinygrad-tx bench --file`).")
    o, t = meta.get("ours", {}), meta.get("torch", {})
    peaks = meta.get("matmul_peak", {})
    pools = o.get("threadpoolctl") or []
    blas = ", ".join(f"{p.get('internal_api')} {p.get('version')}: {p.get('num_threads')}" for p in pools
                     if p.get("user_api") == "blas") or "threadpoolctl not installed"
    out.append(f"{meta['date']}; {meta['threads']} thread(s) for NumPy's BLAS and torch "
               f"(torch reports {t.get('torch_threads')}; NumPy's BLAS pools: {blas}); "
               f"numpy {o.get('numpy')}, torch {t.get('torch')}, "
               f"python {meta['python']}; attention in the models: `{meta.get('attn_impl')}`; "
               f"ours' fused ops (eager): {_kernels(o.get('kernels'))}."
               + (f" CUDA: {meta['torch_cuda'].get('cuda_device')}." if "torch_cuda" in meta else ""))
    if peaks:
        out.append("Measured float32 matmul peak: " + ", ".join(
            f"{k} {v['gflops']:.1f} GFLOP/s ({v['n']}³)" for k, v in peaks.items()) + ".")
    ls, le = meta.get("loadavg_start"), meta.get("loadavg_end")
    if ls:
        busy = meta.get("busy_machine", ls[0] > 0.5)
        out.append(f"Load average (1 min) at the start: {ls[0]:.2f}" + (f", at the end: {le[0]:.2f}" if le else "")
                   + (". **Other processes competed for the CPUs: multi-threaded timings, torch's OpenMP above "
                      "all, are unreliable; compare the CPU-time ratios or rerun on an idle machine.**"
                      if busy else "."))
    out.append("Times in ms: median (min–max) over all timed calls; ratio = median ours / median torch-CPU "
               "(wall clock; the targets use it). Ours and torch run in separate processes, interleaved round "
               "by round, after warm-up. The CPU-time ratio compares the processes' CPU seconds per call: "
               "with one thread per worker it is less sensitive to other load on the machine.")
    out.append("")

    rows = res.get("components", [])
    cuda = any("torch_cuda" in r["results"] for r in rows)
    if rows:
        out.append("## Time per component")
        out.append("")
        header = ["component", "ours fwd", "torch fwd", "fwd ratio", "ours fwd+bwd", "torch fwd+bwd",
                  "fwd+bwd ratio", "target", "f+b CPU-time ratio"]
        if cuda:
            header += ["torch CUDA fwd", "torch CUDA fwd+bwd"]
        body = []
        for r in rows:
            if not r.get("available"):
                body.append([r["name"], f"unavailable: {(r.get('error') or '').splitlines()[0][:80]}"]
                            + [""] * (len(header) - 2))
                continue
            ours, tor = r["results"]["ours"], r["results"]["torch"]
            ra = r["ratio"]
            tgt = r.get("target")
            line = [r["name"], _cell(ours["fwd"]), _cell(tor["fwd"]), _num(ra["fwd"]), _cell(ours["fwdbwd"]),
                    _cell(tor["fwdbwd"]), f"**{_num(ra['fwdbwd'])}**",
                    "–" if tgt is None else f"≤ {tgt:g} {'✓' if ra['fwdbwd'] <= tgt else '✗'}",
                    _num(r.get("ratio_cpu", {}).get("fwdbwd"))]
            if cuda:
                cu = r["results"].get("torch_cuda", {})
                line += [_cell(cu.get("fwd")), _cell(cu.get("fwdbwd"))]
            body.append(line)
        out.append(_table(header, body))
        out.append("")
        out.append("Configurations: " + "; ".join(f"`{r['name']}` {_cfg(r['config'])}" for r in rows) + ".")
        out.append("")
        out += _compiled_section(rows)

    acc = res.get("accuracy") or {}
    if rows or acc:
        out.append("## Accuracy (float32 vs a float64 oracle) and memory held for backward")
        out.append("")
        n_seeds = max((len(a.get("seeds", [])) for a in acc.values()), default=0)
        out.append("Error = max over the output and every gradient of max|x − oracle| / max|oracle| "
                   f"(random cotangent; worst of {n_seeds} seed(s)); oracle = torch float64 on the same "
                   "float32-rounded inputs; a gradient that is zero in exact arithmetic is measured against "
                   "the largest gradient. "
                   "Saved = peak bytes held for backward: ours counted by the engine per op (`SavedMemory`; "
                   "an array saved by two ops counts twice) and as distinct buffers (graph walk, each buffer "
                   "once); torch's by `saved_tensors_hooks` (each storage once). GFLOP/s from analytic FLOPs.")
        out.append("")
        header = ["component", "ours f32 err", "torch f32 err", "err ratio", "worst item", "ours f64 err",
                  "saved MB ours (per op)", "ours (distinct)", "saved MB torch", "GFLOP/s f+b ours",
                  "GFLOP/s f+b torch"]
        body = []
        names = [r["name"] for r in rows] or list(acc)
        by_name = {r["name"]: r for r in rows}
        for name in names:
            a = acc.get(name, {})
            r = by_name.get(name, {})
            res_ = r.get("results", {})
            ours, tor = res_.get("ours", {}), res_.get("torch", {})
            if "error" in a:
                err = ["unavailable", "", "", "", ""]
            elif a:
                err = [f"{a['ours']:.2e}", f"{a['torch']:.2e}", f"**{a['ratio']:.2f}**", a["worst_item"],
                       "–" if a.get("ours_f64") is None else f"{a['ours_f64']:.1e}"]
            else:
                err = ["–"] * 5
            body.append([name] + err + [_mb(ours.get("saved_bytes")), _mb(ours.get("saved_bytes_distinct")),
                                        _mb(tor.get("saved_bytes")),
                                        _num(ours.get("gflops_fwdbwd"), ".1f"), _num(tor.get("gflops_fwdbwd"), ".1f")])
        out.append(_table(header, body))
        out.append("")

    steps = [r for r in rows if r.get("kind") == "train" and r.get("available")]
    cpu_peaks = [v["gflops"] for k, v in peaks.items() if k in ("ours", "torch")]
    if steps and cpu_peaks:
        peak = max(cpu_peaks)
        out.append("## Training steps: achieved GFLOP/s against the measured matmul peak")
        out.append("")
        out.append("FLOPs per step = 6·tokens·N_matmul + 12·layers·batch·T²·d (2 FLOPs per multiply-add; "
                   "N_matmul = layers·12d² + d·vocab; see `bench/stats.py`). Machine peak = the best float32 "
                   f"1024³ matmul of NumPy and torch on the CPU (best of 10, at the start and the end): "
                   f"{peak:.1f} GFLOP/s.")
        out.append("")
        body = []
        for r in steps:
            ours, tor = r["results"]["ours"], r["results"]["torch"]
            go, gt = ours.get("gflops_fwdbwd"), tor.get("gflops_fwdbwd")
            body.append([r["name"], f"{r['flops_fwdbwd'] / 1e9:.3f}", ours.get("info", {}).get("params", "–"),
                         _num(go, ".2f"), "–" if not go else f"{100 * go / peak:.1f}%",
                         _num(gt, ".2f"), "–" if not gt else f"{100 * gt / peak:.1f}%"])
        out.append(_table(["step", "GFLOP / step", "params", "ours GFLOP/s", "ours % of peak", "torch CPU GFLOP/s",
                           "torch % of peak"], body))
        out.append("")

    rss = res.get("rss")
    if rss:
        out.append(f"## Peak RSS of a training step ({rss[0].get('steps')} step(s), fresh process per framework)")
        out.append("")
        out.append("ru_maxrss of a process that imports one framework, builds the model and runs the steps; "
                   "'peak − imports' is the step's own share (model, optimizer state, activations, temporaries).")
        out.append("")
        body = []
        for entry in rss:
            name = f"{entry['component']} ({entry['config'].get('attn_impl')})"
            for fw in ("ours", "torch"):
                r = entry.get(fw, {})
                if "error" in r:
                    body.append([name, fw, "error: " + r["error"].splitlines()[0][:60], "", "", "", "", ""])
                    continue
                ratio_cell = _num(entry.get("ratio_step_delta")) if fw == "ours" else ""
                body.append([name, fw, _mb(r["after_imports"]), _mb(r["after_build"]), _mb(r["peak"]),
                             _mb(r["step_delta"]), ratio_cell, _ms(r["seconds_per_step"])])
        out.append(_table(["step", "framework", "MB after imports", "MB after build", "MB peak",
                           "MB peak − imports", "ours/torch (peak − imports)", "ms / step"], body))
        out.append("")

    s11 = res.get("section11")
    if s11:
        d = s11[0]["d"]
        out.append(f"## Section 11: one causal self-attention layer, d = {d}, {s11[0]['heads']} heads, "
                   f"batch {s11[0]['batch']} (naive path)")
        out.append("")
        out.append(f"Tutorial: ≈ 4Td² + 2T²d multiply-adds per layer; the T² term takes over at T = 2d = {2 * d}. "
                   "Score memory = T·T·heads numbers (float32 here; the tutorial quotes 2 bytes for fp16).")
        out.append("")
        body = []
        for r in s11:
            o, tt = r.get("ours", {}), r.get("torch", {})
            body.append([r["T"], f"{r['macs_4Td2'] / 1e6:.2f}", f"{r['macs_2T2d'] / 1e6:.2f}",
                         f"{100 * r['t2_share']:.0f}%", _mb(r["score_bytes_f32"]),
                         _cell(o.get("fwdbwd")), _cell(tt.get("fwdbwd")),
                         _num(None if "fwdbwd" not in o else o["fwdbwd"]["median"] / tt["fwdbwd"]["median"]
                              if "fwdbwd" in tt else None),
                         _mb(o.get("saved_bytes")), _mb(o.get("saved_bytes_distinct")), _mb(tt.get("saved_bytes"))])
        out.append(_table(["T", "4Td² (M MAC)", "2T²d (M MAC)", "T² share", "scores MB", "ours f+b ms",
                           "torch f+b ms", "ratio", "saved MB ours (per op)", "ours (distinct)", "saved MB torch"],
                          body))
        out.append("")

    fs = res.get("flash_sweep")
    if fs:
        out.append(f"## Memory-efficient attention: naive vs tiled/flash (causal, {fs[0]['heads']} heads, "
                   f"d_head {fs[0]['d_head']}, batch {fs[0]['batch']}), forward+backward")
        out.append("")
        out.append("ours_naive: F.softmax(QKᵀ/√d + mask) V from primitives; ours_flash: "
                   "`tinygrad_tx.ops.flash_attention` (tiled, online softmax, recomputing backward); "
                   "torch_naive: the same primitives in torch; torch_fused: `F.scaled_dot_product_attention`.")
        out.append("")
        labels = ["ours_naive", "ours_flash", "torch_naive", "torch_fused"]
        body = []
        for r in fs:
            body.append([r["T"], _mb(r["score_bytes_f32"])]
                        + [_cell(r.get(lb, {}).get("fwdbwd")) for lb in labels]
                        + [_mb(r.get(lb, {}).get("saved_bytes_distinct") or r.get(lb, {}).get("saved_bytes"))
                           for lb in labels])
        out.append(_table(["T", "scores MB"] + [f"{lb} ms" for lb in labels] + [f"{lb} saved MB" for lb in labels],
                          body))
        out.append("")
        out.append("Saved MB here: distinct buffers for ours (graph walk), storages for torch.")
        out.append("")

    tg = res.get("targets")
    if tg:
        out.append("## Targets")
        out.append("")
        body = []
        for t in tg:
            met = "n/a" if t["met"] is None else ("met" if t["met"] else "**missed**")
            if t.get("hard_limit") is not None and t["met"] is False:
                met += f" (within {t['hard_limit']:g}×)" if t.get("within_hard") else f" (worse than {t['hard_limit']:g}×)"
            body.append([t["name"], _num(t["value"]), f"≤ {t['limit']:g}", met])
        out.append(_table(["target", "measured", "limit", "status"], body))
        n_met = sum(1 for t in tg if t["met"])
        n_known = sum(1 for t in tg if t["met"] is not None)
        out.append("")
        out.append(f"{n_met} of {n_known} measured targets met.")
        out.append("")
    out.append(f"Total benchmark time: {meta.get('elapsed_s', 0):.0f} s.")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- plots

def load_note(meta) -> str | None:
    """The warning every plot carries when the machine was loaded during the run (the load average
    at the start or the end, plus our threads, above the CPUs), else None."""
    ls, le = meta.get("loadavg_start"), meta.get("loadavg_end")
    cpus, threads = meta.get("cpu_count") or 1, meta.get("threads") or 1
    loads = [x[0] for x in (ls, le) if x]
    busy = meta.get("busy_machine") or any(x + threads > cpus + 0.25 for x in loads)
    if not busy:
        return None
    seen = " → ".join(f"{x:.2f}" for x in loads)
    return (f"machine loaded during the run (load average {seen} on {cpus} CPUs, {threads} thread(s) each): "
            "other processes shared the cores, so these times are unreliable")


# marker and line of each flash-sweep series: ours_flash and torch_fused hold the same O(T·d) memory, so
# ours_flash is drawn last, with large hollow markers that stay visible around torch_fused's small ones
FLASH_STYLES = {
    "ours_naive": dict(fmt="o-", ms=5),
    "torch_naive": dict(fmt="s--", ms=5),
    "torch_fused": dict(fmt="x:", ms=6, lw=1.2),
    "ours_flash": dict(fmt="D-", ms=10, mfc="none", mew=1.8, lw=2.2, alpha=0.85),
}


def plots(res, out_dir) -> list:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    written = []
    note = load_note(res.get("meta", {}))

    def save(fig, path):
        if note:
            fig.text(0.5, 0.005, note, ha="center", va="bottom", fontsize=8, color="firebrick")
            fig.tight_layout(rect=(0, 0.04, 1, 1))
        return _save(fig, path, layout=not note)
    rows = [r for r in res.get("components", []) if r.get("available")]
    if rows:
        # time per component (fwd+bwd), log scale, min–max as error bars
        labels = [r["name"] for r in rows]
        series = [("ours", "tinygrad_tx"), ("torch", "torch CPU"), ("torch_cuda", "torch CUDA")]
        series = [(k, n) for k, n in series if any(k in r["results"] and "fwdbwd" in r["results"][k] for r in rows)]
        fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.5))
        h = 0.8 / len(series)
        for i, (key, nice) in enumerate(series):
            med, lo, hi, ys = [], [], [], []
            for j, r in enumerate(rows):
                s = r["results"].get(key, {}).get("fwdbwd")
                if not s:
                    continue
                ys.append(j + i * h)
                med.append(s["median"] * 1e3)
                lo.append((s["median"] - s["min"]) * 1e3)
                hi.append((s["max"] - s["median"]) * 1e3)
            ax.barh(ys, med, height=h, xerr=[lo, hi], label=nice, capsize=2)
        ax.set_yticks([j + h * (len(series) - 1) / 2 for j in range(len(rows))], labels)
        ax.invert_yaxis()
        ax.set_xscale("log")
        _label(ax, "Time per component", "forward + backward time per call, ms (median, min–max)")
        written.append(save(fig, out_dir / "time_per_component.png"))

        # ours / torch ratio with targets
        fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.5))
        y = range(len(rows))
        ax.barh([j - 0.2 for j in y], [r["ratio"]["fwd"] for r in rows], height=0.4, label="forward")
        ax.barh([j + 0.2 for j in y], [r["ratio"]["fwdbwd"] for r in rows], height=0.4, label="forward + backward")
        for j, r in enumerate(rows):
            if r.get("target") is not None:
                ax.plot([r["target"]] * 2, [j - 0.45, j + 0.45], color="red", lw=2)
        ax.axvline(1.0, color="black", lw=0.8)
        ax.set_yticks(list(y), labels)
        ax.invert_yaxis()
        ax.set_xscale("log")
        _label(ax, "tinygrad_tx / torch", "time ratio tinygrad_tx / torch CPU (median; red: target)")
        written.append(save(fig, out_dir / "ratio.png"))

    s11 = res.get("section11")
    if s11:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
        T = [r["T"] for r in s11]
        d = s11[0]["d"]
        for key, nice in (("ours", "tinygrad_tx"), ("torch", "torch CPU")):
            pts = [(r["T"], r[key]["fwdbwd"]["median"] * 1e3) for r in s11 if "fwdbwd" in r.get(key, {})]
            if pts:
                a1.plot(*zip(*pts), "o-", label=f"{nice} fwd+bwd")
        ax2 = a1.twinx()
        ax2.plot(T, [r["macs_4Td2"] / 1e6 for r in s11], "--", color="gray", label="4Td² (M MAC)")
        ax2.plot(T, [r["macs_2T2d"] / 1e6 for r in s11], ":", color="gray", label="2T²d (M MAC)")
        ax2.set_yscale("log")
        ax2.set_ylabel("analytic multiply-adds (millions)")
        ax2.legend(loc="lower right", fontsize=8)
        for a in (a1, a2):
            a.axvline(2 * d, color="red", lw=0.8)
            a.annotate(f" T = 2d = {2 * d}", xy=(2 * d, 0.5), xycoords=("data", "axes fraction"), color="red",
                       fontsize=8)
        for a in (a1, a2):
            a.set_xscale("log", base=2)
            a.set_xlabel("sequence length T")
        a1.set_yscale("log")
        _label(a1, f"One attention layer, d = {d}: time", ylabel="ms per call", loc="upper left", fontsize=8)
        for key, field, nice, style in (("ours", "saved_bytes", "tinygrad_tx, per op (SavedMemory)", "o:"),
                                        ("ours", "saved_bytes_distinct", "tinygrad_tx, distinct buffers", "o-"),
                                        ("torch", "saved_bytes", "torch CPU (storages)", "s--")):
            pts = [(r["T"], r[key][field] / 2 ** 20) for r in s11 if r.get(key, {}).get(field)]
            if pts:
                a2.plot(*zip(*pts), style, label=nice)
        a2.plot(T, [r["score_bytes_f32"] / 2 ** 20 for r in s11], "--", color="gray", label="T·T·heads scores (f32)")
        a2.set_yscale("log")
        _label(a2, "memory held for backward", ylabel="MB", fontsize=8)
        written.append(save(fig, out_dir / "scaling_section11.png"))

    fs = res.get("flash_sweep")
    if fs:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
        for key, style in FLASH_STYLES.items():
            t_pts = [(r["T"], r[key]["fwdbwd"]["median"] * 1e3) for r in fs if "fwdbwd" in r.get(key, {})]
            m_pts = [(r["T"], (r[key].get("saved_bytes_distinct") or r[key]["saved_bytes"]) / 2 ** 20)
                     for r in fs if "saved_bytes" in r.get(key, {})]
            style = dict(style)
            fmt = style.pop("fmt")
            if t_pts:
                a1.plot(*zip(*t_pts), fmt, label=key, **style)
            if m_pts:
                a2.plot(*zip(*m_pts), fmt, label=key, **style)
        a2.plot([r["T"] for r in fs], [r["score_bytes_f32"] / 2 ** 20 for r in fs], ":", color="gray",
                label="one T×T×heads array")
        for a, yl, title in ((a1, "ms per fwd+bwd", "time"), (a2, "MB held for backward", "memory")):
            a.set_xscale("log", base=2)
            a.set_yscale("log")
            _label(a, f"naive vs tiled/flash attention: {title}", "sequence length T", yl, fontsize=8)
        written.append(save(fig, out_dir / "flash_vs_naive.png"))
    return written


def _label(ax, title, xlabel=None, ylabel=None, **legend):
    """Title, axis labels and legend (``legend``: keyword arguments of ``ax.legend``) of one panel."""
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    ax.legend(**legend)
    ax.set_title(title)


def _save(fig, path, layout: bool = True):
    """Lay out (unless done), write and close ``fig``; returns the path as a string."""
    import matplotlib.pyplot as plt
    if layout:
        fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)
