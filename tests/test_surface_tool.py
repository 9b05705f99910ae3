"""tools/surface/extract.py on a small synthetic corpus: aliases, a notebook with a magic line
and a broken cell, member noise, keyword counts and the coverage lookup (tinygrad_tx only)."""
from __future__ import annotations

import importlib.util
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, os.pardir, "tools", "surface", "extract.py")


@pytest.fixture(scope="module")
def surface():
    spec = importlib.util.spec_from_file_location("surface_extract", PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module             # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


A_PY = '''
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 3, bias=False)

    def forward(self, x):
        return F.relu(self.fc(x)).view(2, 3).sum(1, keepdim=True)


loader = DataLoader(range(8), batch_size=4)
seen = []
seen.append(np.zeros(3).reshape(3))
z = torch.zeros(2, requires_grad=True)
print(z.grad, z.shape)
'''


def _notebook(cells):
    return json.dumps({"cells": [{"cell_type": "code", "source": c} for c in cells] +
                      [{"cell_type": "markdown", "source": ["nn.Conv2d is not code here"]}],
                      "nbformat": 4, "nbformat_minor": 5})


NB_CELLS = [
    ["from torch import nn\n", "from torch.nn import functional as Fn\n"],
    "%matplotlib inline\nt = nn.Linear(1, 1)(torch_input)\nt = Fn.relu(t)\n",
    "def broken(:\n    pass\n",
    "t.backward()\n",
]

C_PY = "import torch\ntorch.frobnicate_xyz(1)\ntorch.nn.Linear(1, 1, frob=2)\n"


@pytest.fixture()
def corpus_dir(tmp_path):
    (tmp_path / "projA").mkdir()
    (tmp_path / "projA" / "a.py").write_text(A_PY)
    (tmp_path / "projB" / "sub").mkdir(parents=True)
    (tmp_path / "projB" / "sub" / "b.ipynb").write_text(_notebook(NB_CELLS))
    (tmp_path / "projB" / "c.py").write_text(C_PY)
    (tmp_path / "projB" / "broken.py").write_text("def f(:\n")
    (tmp_path / "projB" / "notes.txt").write_text("import torch")
    return tmp_path


def test_extract_counts_files_cells_and_aliases(surface, corpus_dir):
    corpus = surface.extract_corpus(str(corpus_dir))
    assert corpus.projects == ["projA", "projB"]
    assert (corpus.py_files, corpus.py_skipped) == (3, 1)
    assert (corpus.notebooks, corpus.cells, corpus.cells_skipped) == (1, 4, 1)
    a = corpus.uses[("projA", "a.py")]
    assert {"torch.nn.Module", "torch.nn.Linear", "torch.nn.functional.relu", "torch.utils.data.DataLoader",
            "torch.zeros", "torch.nn", "torch.nn.functional"} <= a.names
    assert "torch" not in a.names
    assert {"view", "sum", "append"} <= a.calls
    assert "fc" not in a.calls and "reshape" not in a.calls and "__init__" not in a.calls  # self., np., super()
    assert {"grad", "shape"} <= a.reads
    assert {("torch.nn.Linear", "bias"), ("torch.utils.data.DataLoader", "batch_size"), (".sum", "keepdim"),
            ("torch.zeros", "requires_grad")} <= a.keywords
    nb = corpus.uses[("projB", os.path.join("sub", "b.ipynb"))]
    assert {"torch.nn.Linear", "torch.nn.functional.relu"} <= nb.names   # the alias Fn, across cells
    assert "torch.nn.Conv2d" not in nb.names                             # markdown is not code
    assert "backward" in nb.calls


def test_rank_counts_projects_and_drops_noise(surface, corpus_dir):
    corpus = surface.extract_corpus(str(corpus_dir))
    lists = surface.torch_member_lists()
    assert lists is not None                       # torch is a test dependency
    rows, dropped = surface.rank(corpus, lists)
    by = {r.name: r for r in rows}
    assert by["torch.nn.Linear"].projects == {"projA", "projB"} and by["torch.nn.Linear"].files == 3
    assert by["torch.nn.functional.relu"].projects == {"projA", "projB"}
    assert by["torch.utils.data.DataLoader"].projects == {"projA"}
    assert by["Tensor.view"].kind == "Tensor method" and by["Tensor.shape"].kind == "Tensor attribute"
    assert by["Tensor.sum(keepdim=)"].kind == "keyword"
    assert "Tensor.append" not in by and "append" in dropped
    assert rows[0].name in {"torch.nn.Linear", "torch.nn"}   # the most used first
    assert len(rows[0].projects) == 2
    # without torch's lists every member stays, marked unfiltered
    rows_u, _ = surface.rank(corpus, None)
    assert {r.name: r.kind for r in rows_u}["Tensor.append"] == "method (unfiltered)"


def test_coverage_lookup_in_tinygrad_tx(surface, corpus_dir):
    cov = surface.Coverage()
    row = surface.Row
    assert cov.covered(row("torch.nn.Linear", "torch name")) == "yes"
    assert cov.covered(row("torch.utils.data.dataloader.DataLoader", "torch name")) == "yes"  # a submodule
    assert cov.covered(row("torch.frobnicate_xyz", "torch name")) == "no"
    assert cov.covered(row("Tensor.view", "Tensor method")) == "yes"
    assert cov.covered(row("Tensor.grad", "Tensor attribute")) == "yes"     # set on the instance
    assert cov.covered(row("Module.eval", "Module method")) == "yes"
    assert cov.covered(row("Tensor.frobnicate", "Tensor method")) == "no"
    assert cov.covered(row("torch.nn.Linear(bias=)", "keyword")) == "yes"
    assert cov.covered(row("torch.nn.Linear(frob=)", "keyword")) == "no"
    assert cov.covered(row("torch.frobnicate_xyz(x=)", "keyword")) == "no"
    assert surface.out_of_scope("torch.cuda.is_available")
    assert surface.out_of_scope("torch.distributed.init_process_group")
    assert surface.out_of_scope("torch.view_as_complex")
    assert surface.out_of_scope("torch.nn.Linear") == ""
    with pytest.raises(ValueError, match="name='numpy.zeros'"):
        surface.resolve_torch_name("numpy.zeros")


def test_main_writes_the_table(surface, corpus_dir, tmp_path, capsys):
    out = tmp_path / "table.md"
    js = tmp_path / "rows.json"
    assert surface.main([str(corpus_dir), "--out", str(out), "--json", str(js)]) == 0
    text = out.read_text()
    assert f"Regenerate: `python tools/surface/extract.py {corpus_dir} --out {out}" in text
    assert "1 notebook cells" in text and "from 2 projects" in text
    rows = json.loads(js.read_text())
    frob = next(r for r in rows if r["name"] == "torch.frobnicate_xyz")
    assert frob["covered"] == "no" and frob["projects"] == ["projB"]
    assert "1/4 notebook cells that do not parse" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        surface.main([str(tmp_path / "missing")])
