"""``tinygrad-tx bench --file``: a user's ops and a PyTorch-style module through the real worker
processes, the same table and the float32 accuracy columns (no timing assertions), and the
file format's errors."""
from __future__ import annotations

import importlib.util
import json
import re
import textwrap
import time

import pytest

from bench import cli, userfile

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")

TINY = textwrap.dedent('''
    import numpy as np
    import torch
    import tinygrad_tx as tg


    class Softplus(tg.autograd.ArrayFunction):
        """y = log(1 + e^x); dL/dx = g sigmoid(x)."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return np.logaddexp(0.0, x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g / (1.0 + np.exp(-x))


    class Net(torch.nn.Module):            # PyTorch code: the ours worker runs it on tinygrad_tx
        def __init__(self, d):
            super().__init__()
            self.lin = torch.nn.Linear(d, 3)

        def forward(self, x, idx):
            return torch.nn.functional.cross_entropy(self.lin(x), idx)


    BENCH = [
        dict(name="softplus", ours=Softplus.apply, torch=torch.nn.functional.softplus,
             inputs=lambda rng, size: rng.standard_normal(size), sizes=[(8, 16), 32]),
        dict(name="net", module=lambda size: Net(size[1]),
             inputs=lambda rng, size: [rng.standard_normal(size), rng.integers(0, 3, size[0])],
             sizes=[(4, 5)]),
    ]
''')


def quick_bench(f, out, skip):
    """``bench --file f --quick`` through the real workers, two rounds, one thread, no CUDA."""
    return cli.main(["--file", str(f), "--quick", "--rounds", "2", "--threads", "1", "--out", str(out),
                     "--skip", skip, "--no-cuda"])


@needs_torch
def test_bench_file_through_workers(tmp_path, capsys):
    f = tmp_path / "my_ops.py"
    f.write_text(TINY)
    out = tmp_path / "out"
    assert quick_bench(f, out, "plots") == 0
    res = json.loads((out / "results.json").read_text())
    meta = res["meta"]
    assert meta["file"] == str(f) and meta["ours"]["torch_imported"] is False   # shimmed, never real torch
    assert [d["name"] for d in meta["ours"]["file_components"]] == ["softplus (8×16)", "softplus (32)", "net (4×5)"]
    rows = res["components"]
    assert [r["name"] for r in rows] == ["softplus (8×16)", "net (4×5)"]      # --quick: the first size of each
    for r in rows:
        assert r["available"], r.get("error")
        for fw in ("ours", "torch"):
            for mode in ("fwd", "fwdbwd"):
                s = r["results"][fw][mode]
                assert s["n"] >= 2 and 0 < s["min"] <= s["median"] <= s["max"]
        assert r["ratio"]["fwdbwd"] == pytest.approx(r["results"]["ours"]["fwdbwd"]["median"]
                                                     / r["results"]["torch"]["fwdbwd"]["median"])
        acc = res["accuracy"][r["name"]]
        assert 0 < acc["torch"] < 1e-5 and acc["ours"] < 4 * acc["torch"] + 1e-6       # float32 vs float64 oracle
    # the module's parameters are compared too, the integer targets are not differentiated
    assert set(res["accuracy"]["net (4×5)"]["detail"]) == {"output", "grad[input[0]]", "grad[lin.bias]",
                                                             "grad[lin.weight]"}
    assert "section11" not in res and "rss" not in res and "flash_sweep" not in res
    md = (out / "results.md").read_text()
    assert "## Time per component" in md and "| softplus (8×16) |" in md and "| net (4×5) |" in md
    assert "f32 err" in md and md in capsys.readouterr().out


