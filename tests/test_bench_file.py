"""``tinygrad-tx bench --file``: a user's ops and a PyTorch-style module through the real worker
processes, the same table and the float32 accuracy columns (no timing assertions), and the
file format's errors."""
from __future__ import annotations

import importlib.util
import json
import textwrap

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


@needs_torch
def test_bench_file_through_workers(tmp_path, capsys):
    f = tmp_path / "my_ops.py"
    f.write_text(TINY)
    out = tmp_path / "out"
    assert cli.main(["--file", str(f), "--quick", "--rounds", "2", "--threads", "1", "--out", str(out),
                     "--skip", "plots", "--no-cuda"]) == 0
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
