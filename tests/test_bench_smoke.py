"""Smoke test of the benchmark's plumbing (no timing assertions): one tiny component through the
real worker processes, the JSON and Markdown written, the RSS probe, and the accuracy measure."""
import importlib.util
import io
import json
import sys
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from bench import cli, report, rss
from bench.accuracy import item_errors
from bench.components import REGISTRY
from bench.protocol import WorkerClient

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")


@needs_torch
def test_gpt_tiny_through_workers(tmp_path, capsys):
    code = cli.main(["--quick", "--only", "gpt_tiny", "--rounds", "2", "--threads", "1", "--out", str(tmp_path),
                     "--skip", "accuracy,section11,flash,rss,plots", "--no-cuda"])
    assert code == 0
    res = json.loads((tmp_path / "results.json").read_text())
    meta = res["meta"]
    assert meta["ours"]["torch_imported"] is False          # the ours worker never imports torch
    assert meta["torch"]["torch_imported"] is True
    assert meta["matmul_peak"]["ours"]["gflops"] > 0 and meta["matmul_peak"]["torch"]["gflops"] > 0
    (row,) = res["components"]
    assert row["name"] == "gpt_tiny" and row["available"], row.get("error")
    for fw in ("ours", "torch"):
        r = row["results"][fw]
        for mode in ("fwd", "fwdbwd"):
            s = r[mode]
            assert s["n"] >= 2 and 0 < s["min"] <= s["median"] <= s["max"]
        assert r["saved_bytes"] > 0 and r["rounds"] == 2 and r["gflops_fwdbwd"] > 0
    assert row["ratio"]["fwdbwd"] == pytest.approx(row["results"]["ours"]["fwdbwd"]["median"]
                                                   / row["results"]["torch"]["fwdbwd"]["median"])
    (target,) = res["targets"]
    assert target["name"].startswith("gpt_tiny fwd+bwd") and target["limit"] == 0.5
    # the training step compiled: ours (tinygrad_tx.compile) in every run, torch.compile in the full run only
    ours = row["results"]["ours"]
    assert ours["compile_s"] > 0 and ours["compiled"]["n"] >= 2 and "compiled" not in row["results"]["torch"]
    assert row["ratio_compiled"]["ours"] == pytest.approx(ours["compiled"]["median"]
                                                          / row["results"]["torch"]["fwdbwd"]["median"])
    assert cli.compiled_contenders(quick=False) == ("ours", "torch")
    # compile(fuse=True): timed where the C kernels are on, else the row says why it did not run
    if meta["ours"]["kernels"].startswith("c "):
        assert ours["fused_compile_s"] > 0 and ours["fused"]["n"] >= 2
        assert row["ratio_compiled"]["ours_fused"] == pytest.approx(ours["fused"]["median"]
                                                                    / row["results"]["torch"]["fwdbwd"]["median"])
    else:
        assert "fused" not in ours and ours["fused_error"].startswith("compile(fuse=True) fused nothing")
    assert "fused" not in row["results"]["torch"] and "fused_error" not in row["results"]["torch"]
    # the NumPy path: a third process, ours with TINYGRAD_TX_KERNELS=0, eager only
    assert meta["ours_numpy"]["kernels"] == "numpy: TINYGRAD_TX_KERNELS=0" and not meta["ours_numpy"]["torch_imported"]
    numpy_path = row["results"]["ours_numpy"]
    assert numpy_path["fwdbwd"]["n"] >= 2 and "compiled" not in numpy_path and "compile_s" not in numpy_path
    assert row["ratio_numpy"] == pytest.approx(numpy_path["fwdbwd"]["median"]
                                               / row["results"]["torch"]["fwdbwd"]["median"])
    md = (tmp_path / "results.md").read_text()
    assert "## Time per component" in md and "| gpt_tiny |" in md and "## Targets" in md
    assert "## Training steps: eager, NumPy path, compiled, compiled + fused" in md
    assert "| step | ours eager | ours NumPy path | ours compiled | ours compiled + fused | torch eager | " \
           "torch.compile |" in md
    step_row = next(line for line in md.splitlines() if line.startswith("| gpt_tiny |") and "**1.00**" in line)
    assert step_row.count("**") == 2 * (5 if "fused" in ours else 4)   # ours ×3 or ×4, torch eager; no torch.compile
    assert md in capsys.readouterr().out


def test_fused_step_on_the_numpy_path_says_why_it_did_not_run():
    """Where the kernels are off, compile(fuse=True) runs the unfused program: the worker reports
    the fused mode as not run (naming why) and still times the plain compiled step."""
    with WorkerClient("ours", threads=1, env=cli.NUMPY_PATH) as w:
        assert w.call("hello")["kernels"] == "numpy: TINYGRAD_TX_KERNELS=0"
        reply = w.call("setup", key="s", component="gpt_tiny", cfg=REGISTRY["gpt_tiny"].full, compiled=True)
        assert reply["compiled"]["compile_s"] > 0
        assert reply["fused"] == {"error": "compile(fuse=True) fused nothing (kernels: numpy: TINYGRAD_TX_KERNELS=0)"}
        assert len(w.call("time", key="s", mode="compiled", n=1)["times"]) == 1
        assert w.request("time", key="s", mode="fused", n=1)["ok"] is False   # the mode was never built


