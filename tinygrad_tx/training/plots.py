"""PNG plots of training runs (matplotlib, Agg backend: no display needed)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..viz.pictures import pyplot as _pyplot   # matplotlib.pyplot on the Agg backend


def _save(plt, fig, path) -> Path:
    """Save the figure atomically (a temporary file beside it, then ``os.replace``: a killed run
    never leaves half a PNG), in the format the suffix names (PNG by default)."""
    from ..files import atomic_write
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        atomic_write(path, lambda tmp: fig.savefig(tmp, format=path.suffix[1:].lower() or "png"))
    finally:
        plt.close(fig)
    return path


def smooth(values, window: int) -> np.ndarray:
    """Trailing moving average (the first points average what exists so far)."""
    v = np.asarray(values, dtype=np.float64)
    if window <= 1 or v.size == 0:
        return v
    c = np.cumsum(np.insert(v, 0, 0.0))
    idx = np.arange(1, v.size + 1)
    lo = np.maximum(idx - window, 0)
    return (c[idx] - c[lo]) / (idx - lo)


def metric_axis(values) -> tuple[float, float]:
    """Limits of the metric axis. A fraction (accuracy, exact match: every value in [0, 1]) gets
    the whole [0, 1]: autoscaled, 0.808 -> 0.816 over two points filled the panel like a steep
    climb. Anything else: its range, padded by 5%."""
    v = np.asarray(values, dtype=np.float64)
    if v.size and np.all((v >= 0) & (v <= 1)):
        return 0.0, 1.0
    lo, hi = float(v.min()), float(v.max())
    pad = 0.05 * (hi - lo) or 0.05 * max(abs(hi), 1.0)
    return lo - pad, hi + pad


def plot_history(history: dict, path, title: str, metric: str | None = None, reference: dict | None = None):
    """Train loss per step (raw and smoothed) and the dev evaluations; ``metric`` (e.g.
    ``'dev_acc'``) goes on a second axis; ``reference`` = {label: y} draws horizontal lines."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    steps, loss = np.asarray(history["step"]), np.asarray(history["loss"])
    ax.plot(steps, loss, color="tab:blue", alpha=0.25, lw=0.8, label="train loss (per step)")
    ax.plot(steps, smooth(loss, max(len(loss) // 50, 1)), color="tab:blue", lw=1.6, label="train loss (smoothed)")
    evals = history.get("evals", [])
    loss_keys = [k for k in (evals[0] if evals else {}) if k.endswith("_loss")]
    for k in loss_keys:
        ax.plot([e["step"] for e in evals], [e[k] for e in evals], "o-", color="tab:orange", lw=1.6,
                label=k.replace("_", " "))
    for label, y in (reference or {}).items():   # labelled in the legend: a label on the line hid short curves
        ax.axhline(y, color="gray", ls="--", lw=1, label=label)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats)")
    ax.set_title(title)
    lo = min([float(np.percentile(loss, 1))] + [e[k] for e in evals for k in loss_keys] + list((reference or {}).values()))
    hi = float(np.percentile(loss, 99)) if loss.size > 20 else float(loss.max())
    ax.set_ylim(lo - 0.05 * (hi - lo + 1e-9), hi + 0.05 * (hi - lo + 1e-9))
    handles, labels = ax.get_legend_handles_labels()
    if metric and evals and metric in evals[0]:
        ax2 = ax.twinx()
        values = [e[metric] for e in evals]
        label = f"{metric.replace('_', ' ')} (last {values[-1]:.3f})"
        h = ax2.plot([e["step"] for e in evals], values, "s-", color="tab:green", lw=1.4, label=label)
        lo_m, hi_m = metric_axis(values)
        ax2.set_ylim(lo_m, hi_m)
        ax2.set_ylabel(metric.replace("_", " ") + (" (axis from 0)" if lo_m == 0 else ""))
        handles += h
        labels += [label]
    ax.legend(handles, labels, loc="center right" if len(handles) > 3 else "upper right", fontsize=8)
    ax.grid(alpha=0.3)
    return _save(plt, fig, path)


def plot_compare(steps, ours, theirs, path, title: str):
    """The two loss curves of ``--compare-torch`` and their relative difference (log scale)."""
    plt = _pyplot()
    steps, ours, theirs = (np.asarray(a, dtype=np.float64) for a in (steps, ours, theirs))
    rel = np.abs(ours - theirs) / np.maximum(np.abs(theirs), 1e-300)
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(8, 6), dpi=110, sharex=True,
                                  gridspec_kw={"height_ratios": [2, 1]})
    ax.plot(steps, theirs, color="tab:red", lw=3, alpha=0.5, label="PyTorch twin")
    ax.plot(steps, ours, color="tab:blue", lw=1.2, label="tinygrad_tx")
    ax.set_ylabel("training loss")
    ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    nonzero = rel > 0
    ax2.semilogy(steps[nonzero], rel[nonzero], ".", color="black", ms=3)
    ax2.set_ylabel("|ours - torch| / |torch|")
    ax2.set_xlabel("step")
    ax2.set_title(f"relative difference: max {rel.max():.1e}; exactly equal at {int((~nonzero).sum())} of "
                  f"{rel.size} steps (not drawn)", fontsize=9)
    ax2.grid(alpha=0.3, which="both")
    return _save(plt, fig, path)