def test_bench_file_format_errors(tmp_path):
    def check(source, match):
        f = tmp_path / "bad.py"
        f.write_text(source)
        with pytest.raises(userfile.BenchFileError, match=match):
            userfile.register(f, "ours")

    with pytest.raises(userfile.BenchFileError, match="no such file"):
        userfile.register(tmp_path / "missing.py", "ours")
    check("X = 1\n", "define BENCH, a non-empty list")
    check("BENCH = [dict(name='a', ours=abs, inputs=abs, sizes=[3])]\n", r"BENCH\[0\] \(a\): give either ours= and torch= or module=")
    check("BENCH = [dict(name='a', module=abs, ours=abs, torch=abs, inputs=abs, sizes=[3])]\n", "give either")
    check("BENCH = [dict(name='a', ours=abs, torch=1, inputs=abs, sizes=[3])]\n", "torch must be callable, got 1")
    check("BENCH = [dict(name='a', ours=abs, torch=abs, inputs=abs, sizes=[])]\n", "sizes must be a non-empty list")
    check("BENCH = [dict(name='a', ours=abs, torch=abs, inputs=abs, sizes=[(2, 'x')])]\n",
          "a size must be an int or a tuple of ints, got \\(2, 'x'\\)")
    check("BENCH = [dict(name='a,b', ours=abs, torch=abs, inputs=abs, sizes=[3])]\n", "without commas")
    check("BENCH = [dict(name='a', ours=abs, torch=abs, inputs=abs, sizes=[3], size=[3])]\n",
          r"unknown key\(s\) \['size'\]")
    check("BENCH = [dict(name='a', ours=abs, torch=abs, inputs=abs, sizes=[3])] * 2\n", "'a' is used twice")


@pytest.mark.parametrize("source, said", [
    ("def f(:\n", r"syntax error at line 1: "),
    ("import numpy\nimport no_such_module_xyz\n", r"importing it raised ModuleNotFoundError at line 2 \(run with torch "
                                                   r"answered by tinygrad_tx\): No module named 'no_such_module_xyz'"),
    ("X = 1\n", "define BENCH, a non-empty list"),
    ("BENCH = [dict(name='a', ours=abs, torch=abs, inputs=abs, sizes=[3], size=[3])]\n", r"BENCH\[0\]: unknown key\(s\) \['size'\]"),
])
def test_file_level_errors_are_one_line_through_the_workers(tmp_path, capsys, source, said):
    """Every file-level error exited with a full traceback, even our own BenchFileError."""
    f = tmp_path / "bad.py"
    f.write_text(source)
    assert cli.main(["--file", str(f), "--quick", "--out", str(tmp_path / "out"), "--no-cuda"]) == 1
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("tinygrad-tx bench")]
    assert "Traceback" not in err and len(lines) == 1, err
    assert re.match(rf"tinygrad-tx bench: error: {re.escape(str(f))}: {said}", lines[0]), lines[0]


WRONG = textwrap.dedent('''
    import time
    import torch

    def spin(x):
        while True:
            time.sleep(0.05)

    BENCH = [dict(name="flat", ours=lambda x: (x * 2).reshape(-1), torch=lambda x: x * 2,
                  inputs=lambda rng, size: rng.standard_normal(size), sizes=[(4, 8)]),
             dict(name="twice", ours=lambda x: x * 2, torch=lambda x: x * 2,
                  inputs=lambda rng, size: rng.standard_normal(size), sizes=[(4, 8)])]
''')


@needs_torch
def test_an_ours_of_the_wrong_shape_is_refused_naming_the_case(tmp_path, capsys):
    """It was timed and given a ratio."""
    f = tmp_path / "wrong.py"
    f.write_text(WRONG)
    out = tmp_path / "out"
    assert quick_bench(f, out, "plots,accuracy") == 0
    rows = {r["name"]: r for r in json.loads((out / "results.json").read_text())["components"]}
    flat = rows["flat (4×8)"]
    assert not flat["available"] and "ratio" not in flat
    assert flat["error"] == "flat (4×8): ours returned shape (32,) where torch returns (4, 8); not timed"
    assert "times" not in flat["results"]["ours"] and rows["twice (4×8)"]["available"]
    assert "flat (4×8)         unavailable: flat (4×8): ours returned shape (32,)" in capsys.readouterr().err


