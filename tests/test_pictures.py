"""What the pictures show, checked on the matplotlib figures themselves (issue #13).

Each drawing function saves through a module-level ``_save``; the tests replace it to catch
the figure before it is closed and look at its artists: the loss plot's metric axis and
legend, the bigram colorbar, the masked cells of the attention maps, the graph's key and
its q/k/v labels, and the benchmark plots' load note and flash-sweep markers.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from bench import report
from bench.cli import parse_args, thread_count
from tinygrad_tx.data import CharVocab
from tinygrad_tx.training import plots
from tinygrad_tx.viz import example_graph, pictures, to_dot
from tinygrad_tx.viz.graph import STYLES, split_names


@pytest.fixture()
def figures(monkeypatch):
    """The figures the drawing functions would have written, in order (nothing is saved)."""
    caught = []

    def keep(fig, path):
        caught.append(fig)
        return path
    monkeypatch.setattr(plots, "_save", lambda plt, fig, path: keep(fig, path))
    monkeypatch.setattr(pictures, "_save", keep)
    monkeypatch.setattr(report, "_save", lambda fig, path, layout=True: keep(fig, str(path)))
    yield caught
    import matplotlib.pyplot as plt
    for fig in caught:
        plt.close(fig)


# --------------------------------------------------------------------------- loss plot

def history(steps, acc):
    loss = list(np.linspace(3.0, 2.4, steps))
    evals = [{"step": s, "dev_loss": 2.5 - 0.01 * i, "dev_acc": a} for i, (s, a) in
             enumerate(zip(np.linspace(1, steps, len(acc)).astype(int), acc))]
    return {"step": list(range(1, steps + 1)), "loss": loss, "evals": evals}


def test_metric_axis_starts_at_zero_for_fractions_and_pads_other_metrics():
    assert plots.metric_axis([0.808, 0.816]) == (0.0, 1.0)
    assert plots.metric_axis([0.0, 1.0]) == (0.0, 1.0)
    lo, hi = plots.metric_axis([2.0, 4.0])
    assert (lo, hi) == pytest.approx((1.9, 4.1))
    lo, hi = plots.metric_axis([5.0, 5.0])                 # a flat metric still gets a visible range
    assert lo < 5.0 < hi


def test_accuracy_axis_is_not_autoscaled_and_the_reference_is_in_the_legend(figures):
    plots.plot_history(history(12, [0.808, 0.816]), "x.png", "vit", metric="dev_acc",
                       reference={"bigram count model, dev (2.451)": 2.451})
    (fig,) = figures
    ax, ax2 = fig.axes
    assert ax2.get_ylim() == (0.0, 1.0) and "axis from 0" in ax2.get_ylabel()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "bigram count model, dev (2.451)" in legend and "dev acc (last 0.816)" in legend
    assert not [t for t in ax.texts if "bigram" in t.get_text()]      # no label drawn over the curves
    lines = [ln for ln in ax.get_lines() if ln.get_label() == "bigram count model, dev (2.451)"]
    assert len(lines) == 1 and set(lines[0].get_ydata()) == {2.451}


# --------------------------------------------------------------------------- bigram

def test_bigram_picture_has_a_colorbar_in_counts(figures):
    vocab = CharVocab.tutorial()
    counts = pictures.bigram_counts(["emma", "ava", "anna"], vocab)
    pictures.plot_bigram(counts, vocab, "b.png")
    (fig,) = figures
    image_ax, bar_ax = fig.axes
    assert "log(1 + N)" in bar_ax.get_ylabel()
    ticks = [t.get_text() for t in bar_ax.get_yticklabels()]
    assert ticks[0] == "0" and "1" in ticks                        # labelled in counts, not in log(1 + N)
    assert bar_ax.get_yticks()[1] == pytest.approx(np.log1p(1))
    np.testing.assert_allclose(image_ax.images[0].get_array(), np.log1p(counts))


# --------------------------------------------------------------------------- attention

def test_masked_cells_are_hatched_grey_not_zero_coloured(figures):
    t = 5
    maps = np.tril(np.full((1, 2, t, t), 0.0))     # every allowed weight 0 too: the two must still differ
    maps[..., np.arange(t), np.arange(t)] = 1.0
    pictures.plot_attention(maps, list("$emma"), "a.png")
    (fig,) = figures
    panels = [ax for ax in fig.axes if ax.images and ax.get_title().startswith("layer")]
    assert len(panels) == 2
    future = np.triu(np.ones((t, t), dtype=bool), k=1)
    for ax in panels:
        img = ax.images[0].get_array()
        np.testing.assert_array_equal(np.ma.getmaskarray(img), future)    # the future keys are masked out
        rgba = ax.images[0].to_rgba(img)
        assert (rgba[future, 3] == 0).all() and (rgba[~future, 3] == 1).all()   # they show what is behind
        behind = [p for p in ax.patches if p.get_hatch()]
        assert len(behind) == 1 and behind[0].get_zorder() < ax.images[0].get_zorder()
        assert behind[0].get_facecolor()[:3] != ax.images[0].cmap(0.0)[:3]     # grey, not zero's colour
    assert "masked" in fig.axes[-1].get_ylabel()


# --------------------------------------------------------------------------- autograd graphs

@pytest.mark.parametrize("name", ["attention", "gpt-block", "gpt"])
def test_the_three_getitems_after_c_attn_are_q_k_v_in_slice_order(name):
    out, module, _ = example_graph(name)
    from tinygrad_tx.viz.graph import graph_nodes
    labels = split_names(list(graph_nodes(out)))
    assert sorted(labels.values()) == ["k", "q", "v"]
    ctxs = {v: c for c in (n for n, _ in graph_nodes(out)) if id(c) in labels for v in [labels[id(c)]]}
    d = module.c_attn.out_features // 3 if hasattr(module, "c_attn") else 8
    starts = {v: ctx.index[-1].start for v, ctx in ctxs.items()}        # the slice of c_attn's output
    assert starts == {"q": 0, "k": d, "v": 2 * d}
    text = to_dot(out, module)
    for v in "qkv":
        assert re.search(rf'label="{v} = GetItem\\n\(1, 4, 8\)"', text)


def test_graph_key_lists_the_colours_present_and_can_be_left_out():
    out, module, _ = example_graph("attention")
    text = to_dot(out, module)
    key = text[text.index("subgraph cluster_legend"):]
    for kind in ("op", "root", "parameter", "input"):
        fill, _, words = STYLES[kind]
        assert words in key and fill in key
    assert STYLES["constant"][2] not in key                         # no constant in this graph
    import tinygrad_tx as tg
    w = tg.Tensor(np.ones(3), requires_grad=True)
    with_constant = to_dot((w * tg.Tensor(np.full(3, 2.0))).sum(), {"w": w}, constants=True)
    assert STYLES["constant"][2] in with_constant and STYLES["input"][2] not in with_constant
    plain = to_dot(out, module, legend=False)
    assert "cluster_legend" not in plain and "legend0" not in plain
    assert plain.count("->") == text.count("->")                    # the key adds no edges


def test_no_qkv_labels_without_a_c_attn_split():
    import tinygrad_tx as tg
    x = tg.Tensor(np.ones((2, 6)), requires_grad=True)
    a, b, c = x.split(2, dim=1)
    text = to_dot((a * b + c).sum(), {"x": x})
    assert "q = " not in text and text.count("GetItem") == 3


# --------------------------------------------------------------------------- benchmark plots

def bench_results(busy: bool):
    stats = {"median": 0.01, "min": 0.009, "max": 0.012}
    row = {"name": "linear", "kind": "op", "available": True, "target": 1.1, "config": {"d": 4},
           "results": {"ours": {"fwd": stats, "fwdbwd": stats}, "torch": {"fwd": stats, "fwdbwd": stats}},
           "ratio": {"fwd": 1.0, "fwdbwd": 1.0}, "ratio_cpu": {"fwd": 1.0, "fwdbwd": 1.0}}
    s11 = [{"T": T, "d": 64, "heads": 4, "batch": 2, "macs_4Td2": 4 * T * 64 ** 2, "macs_2T2d": 2 * T * T * 64,
            "t2_share": 0.5, "score_bytes_f32": 2 * 4 * T * T * 4,
            "ours": {"fwdbwd": stats, "saved_bytes": 2 ** 20, "saved_bytes_distinct": 2 ** 20},
            "torch": {"fwdbwd": stats, "saved_bytes": 2 ** 20}} for T in (32, 64)]
    flash = [{"T": T, "heads": 4, "d_head": 16, "batch": 1, "score_bytes_f32": 4 * T * T * 4,
              **{k: {"fwdbwd": stats, "saved_bytes": 2 ** 20 * (T if "naive" in k else 1),
                     "saved_bytes_distinct": None} for k in report.FLASH_STYLES}} for T in (256, 512)]
    start, end = ([3.5, 3.0, 3.0], [4.0, 3.5, 3.0]) if busy else ([0.1] * 3, [0.1] * 3)
    meta = {"date": "2026-12-01T00:00:00", "threads": 2, "python": "3.11", "cpu_count": 2, "quick": True,
            "loadavg_start": start, "loadavg_end": end, "busy_machine": busy}
    return {"meta": meta, "components": [row], "section11": s11, "flash_sweep": flash}


def test_load_note_only_when_the_machine_was_loaded():
    assert report.load_note(bench_results(False)["meta"]) is None
    note = report.load_note(bench_results(True)["meta"])
    assert "load average 3.50 → 4.00 on 2 CPUs" in note and "unreliable" in note
    meta = {"loadavg_start": [0.2], "loadavg_end": [2.5], "cpu_count": 2, "threads": 1}   # loaded at the end only
    assert "0.20 → 2.50" in report.load_note(meta)


@pytest.mark.parametrize("busy", [False, True])
def test_every_benchmark_plot_carries_the_load_note_when_loaded(busy, figures):
    report.plots(bench_results(busy), ".")
    assert len(figures) == 4
    for fig in figures:
        notes = [t.get_text() for t in fig.texts if "machine loaded" in t.get_text()]
        assert len(notes) == (1 if busy else 0)


def test_ours_flash_stays_visible_over_torch_fused(figures):
    report.plots(bench_results(False), ".")
    memory = figures[-1].axes[1]
    lines = {ln.get_label(): ln for ln in memory.get_lines()}
    ours, theirs = lines["ours_flash"], lines["torch_fused"]
    np.testing.assert_array_equal(ours.get_ydata(), theirs.get_ydata())      # the same memory: they overlap
    order = [ln.get_label() for ln in memory.get_lines()]
    assert order.index("ours_flash") > order.index("torch_fused")             # drawn on top
    assert ours.get_markerfacecolor() == "none" and ours.get_markersize() > theirs.get_markersize()
    assert ours.get_marker() != theirs.get_marker()


def test_quick_benchmark_defaults_to_one_thread():
    assert thread_count(parse_args(["--quick"])) == 1
    assert thread_count(parse_args(["--quick", "--threads", "2"])) == 2
    assert thread_count(parse_args([])) >= 1


def test_replot_redraws_report_and_plots_without_timing(tmp_path, capsys):
    import json
    from bench.cli import main
    path = tmp_path / "results.json"
    path.write_text(json.dumps(bench_results(True)))
    assert main(["--replot", str(path), "--out", str(tmp_path / "out")]) == 0
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert written == ["flash_vs_naive.png", "ratio.png", "results.md", "scaling_section11.png",
                       "time_per_component.png"]
    assert "Other processes competed for the CPUs" in (tmp_path / "out" / "results.md").read_text()