def test_step_table_cells_name_what_did_not_run():
    stats = {"median": 2e-3, "min": 1e-3, "max": 3e-3, "n": 4}
    row = {"name": "gpt_x", "available": True, "results": {
        "ours": {"fwdbwd": stats, "compiled": stats, "compile_s": 0.5, "fused_error": "compile(fuse=True) fused "
                 "nothing (kernels: numpy: no C compiler)"},
        "ours_numpy": {"fwdbwd": dict(stats, median=3e-3)},     # a results.json of before the CPU times
        "torch": {"fwdbwd": dict(stats, median=4e-3), "compiled_error": "RuntimeError: no C++ compiler",
                  "cpu": {"fwdbwd": {"median": 8e-3}}}}}
    row["results"]["ours"]["cpu"] = {"fwdbwd": {"median": 4e-3}, "compiled": {"median": 2e-3}}
    md = "\n".join(report._compiled_section([row]))
    line = next(ln for ln in md.splitlines() if ln.startswith("| gpt_x |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells == ["gpt_x", "2 (1–3) **0.50** (CPU 0.50)", "3 (1–3) **0.75**", "2 (1–3) **0.50** (CPU 0.25)",
                     "not run: compile(fuse=True) fused nothing (kernels: numpy: no C compi",
                     "4 (1–3) **1.00** (CPU 1.00)", "not run: RuntimeError: no C++ compiler", "0.5 / – / –"]


def test_rss_probe_of_ours_never_imports_torch():
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert rss.main(["ours", "gpt_tiny", "--steps", "1", "--cfg", json.dumps(REGISTRY["gpt_tiny"].full)]) == 0
    out = json.loads(buf.getvalue())
    assert out["framework"] == "ours" and out["steps"] == 1
    assert out["peak"] >= out["after_build"] >= out["after_imports"] > 0
    assert out["step_delta"] == out["peak"] - out["after_imports"]


def test_accuracy_errors_relative_and_structurally_zero_gradients():
    oracle = {"output": np.array([2.0, -4.0]), "grad[w]": np.array([1.0, 10.0]), "grad[b_k]": np.array([1e-17, 0.0])}
    runs = {"ours32": {"output": np.array([2.0, -4.004]), "grad[w]": np.array([1.0, 10.0]),
                       "grad[b_k]": np.array([2e-6, 0.0])}}
    detail, zero = item_errors(runs, oracle)
    assert detail["output"]["ours32"] == pytest.approx(0.004 / 4)
    assert detail["grad[w]"]["ours32"] == 0.0
    # zero in exact arithmetic: measured against the largest gradient (10), not against 1e-17
    assert zero == {"grad[b_k]"} and detail["grad[b_k]"]["ours32"] == pytest.approx(2e-6 / 10)


def test_unknown_component_is_rejected():
    with pytest.raises(SystemExit, match="unknown component"):
        cli.main(["--only", "no_such_thing"])


def test_each_run_gets_its_own_folder(tmp_path, monkeypatch):
    """By default every run writes into a new bench/results/run-<time> folder (``latest`` points
    to the newest); an explicit --out is cleared of an earlier run's files first, so no stale plot
    lies beside new results."""
    monkeypatch.setattr(cli, "RESULTS_ROOT", tmp_path / "results")
    first, second = cli.run_folder(None), cli.run_folder(None)
    assert first != second and first.parent == second.parent == tmp_path / "results"
    assert first.name.startswith("run-") and second.name.startswith(first.name[:len("run-YYYYmmdd")])
    assert (tmp_path / "results" / "latest").resolve() == second.resolve()
    out = tmp_path / "mine"
    out.mkdir()
    for name in ("results.json", "ratio.png", "flash_vs_naive.png", "notes.txt"):
        (out / name).write_text("old")
    assert cli.run_folder(str(out)) == out
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]     # only our own files are removed


def test_replot_writes_beside_its_results_and_only_known_plots(tmp_path):
    pytest.importorskip("matplotlib")
    from test_docs import _bench_results
    run = tmp_path / "run-1"
    run.mkdir()
    (run / "results.json").write_text(json.dumps(_bench_results()))
    assert cli.main(["--replot", str(run / "results.json")]) == 0
    written = {p.name for p in run.iterdir()} - {"results.json", "results.md"}
    assert written and written <= set(cli.report.PLOT_FILES)


def test_accuracy_reference_is_true_float32(tmp_path):
    """The float32 error column is judged against torch's true float32: the accuracy process turns
    TF32 off (CUDA matmul and cuDNN) and asks for 'highest' matmul precision, whatever it found.
    Run in its own process, as the bench runs it: flipping torch's TF32 flags and precision back
    and forth inside the test process left torch refusing get_float32_matmul_precision() ('a mix
    of the legacy and new APIs') in the next test of the same worker."""
    import subprocess
    script = (
        "import sys, torch\n"
        "torch.backends.cuda.matmul.allow_tf32 = True\n"
        "torch.backends.cudnn.allow_tf32 = True\n"
        "torch.set_float32_matmul_precision('medium')\n"
        "from bench import accuracy\n"
        "assert accuracy.main(['--quick', '--only', 'softmax']) == 0\n"
        "assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32\n"
        "assert torch.get_float32_matmul_precision() == 'highest'\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=str(Path(__file__).resolve().parents[1]))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "'cudnn_allow_tf32': False" in done.stderr and '"softmax"' in done.stdout