@needs_torch
def test_an_ours_that_never_returns_stops_the_bench_in_one_line(tmp_path, capsys):
    """It hung the bench."""
    f = tmp_path / "spin.py"
    f.write_text(WRONG.replace("ours=lambda x: (x * 2).reshape(-1)", "ours=spin"))
    t0 = time.perf_counter()
    assert cli.main(["--file", str(f), "--quick", "--threads", "1", "--out", str(tmp_path / "out"),
                     "--skip", "plots,accuracy", "--no-cuda", "--case-timeout", "3"]) == 1
    assert time.perf_counter() - t0 < 60
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == ("tinygrad-tx bench: error: ours: setup of 'flat (4×8)' did not return "
                                            "within 3 s (the worker was stopped)")


def test_bench_file_without_a_file_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="no such file"):
        cli.main(["--file", str(tmp_path / "nope.py"), "--out", str(tmp_path)])


@needs_torch
def test_shipped_example_is_correct():
    """bench/examples/my_ops.py (the README's example): each entry loaded as each worker loads it,
    ours against torch by the testing kit, and the example's Softplus by finite differences."""
    import numpy as np

    from reference.testing import check_module_parity, check_parity
    from tinygrad_tx.testing import gradcheck

    path = userfile.Path(cli.REPO_ROOT) / "bench" / "examples" / "my_ops.py"
    ours_mod = userfile._load(path, "ours")
    ours, theirs = (userfile.entries(m, path) for m in (ours_mod, userfile._load(path, "torch")))
    assert [e["name"] for e in ours] == ["softplus", "mlp"]
    gradcheck(ours_mod.Softplus.apply, [np.random.default_rng(1).standard_normal((3, 5))])
    for o, t in zip(ours, theirs):
        size = userfile._tuplify(o["quick_sizes"][0])
        xs = o["inputs"](np.random.default_rng(0), size)
        for dtype in (np.float64, np.float32):
            if "module" in o:
                check_module_parity((o["module"](size), t["module"](size)), *xs, dtype=dtype, name="my_ops mlp")
            else:
                check_parity(o["ours"], t["torch"], *xs, dtype=dtype, name="my_ops softplus")


def _ops_table(framework):
    return userfile._load(userfile.Path(cli.REPO_ROOT) / "bench" / "ops_table.py", framework)


def test_ops_table_rows_come_from_the_op_database():
    """bench/ops_table.py reads reference/opdb.py (issue 31): one row per entry with a first
    derivative and float32, in the database's order, then the nn.functional extras, which the
    database does not hold; the ours worker's load of it imports no torch."""
    import sys

    from reference import opdb

    had_torch = "torch" in sys.modules
    mod = _ops_table("ours")
    assert had_torch or "torch" not in sys.modules
    names = [e["name"] for e in userfile.entries(mod, "ops_table.py")]
    wanted = [op.name for op in opdb.OPS if op.grad and "float32" in op.dtypes]
    assert len(wanted) > 150
    assert names == wanted + list(mod.EXTRA)
    assert not set(mod.EXTRA) & opdb.covered_names()
    assert set(mod.CASES) <= set(wanted) and set(mod.SPECIAL) <= set(wanted)
    assert set(mod.REASONS) <= set(names)           # a reason for a row that no longer exists is stale


# rows whose gradient torch does not specify at the table's sizes: values compared only
VALUES_ONLY = {"mode": "which of the tied positions torch's mode returns is unspecified (past ~16 elements "
                       "a row it is neither the first nor the last: indices 4, 104, 110 of 165 where ours "
                       "takes the last), so where its gradient lands is too"}


@needs_torch
def test_every_ops_table_row_runs_and_equals_torch():
    """Every row at the small size, loaded as each worker loads the file: float32 values and
    random-cotangent gradients against torch (``check_parity``'s float32 rule: ours within torch's
    own error w.r.t. a float64 oracle), and the same inputs in both processes."""
    import numpy as np

    from reference.testing import check_parity

    ours_mod, torch_mod = _ops_table("ours"), _ops_table("torch")
    ops = {op.name: op for op in ours_mod.DB_OPS}
    failures = []
    for o, t in zip(userfile.entries(ours_mod, "ours"), userfile.entries(torch_mod, "torch")):
        size = userfile._tuplify(o["quick_sizes"][0])
        xs = o["inputs"](np.random.default_rng(0), size)
        assert all(np.array_equal(a, b) for a, b in zip(xs, t["inputs"](np.random.default_rng(0), size)))
        op = ops.get(o["name"])
        zero = range(len(xs)) if op is not None and (op.zero_grad or op.zero_region) else ()
        try:
            if o["name"] in VALUES_ONLY:
                import tinygrad_tx as tt
                from reference.testing import to_numpy, to_torch
                ours = o["ours"](*[tt.tensor(a.astype(np.float32)) for a in xs]).numpy()
                assert np.array_equal(ours, to_numpy(t["torch"](*[to_torch(a.astype(np.float32)) for a in xs])))
                continue
            check_parity(o["ours"], t["torch"], *xs, dtype=np.float32, name=o["name"], allow_zero_grad=zero)
        except Exception as e:         # every failing row in one report
            failures.append(f"{o['name']}: {type(e).__name__}: {str(e)[:300]}")
    assert not failures, "\n".join(failures)


@needs_torch
def test_an_ops_table_row_through_the_workers(tmp_path):
    """Three database rows (a generator-sized op, a scaled one, a kernel-backed one) timed by the
    real workers; the kernel-backed row a third time on the NumPy path, which the table shows."""
    from bench import ops_table
    path = userfile.Path(cli.REPO_ROOT) / "bench" / "ops_table.py"
    rows = ["exp (64×256)", "expand (64×256)", "softmax (64×256)"]
    assert cli.main(["--file", str(path), "--quick", "--rounds", "2", "--threads", "1", "--out", str(tmp_path),
                     "--skip", "plots", "--no-cuda", "--only", ",".join(rows)]) == 0
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["meta"]["ours"]["torch_imported"] is False      # the database loads under the shim, no torch
    assert res["meta"]["ours_numpy"]["kernels"].startswith("numpy")     # the third worker: no C kernels
    assert sorted(r["name"] for r in res["components"]) == sorted(rows)     # in the database's order
    for r in res["components"]:
        assert r["available"], r.get("error")
        assert r["results"]["ours"]["fwdbwd"]["n"] >= 2 and r["results"]["torch"]["fwdbwd"]["n"] >= 2
        assert res["accuracy"][r["name"]]["ours"] < 1e-5
        assert ("ours_numpy" in r["results"]) == r["name"].startswith("softmax")
    soft_row = [r for r in res["components"] if r["name"].startswith("softmax")][0]
    assert soft_row["results"]["ours_numpy"]["fwdbwd"]["n"] >= 2
    ops_table.write_table(str(tmp_path / "results.json"), str(tmp_path / "table.md"))
    table = (tmp_path / "table.md").read_text().splitlines()
    soft = [line for line in table if line.startswith("| softmax |")][0].split(" | ")
    exp = [line for line in table if line.startswith("| exp |")][0].split(" | ")
    numpy_ms = 1e3 * soft_row["results"]["ours_numpy"]["fwdbwd"]["median"]
    assert soft[6].startswith(f"{numpy_ms:.3g} (") and exp[6] == ""


def test_ops_table_kernel_backed_rows_are_the_kernels_ops():
    """The rows timed on the NumPy path too are exactly the table's ops that run a C kernel:
    every KERNELS_OF op the table holds (sdpa and gelu(tanh) under their row names)."""
    from tinygrad_tx.kernels.source import KERNELS_OF
    mod = _ops_table("ours")
    flagged = {e["name"] for e in mod.BENCH if e.get("numpy_path")}
    assert flagged == mod.KERNEL_BACKED
    names = {e["name"] for e in mod.BENCH}
    row_of = {"scaled_dot_product_attention": "sdpa (causal)"}
    assert {row_of.get(k, k) for k in KERNELS_OF} & names <= flagged
    assert flagged - {row_of.get(k, k) for k in KERNELS_OF} == {"gelu(tanh)"}
