"""Tests of the ``tinygrad-tx`` command line and the training loops under it.

Most tests call ``tinygrad_tx.cli.main(argv)`` in-process (capsys) on tiny models and a tiny
corpus written to ``tmp_path``; one runs ``python -m tinygrad_tx`` as a subprocess. Besides
"it runs", they check properties: the reported bigram NLL equals the count formula, the
trimmed batches and the evaluation compute the documented per-character loss, a checkpoint
rebuilds the same model, sampling is reproducible and honours the prefix, ``--compare-torch``
curves agree to 1e-8 in float64, and every bad input gives one line on stderr, no traceback.
"""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tinygrad_tx import cli
from tinygrad_tx.data import CharVocab, FullSequenceDataset
from tinygrad_tx.training import GPTConfig, GPTTask, load_gpt, sample_names, train_gpt
from tinygrad_tx.training.loop import eval_batches, summed_loss, trailing_columns

REPO = Path(__file__).resolve().parents[1]
NAMES = ["emma", "olivia", "ava", "isabella", "sophia", "charlotte", "mia", "amelia", "harper", "evelyn",
         "abigail", "emily", "liam", "noah", "oliver", "elijah", "james", "william", "benjamin", "lucas"]
TINY = ["--d-model", "16", "--n-heads", "2", "--n-layers", "1", "--no-progress"]


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "names.txt"
    path.write_text("\n".join(NAMES) + "\n")
    return path


def run(argv, capsys):
    """``main(argv)`` -> (exit status, stdout, stderr)."""
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err, expected_code, *fragments):
    assert code == expected_code
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert "error:" in lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


# ---------------------------------------------------------------------------- entry points

@pytest.mark.parametrize("argv, flag", [(["train", "gpt", "--seed", "-1"], "--seed"),
                                        (["train", "gpt", "--split-seed", "-2"], "--split-seed"),
                                        (["train", "bigram", "--seed", "-1"], "--seed"),
                                        (["train", "vit", "--seed", "-5"], "--seed"),
                                        (["sample", "--seed", "-1"], "--seed")])
def test_a_negative_seed_names_the_flag(capsys, argv, flag):
    """NumPy's "expected non-negative integer" came out without the flag."""
    code, _, err = run(argv, capsys)
    assert_one_line_error(code, err, 2, f"argument {flag}: must be >= 0, got -")


def test_python_m_help_runs_as_a_process():
    proc = subprocess.run([sys.executable, "-m", "tinygrad_tx", "--help"], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "train" in proc.stdout and "sample" in proc.stdout


def test_missing_file_as_a_process_gives_one_line_and_status_1(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "tinygrad_tx", "train", "bigram", "--data",
                           str(tmp_path / "nope.txt")], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"tinygrad-tx: error: file not found: {tmp_path / 'nope.txt'}"
    assert "Traceback" not in proc.stderr


def test_the_cli_and_training_modules_do_not_import_torch():
    code = ("import sys; import tinygrad_tx.cli as c; c.build_parser(); import tinygrad_tx.training, "
            "tinygrad_tx.training.vit, tinygrad_tx.training.encoder, tinygrad_tx.training.seq2seq, "
            "tinygrad_tx.training.bigram, tinygrad_tx.training.plots; "
            "print('torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"



TORCH_IMPORT = re.compile(r"^\s*(import\s+torch\b|from\s+torch\b)|(import_module|__import__)\(\s*['\"]torch\b")


def test_no_file_of_tinygrad_tx_imports_torch():
    """The package is NumPy only: its PyTorch sides (explain's live check, --compare-torch)
    live in reference/ and are loaded through importlib, so no line may import torch."""
    import tinygrad_tx
    package = Path(tinygrad_tx.__file__).resolve().parent
    files = sorted(package.rglob("*.py"))
    assert len(files) > 20
    found = [f"{f.relative_to(package.parent)}:{n}: {line.strip()}" for f in files
             for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1) if TORCH_IMPORT.search(line)]
    assert not found, "\n".join(found)
    for line in ("import torch", "    import torch.nn as nn", "from torch import nn",
                 "x = importlib.import_module('torch')", 'import_module("torch.nn")'):
        assert TORCH_IMPORT.search(line), line
    assert not TORCH_IMPORT.search('"""torch is imported by reference/ only."""')


@pytest.mark.parametrize("kind", ["gpt", "bigram", "vit", "encoder", "seq2seq"])
def test_every_config_field_is_a_flag_with_its_default(kind):
    import dataclasses
    parser = cli.build_parser()
    cls = cli._configs()[kind]
    args = parser.parse_args(["train", kind])
    assert cli.config_from_args(cls, args) == cls()
    for f in dataclasses.fields(cls):
        assert any(a.dest == f.name for a in parser._subparsers._group_actions[0].choices["train"]
                   ._subparsers._group_actions[0].choices[kind]._actions), f.name


def test_flags_reach_the_config():
    args = cli.build_parser().parse_args(["train", "gpt", "--lr", "0.01", "--batch-size", "7", "--dtype",
                                          "float64", "--no-progress", "--top-k", "3", "--dataset", "prefix"])
    cfg = cli.config_from_args(GPTConfig, args)
    assert (cfg.lr, cfg.batch_size, cfg.dtype, cfg.progress, cfg.top_k, cfg.dataset) == \
        (0.01, 7, "float64", False, 3, "prefix")


# ---------------------------------------------------------------------------- errors

@pytest.mark.parametrize("argv,fragment", [
    (["train", "gpt", "--bogus"], "unrecognized arguments: --bogus"),
    (["train", "gpt", "--steps", "0"], "--steps: must be >= 1"),
    (["train", "gpt", "--lr", "fast"], "--lr: expected a number"),
    (["train", "gpt", "--dtype", "float16"], "invalid choice"),
    (["train", "vit", "--patch-size", "3"], "invalid choice"),
    (["train", "gpt", "--top-p", "1.5"], "--top-p: must be in"),
    (["train", "transformer"], "invalid choice"),
    (["train"], "required"),
    ([], "required"),
    (["sample", "--num-samples", "-1"], "must be >= 0"),
])
def test_bad_flags_give_one_line_and_status_2(argv, fragment, capsys):
    code, out, err = run(argv, capsys)
    assert_one_line_error(code, err, 2, fragment)


def test_missing_corpus_empty_corpus_and_missing_checkpoint_give_one_line(tmp_path, capsys):
    code, _, err = run(["train", "gpt", "--data", tmp_path / "missing.txt", *TINY], capsys)
    assert_one_line_error(code, err, 1, "file not found", "missing.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    for kind in ("gpt", "bigram"):
        code, _, err = run(["train", kind, "--data", empty], capsys)
        assert_one_line_error(code, err, 1, "no names left", "empty.txt")
    code, _, err = run(["train", "seq2seq", "--task", "reverse", "--data", empty, *TINY], capsys)
    assert_one_line_error(code, err, 1, "no names left")
    code, _, err = run(["sample", "--checkpoint", tmp_path / "none.safetensors"], capsys)
    assert_one_line_error(code, err, 1, "checkpoint not found")
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"not a checkpoint")
    code, _, err = run(["sample", "--checkpoint", junk], capsys)
    assert_one_line_error(code, err, 1, "not a readable safetensors checkpoint")


def test_invalid_characters_are_dropped_with_a_one_line_warning(tmp_path, capsys):
    path = tmp_path / "mixed.txt"
    path.write_text("anna\nbob-by\nclara\ndora\n")
    code, out, err = run(["train", "bigram", "--data", path, "--num-samples", "0"], capsys)
    assert code == 0
    assert err.count("\n") == 1 and err.startswith("tinygrad-tx: warning: dropped 1 name(s)")
    assert "4 names" not in out and "3 names" in out


# ---------------------------------------------------------------------------- train gpt / sample

def test_train_gpt_then_sample(tmp_path, corpus, capsys):
    ckpt = tmp_path / "gpt" / "model.safetensors"
    code, out, err = run(["train", "gpt", "--data", corpus, "--steps", "5", "--block-size", "12", "--eval-every",
                          "2", "--batch-size", "8", "--out", ckpt, "--num-samples", "4", *TINY], capsys)
    assert code == 0, err
    assert "loss = mean negative log-likelihood per character" in out
    assert [line.split(":")[0].strip() for line in out.splitlines() if line.startswith("step")] == \
        ["step      2/5", "step      4/5", "step      5/5"]
    assert "dev loss" in out and "test loss" in out
    assert ckpt.exists() and (tmp_path / "gpt" / "model.history.json").exists()
    assert (tmp_path / "gpt" / "model.loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    generated = out.split("generated names:")[1].strip().splitlines()
    assert len(generated) == 4 and all(g.strip().endswith(")") for g in generated)
    history = json.loads((tmp_path / "gpt" / "model.history.json").read_text())
    assert history["step"] == [1, 2, 3, 4, 5] and [e["step"] for e in history["evals"]] == [2, 4, 5]

    code, out1, err = run(["sample", "--checkpoint", ckpt, "-n", "6", "--seed", "3", "--prefix", "em",
                           "--top-k", "5", "--no-mark"], capsys)
    assert code == 0, err
    names = out1.splitlines()[1:]
    assert len(names) == 6 and all(n.startswith("em") and set(n) <= set("abcdefghijklmnopqrstuvwxyz")
                                   for n in names)
    assert run(["sample", "--checkpoint", ckpt, "-n", "6", "--seed", "3", "--prefix", "em", "--top-k", "5",
                "--no-mark"], capsys)[1] == out1                                 # same seed, same names
    code, out, _ = run(["sample", "--checkpoint", ckpt, "-n", "3", "--greedy"], capsys)
    greedy = out.splitlines()[1:]
    assert code == 0 and len(set(greedy)) == 1                                 # greedy: one answer
    assert greedy[0].endswith(("(new)", "(in training set)", "(in the corpus, held out)"))
    code, _, err = run(["sample", "--checkpoint", ckpt, "--prefix", "ab1"], capsys)
    assert_one_line_error(code, err, 1, "not in the vocabulary")
    code, _, err = run(["sample", "--checkpoint", ckpt, "--prefix", "abcdefghijklm"], capsys)
    assert_one_line_error(code, err, 1, "more than max_len=11")


def test_progress_bar_reports_loss_and_throughput(tmp_path, corpus, capsys):
    code, out, err = run(["train", "gpt", "--data", corpus, "--steps", "3", "--block-size", "12", "--out",
                          tmp_path / "m.safetensors", "--num-samples", "0", "--d-model", "16", "--n-heads",
                          "2", "--n-layers", "1"], capsys)
    assert code == 0
    assert "loss=" in err and "tok/s=" in err and "3/3" in err


def test_checkpoint_rebuilds_the_trained_model(tmp_path, corpus):
    result = train_gpt(data=str(corpus), steps=3, d_model=16, n_heads=2, n_layers=1, block_size=12,
                       progress=False, num_samples=0, out=str(tmp_path / "m.safetensors"), log=lambda *_: None)
    model, vocab, info = load_gpt(tmp_path / "m.safetensors")
    assert vocab == CharVocab.tutorial() and info["layout"] == "full"
    ours = result["model"].state_dict()
    loaded = model.state_dict()
    assert list(ours) == list(loaded)
    for k in ours:
        np.testing.assert_array_equal(ours[k], loaded[k])
    a = sample_names(result["model"], vocab, 5, seed=11)
    b = sample_names(model, vocab, 5, seed=11)
    assert a == b


def tiny_task(names, layout="full", dtype="float64"):
    cfg = GPTConfig(d_model=16, n_heads=2, n_layers=1, block_size=12, dataset=layout, dtype=dtype, seed=1)
    return GPTTask(cfg, names=(names, names[:12], names[12:16], names[16:]))


def test_reported_loss_is_the_per_character_nll_of_every_prefix():
    """evaluate() = mean over every character of '$name$' after the first of -log p(char | prefix),
    each prefix run through the model on its own (no batching, no padding)."""
    task = tiny_task(NAMES)
    model = task.build_model()
    model.eval()
    v = task.vocab
    nll = []
    for name in task.dev_names:
        ids = v.encode("$" + name + "$")
        for t in range(1, len(ids)):
            logits = model(np.array([ids[:t]]))[0]._data[0, -1].astype(np.float64)
            logp = logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())
            nll.append(-logp[ids[t]])
    assert task.evaluate(model, "dev")["dev_loss"] == pytest.approx(np.mean(nll), rel=1e-12)
    # the prefix layout scores the same characters (with its left-padded context)
    prefix = tiny_task(NAMES, layout="prefix")
    total, n = summed_loss(model, eval_batches(prefix._eval["dev"]), prefix)
    assert n == len(nll)


def test_trimming_padding_columns_does_not_change_the_loss():
    task = tiny_task(NAMES)
    model = task.build_model().eval()  # dropout off: the two forwards must see the same network
    x, y = FullSequenceDataset(task.train_names, task.vocab, 12)[np.arange(6)]
    xt, yt = task.trim((x, y))
    assert xt.shape[1] == trailing_columns(y != -100) == max(len(n) for n in task.train_names[:6]) + 1 < 12
    full = model(x, y)[1].item()
    trimmed = model(xt, yt)[1].item()
    assert trimmed == pytest.approx(full, rel=1e-13)


def test_prefix_layout_trains_and_samples(tmp_path, corpus, capsys):
    ckpt = tmp_path / "p.safetensors"
    code, out, err = run(["train", "gpt", "--data", corpus, "--dataset", "prefix", "--steps", "2",
                          "--block-size", "6", "--out", ckpt, "--num-samples", "2", *TINY], capsys)
    assert code == 0, err
    code, out, err = run(["sample", "--checkpoint", ckpt, "-n", "3", "--seed", "0", "--max-len", "20"], capsys)
    assert code == 0, err and "prefix layout" in out.splitlines()[0]
    assert len(out.splitlines()) == 4


# ---------------------------------------------------------------------------- bigram

def test_bigram_nll_is_the_smoothed_count_formula(corpus, capsys):
    from tinygrad_tx.training.gpt import load_split
    code, out, err = run(["train", "bigram", "--data", corpus, "--alpha", "0.5", "--num-samples", "3"], capsys)
    assert code == 0, err
    _, train, dev, _ = load_split(str(corpus), 42)
    counts = Counter((a, b) for n in train for a, b in zip("$" + n, n + "$"))
    row = Counter()
    for (a, _), c in counts.items():
        row[a] += c
    nll = -np.mean([math.log((counts[(a, b)] + 0.5) / (row[a] + 0.5 * 27))
                    for n in dev for a, b in zip("$" + n, n + "$")])
    line = next(line for line in out.splitlines() if "NLL per character" in line)
    assert f"dev {nll:.4f}" in line
    assert len(out.split("sampled names:")[1].strip().splitlines()) == 3


# ---------------------------------------------------------------------------- vit / encoder / seq2seq

def test_train_vit_smoke(tmp_path, capsys):
    code, out, err = run(["train", "vit", "--steps", "2", "--patch-size", "4", "--batch-size", "16",
                          "--out", tmp_path / "v.safetensors", *TINY], capsys)
    assert code == 0, err
    assert "test accuracy" in out and "1437 train, 179 dev, 181 test" in out
    assert (tmp_path / "v.loss.png").exists()
    code, _, err = run(["sample", "--checkpoint", tmp_path / "v.safetensors"], capsys)
    assert_one_line_error(code, err, 1, "a 'vit' checkpoint")


def test_random_shift_moves_images_by_at_most_one_pixel():
    from tinygrad_tx.training.vit import random_shift
    rng = np.random.default_rng(0)
    images = rng.normal(size=(50, 1, 8, 8))
    shifted = random_shift(images, np.random.default_rng(1), background=-9.0)
    rng = np.random.default_rng(1)                         # the draws random_shift makes: dy, then dx
    dy, dx = rng.integers(-1, 2, size=50), rng.integers(-1, 2, size=50)
    assert {-1, 0, 1} <= set(dy) and {-1, 0, 1} <= set(dx)
    for i in range(50):
        expected = np.full((8, 8), -9.0)                  # out[r, c] = image[r - dy, c - dx]
        src = images[i, 0]
        ys, xs = slice(max(dy[i], 0), 8 + min(dy[i], 0)), slice(max(dx[i], 0), 8 + min(dx[i], 0))
        expected[ys, xs] = src[max(-dy[i], 0):8 - max(dy[i], 0), max(-dx[i], 0):8 - max(dx[i], 0)]
        np.testing.assert_array_equal(shifted[i, 0], expected)


def test_train_encoder_smoke_and_its_data(tmp_path, capsys):
    from tinygrad_tx.training.encoder import gender_data
    (train, dev, test), ambiguous = gender_data(42)
    assert ambiguous == 331 and len(train) + len(dev) + len(test) == 5163 - 331
    names = [n for n, _ in train + dev + test]
    assert len(set(names)) == len(names) and not set(n for n, _ in train) & set(n for n, _ in test)
    code, out, err = run(["train", "encoder", "--steps", "2", "--batch-size", "16", "--out",
                          tmp_path / "e.safetensors", *TINY], capsys)
    assert code == 0, err
    assert "331 names on both" in out and "test accuracy" in out and "majority class" in out


def test_train_seq2seq_dates_and_reverse_smoke(tmp_path, corpus, capsys):
    code, out, err = run(["train", "seq2seq", "--steps", "2", "--num-examples", "60", "--batch-size", "16",
                          "--out", tmp_path / "s.safetensors", *TINY], capsys)
    assert code == 0, err
    assert "test exact match" in out and "(expected" in out or "(ok)" in out
    code, out, err = run(["train", "seq2seq", "--task", "reverse", "--data", corpus, "--steps", "2",
                          "--out", tmp_path / "r.safetensors", *TINY], capsys)
    assert code == 0, err and "test exact match" in out


def test_every_date_has_its_own_spelling_in_the_vocabulary():
    import datetime
    from tinygrad_tx.training.seq2seq import FIRST_DAY, LAST_DAY, date_vocabulary, spell_date
    vocab = set(date_vocabulary())
    for form in range(3):
        seen = set()
        day = FIRST_DAY
        while day <= LAST_DAY:
            words = tuple(spell_date(day, form))
            assert set(words) <= vocab and words not in seen
            seen.add(words)
            day += datetime.timedelta(days=1)
    assert spell_date(datetime.date(1905, 3, 21), 1) == \
        ["the", "twenty", "first", "of", "march", "nineteen", "oh", "five"]
    assert spell_date(datetime.date(2000, 12, 30), 0) == ["december", "thirtieth", "two", "thousand"]


# ---------------------------------------------------------------------------- --compare-torch

def test_compare_torch_float64_curves_agree_to_1e_8(tmp_path, corpus, capsys):
    pytest.importorskip("torch")
    png = tmp_path / "compare.png"
    code, out, err = run(["train", "gpt", "--data", corpus, "--steps", "3", "--block-size", "12", "--dtype",
                          "float64", "--compare-torch", "--compare-every", "1", "--plot", png, "--batch-size",
                          "8", "--dropout", "0.1", *TINY], capsys)
    assert code == 0, err
    assert "dropout 0.1 -> 0" in out
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [int(r[0]) for r in rows] == [1, 2, 3]
    for _, ours, theirs, _ in rows:
        assert abs(float(ours) - float(theirs)) <= 1e-8 * abs(float(theirs))
    assert "(within 1e-08)" in out and png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("kind,extra", [("vit", ["--patch-size", "4"]), ("encoder", []),
                                        ("seq2seq", ["--num-examples", "60"])])
def test_compare_torch_api_other_models(kind, extra, tmp_path):
    pytest.importorskip("torch")
    from reference.train import compare
    args = cli.build_parser().parse_args(["train", kind, "--steps", "2", "--dtype", "float64", "--batch-size",
                                          "8", "--dropout", "0", *TINY, *extra])
    task = cli._task(kind, cli.config_from_args(cli._configs()[kind], args))
    result = compare(task, log=lambda *_: None)
    assert len(result["ours"]) == 2 and result["max_rel_diff"] <= 1e-8


def test_bench_forwards_to_the_benchmark_or_explains_where_it_is(monkeypatch, capsys):
    calls = []
    fake = type(sys)("bench.cli")
    fake.main = lambda argv: calls.append(argv) or 0
    monkeypatch.setitem(sys.modules, "bench.cli", fake)
    assert run(["bench", "--help", "--quick"], capsys)[0] == 0 and calls == [["--help", "--quick"]]
    monkeypatch.setitem(sys.modules, "bench.cli", None)                        # not importable
    code, _, err = run(["bench", "--quick"], capsys)
    assert_one_line_error(code, err, 1, "from the repository root")


def _editable_install_of_this_checkout() -> bool:
    """True when a ``tinygrad_tx`` distribution on sys.path is an editable install of this
    checkout (so the ``tinygrad-tx`` console script runs the code under test). Every one is
    looked at: a checkout's own ``tinygrad_tx.egg-info`` (no install record) may come first."""
    from importlib import metadata
    from urllib.parse import unquote, urlparse
    for dist in metadata.distributions(name="tinygrad_tx"):
        direct_url = json.loads(dist.read_text("direct_url.json") or "{}")
        url = urlparse(direct_url.get("url", ""))
        if (direct_url.get("dir_info", {}).get("editable") and url.scheme == "file"
                and Path(unquote(url.path)).resolve() == REPO):
            return True
    return False


def test_installed_console_script_finds_the_benchmark_from_any_directory(tmp_path):
    """The console script does not put the checkout on sys.path; ``tinygrad-tx bench`` must
    still find bench/ beside the package, whatever the current directory."""
    script = shutil.which("tinygrad-tx")
    if script is None:
        pytest.skip("the tinygrad-tx console script is not installed")
    if not _editable_install_of_this_checkout():
        pytest.skip("the installed tinygrad_tx is not an editable install of this checkout")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([script, "bench", "--help"], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "--quick" in proc.stdout


# ---------------------------------------------------------------------------- makemore's --type

@pytest.mark.parametrize("kind,model,layout", [("bigram", "NeuralBigram", "full"), ("mlp", "FlattenMLP", "prefix")])
def test_train_names_type_baselines_train_checkpoint_and_sample(kind, model, layout, tmp_path, corpus, capsys):
    ckpt = tmp_path / f"{kind}.safetensors"
    code, out, err = run(["train", "names", "--type", kind, "--data", corpus, "--steps", "4", "--block-size", "8",
                          "--eval-every", "2", "--batch-size", "8", "--out", ckpt, "--num-samples", "3", *TINY],
                         capsys)
    assert code == 0, err
    assert f"model: {model}," in out and "dev loss" in out and "bigram count model" not in out
    assert re.search(r"^threads: \d+ for elementwise work", out, re.M), out   # the run says its threads
    assert [line.split(":")[0].strip() for line in out.splitlines() if line.startswith("step")] == \
        ["step      2/4", "step      4/4"]
    assert len(out.split("generated names:")[1].strip().splitlines()) == 3
    loaded, vocab, info = load_gpt(ckpt)
    assert type(loaded).__name__ == model and info["layout"] == layout and info["config"]["type"] == kind
    code, out, err = run(["sample", "--checkpoint", ckpt, "-n", "4", "--seed", "2", "--prefix", "Em",
                          "--no-mark"], capsys)
    assert code == 0, err
    assert out.splitlines()[0].endswith(f"({layout} layout, dev loss {info['metrics']['dev_loss']:.4f})")
    assert model in out.splitlines()[0]
    names = out.splitlines()[1:]
    assert len(names) == 4 and all(n.startswith("em") and set(n) <= set("abcdefghijklmnopqrstuvwxyz") for n in names)


@pytest.mark.parametrize("kind", ["bigram", "mlp"])
def test_baselines_match_their_pytorch_twins_step_by_step(kind, tmp_path, corpus, capsys):
    pytest.importorskip("torch")
    code, out, err = run(["train", "names", "--type", kind, "--data", corpus, "--steps", "3", "--block-size", "6",
                          "--dtype", "float64", "--compare-torch", "--compare-every", "1", "--batch-size", "8",
                          "--plot", tmp_path / "c.png", *TINY], capsys)
    assert code == 0, err
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [int(r[0]) for r in rows] == [1, 2, 3]
    for _, ours, theirs, _ in rows:
        assert abs(float(ours) - float(theirs)) <= 1e-12 * abs(float(theirs))


def test_mlp_samples_continue_the_window_the_model_scores():
    """``sample_names`` feeds a FlattenMLP its left-padded window: the first letter's distribution
    is the model's own softmax on block_size '$'s, so greedy decoding picks its argmax."""
    from tinygrad_tx.models import FlattenMLP
    from tinygrad_tx import manual_seed
    manual_seed(0)
    vocab = CharVocab.tutorial()
    m = FlattenMLP(27, block_size=5, d_model=4, hidden=8)
    logits = m(np.zeros((1, 5), dtype=np.int64))[0]._data[0]
    first = sample_names(m, vocab, 2, greedy=True, max_len=1)
    expected = vocab.itos[int(np.argmax(logits))]
    assert first == ["" if expected == "$" else expected] * 2


def test_type_is_a_gpt_config_field_and_names_is_an_alias_of_gpt():
    parser = cli.build_parser()
    assert cli.config_from_args(GPTConfig, parser.parse_args(["train", "names"])) == GPTConfig()
    cfg = cli.config_from_args(GPTConfig, parser.parse_args(["train", "gpt", "--type", "mlp"]))
    assert cfg.type == "mlp" and GPTTask(cfg, names=(NAMES, NAMES[:12], NAMES[12:16], NAMES[16:])).layout == "prefix"
    assert cli.main(["train", "names", "--type", "mamba"]) == 2    # not one of the types


# ---------------------------------------------------------------------------- checks before the data

@pytest.mark.parametrize("argv,fragment", [
    (["train", "gpt", "--d-model", "10", "--n-heads", "4"], "--d-model 10 is not divisible by --n-heads 4"),
    (["train", "names", "--attn-impl", "flash", "--dropout", "0.1"], "--attn-impl flash has no attention dropout"),
    (["train", "encoder", "--d-model", "6", "--n-heads", "4"], "not divisible"),
])
def test_flag_combinations_fail_before_the_corpus_loads(argv, fragment, tmp_path, capsys):
    code, _, err = run([*argv, *(["--data", tmp_path / "missing.txt"] if "encoder" not in argv else [])], capsys)
    assert_one_line_error(code, err, 2, fragment)
    assert "file not found" not in err                       # the missing corpus was never opened


def test_flash_without_dropout_and_compare_torch_with_dropout_pass_the_checks():
    GPTConfig(attn_impl="flash", dropout=0.0)
    GPTConfig(attn_impl="flash", dropout=0.1, compare_torch=True)   # --compare-torch sets dropout to 0 itself
    GPTConfig(type="mlp", d_model=10, n_heads=4)                    # the MLP has no heads
    with pytest.raises(ValueError, match="not divisible"):
        GPTConfig().replace(d_model=10)


def test_plot_commands_check_their_flags_before_training(tmp_path, capsys):
    code, _, err = run(["plot", "attention", "--d-model", "10", "--n-heads", "4", "--data",
                        tmp_path / "missing.txt", "-o", tmp_path / "a.png"], capsys)
    assert_one_line_error(code, err, 1, "not divisible")
    code, out, err = run(["plot", "attention", "--name", "Anne-Marie", "--data", tmp_path / "missing.txt"], capsys)
    assert_one_line_error(code, err, 1, "--name 'anne-marie'", "'-'")
    assert "corpus" not in out


# ---------------------------------------------------------------------------- one rule for typed names

def test_prefix_and_name_follow_one_rule():
    from tinygrad_tx.training.gpt import name_letters
    vocab = CharVocab.tutorial()
    assert name_letters(" Mar ", vocab) == "mar" and name_letters("ANNE", vocab, "--name") == "anne"
    with pytest.raises(ValueError, match=r"--prefix '\$a'.*'\$'.*added for you"):
        name_letters("$a", vocab)
    with pytest.raises(ValueError, match=r"--name 'anne-marie': characters not in the vocabulary: '-'"):
        name_letters("Anne-Marie", vocab, "--name")
    with pytest.raises(ValueError, match="not in the vocabulary"):
        sample_names(GPTTask(GPTConfig(d_model=16, n_heads=2, n_layers=1),
                             names=(NAMES, NAMES[:12], NAMES[12:16], NAMES[16:])).build_model(), vocab, 2, prefix="a$")


def test_sample_prefix_capitals_dollar_and_empty_names(tmp_path, corpus, capsys):
    ckpt = tmp_path / "m.safetensors"
    assert run(["train", "gpt", "--data", corpus, "--steps", "2", "--block-size", "12", "--out", ckpt,
                "--num-samples", "0", *TINY], capsys)[0] == 0
    base = ["sample", "--checkpoint", ckpt, "-n", "5", "--seed", "4", "--no-mark"]
    code, upper, err = run([*base, "--prefix", "Mar"], capsys)
    assert code == 0, err
    assert upper == run([*base, "--prefix", "mar"], capsys)[1]          # Mar is mar, as the corpus is
    code, _, err = run([*base, "--prefix", "$"], capsys)
    assert_one_line_error(code, err, 1, "--prefix '$'", "added for you")
    from tinygrad_tx.training.gpt import mark_novel
    lines = mark_novel(["", "emma", "zzz"], ["emma"], ["emma", "ava"])
    assert lines == ["(empty: the model ended the name at once)", "emma  (in training set)", "zzz  (new)"]


# ---------------------------------------------------------------------------- --threads

def test_threads_flag_limits_blas_and_our_pool_and_restores_them(tmp_path, corpus, monkeypatch, capsys):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from tinygrad_tx import parallel
    from tinygrad_tx.training import loop
    before = parallel.get_num_threads()
    seen = []
    real = loop.train_step

    def spy(*a, **k):
        blas = [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
        seen.append((parallel.get_num_threads(), blas))
        return real(*a, **k)
    monkeypatch.setattr(loop, "train_step", spy)
    code, _, err = run(["train", "gpt", "--data", corpus, "--steps", "2", "--block-size", "12", "--threads", "1",
                        "--out", tmp_path / "m.safetensors", "--num-samples", "0", *TINY], capsys)
    assert code == 0, err
    assert seen and all(n == 1 and all(b == 1 for b in blas) for n, blas in seen)
    assert parallel.get_num_threads() == before
    assert cli.build_parser().parse_args(["train", "vit"]).threads == 0                   # every trainer has it
    code, _, err = run(["train", "gpt", "--threads", "-1"], capsys)
    assert_one_line_error(code, err, 2, "--threads: must be >= 0")


# ---------------------------------------------------------------------------- run FILE.py

def test_run_parses_the_file_and_hands_everything_after_it_to_the_script(tmp_path, monkeypatch, capsys):
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    calls = []
    shim = type(sys)("tinygrad_tx.torch_shim")
    shim.run_file = lambda path, argv: calls.append((path, argv)) or 3
    monkeypatch.setitem(sys.modules, "tinygrad_tx.torch_shim", shim)
    assert run(["run", script, "--lr", "0.1", "--help", "-n", "2"], capsys)[0] == 3
    assert calls == [(str(script), ["--lr", "0.1", "--help", "-n", "2"])]
    shim.run_file = lambda path, argv: sys.exit(4)
    assert run(["run", script], capsys)[0] == 4
    shim.run_file = lambda path, argv: None
    assert run(["run", script], capsys)[0] == 0

    def broken(path, argv):
        raise KeyError("the script's own bug")
    shim.run_file = broken
    code, _, err = run(["run", script], capsys)
    assert code == 1 and "Traceback" in err and "the script's own bug" in err    # its traceback, as python shows


def test_a_failing_scripts_traceback_starts_at_its_own_frame(tmp_path, capsys):
    """The traceback began with the runner's frames (cli.py, torch_shim, runpy) above the script's."""
    script = tmp_path / "bad.py"
    script.write_text("import torch\n\ndef f():\n    raise ValueError('boom')\n\nf()\n")
    code, _, err = run(["run", script], capsys)
    lines = err.strip().splitlines()
    assert code == 1 and lines[0] == "Traceback (most recent call last):", err
    assert lines[1] == f'  File "{script}", line 6, in <module>' and lines[-1] == "ValueError: boom"
    assert not any(x in err for x in ("cli.py", "torch_shim", "runpy")), err


@pytest.mark.parametrize("body, code, message", [("sys.exit('no data given')", 1, "no data given"),
                                                 ("sys.exit(3)", 3, ""), ("sys.exit()", 0, ""),
                                                 ("raise SystemExit(['a', 1])", 1, "['a', 1]")])
def test_run_sys_exit_with_a_message_prints_it_as_python_does(tmp_path, capsys, body, code, message):
    """sys.exit('message') exited 1 without printing the message."""
    script = tmp_path / "s.py"
    script.write_text(f"import sys\n{body}\n")
    got, _, err = run(["run", script], capsys)
    assert got == code and err.strip() == message
    python = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert python.returncode == code and python.stderr.strip() == message


def test_run_errors_and_help(tmp_path, monkeypatch, capsys):
    code, _, err = run(["run", tmp_path / "nope.py", "--x"], capsys)
    assert_one_line_error(code, err, 1, "file not found", "nope.py")
    code, _, err = run(["run", tmp_path], capsys)
    assert_one_line_error(code, err, 1, "is a directory")
    code, _, err = run(["run"], capsys)
    assert_one_line_error(code, err, 2, "FILE.py")
    code, out, _ = run(["run", "--help"], capsys)
    assert code == 0 and "run a PyTorch script on tinygrad_tx (its `import torch` loads tinygrad_tx)" in " ".join(
        out.split())
    script = tmp_path / "s.py"
    script.write_text("")
    monkeypatch.setitem(sys.modules, "tinygrad_tx.torch_shim", None)                 # not importable
    code, _, err = run(["run", script], capsys)
    assert_one_line_error(code, err, 1, "needs tinygrad_tx.torch_shim")


# ---------------------------------------------------------------------------- --resume

def test_resume_errors_are_one_line(tmp_path, corpus, capsys):
    base = ["train", "gpt", "--data", corpus, "--steps", "2", *TINY, "--num-samples", "0",
            "--out", tmp_path / "m.safetensors"]
    code, _, err = run(base + ["--resume", tmp_path / "missing.safetensors"], capsys)
    assert_one_line_error(code, err, 1, "checkpoint not found", "missing.safetensors")
    code, _, err = run(base + ["--compare-torch", "--resume", tmp_path / "m.safetensors"], capsys)
    assert_one_line_error(code, err, 2, "--resume does not combine with --compare-torch")
    assert not (tmp_path / "m.safetensors").exists()
    code, _, _ = run(base, capsys)
    assert code == 0
    code, _, err = run(["train", "gpt", "--data", corpus, "--steps", "2", "--d-model", "8", "--n-heads", "2",
                        "--n-layers", "1", "--no-progress", "--out", tmp_path / "m2.safetensors",
                        "--resume", tmp_path / "m.safetensors"], capsys)
    assert_one_line_error(code, err, 1, "the checkpoint's model is gpt: GPTLanguageModel(", "d_model=16",
                          "this run's is", "d_model=8")


def test_resume_command_replaces_an_earlier_resume_and_quotes():
    assert cli.resume_command(["train", "gpt", "--resume", "old", "--out", "a b/m.safetensors"], "a b/m.safetensors") \
        == "tinygrad-tx train gpt --out 'a b/m.safetensors' --resume 'a b/m.safetensors'"
    assert cli.resume_command(["train", "vit", "--resume=old"], "x") == "tinygrad-tx train vit --resume x"


def test_automatic_threads_leave_the_busy_cores_alone(monkeypatch):
    """--threads 0 (the default) uses the CPUs this process may use less the load already on them,
    at least 1; OMP_NUM_THREADS wins when set; the run's thread line says why."""
    import os
    from tinygrad_tx.training import loop
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    for load, want in ((0.2, 4), (1.4, 3), (3.6, 1), (9.0, 1)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, load, load))
        n, why = loop.automatic_threads()
        assert n == want and f"load average {load:.1f}" in why, (load, n, why)
    assert "threads: 1 for elementwise work" in loop.thread_report(0)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert loop.automatic_threads() == (3, "OMP_NUM_THREADS=3")
    from tinygrad_tx import parallel
    before = parallel.get_num_threads()
    with loop.thread_limit(0):
        assert parallel.get_num_threads() == 3
    assert parallel.get_num_threads() == before


def test_a_stop_inside_an_extension_import_is_reported_as_a_stop(monkeypatch, capsys):
    """A SIGTERM (or Ctrl-C) that lands while a SciPy extension module initialises reaches the
    command as ImportError('initialization failed') raised from the stop (pybind11). It is the
    stop: one line and 143, and the process leaves at once (a normal shutdown met the
    half-initialised module: "Fatal Python error", status -6, seen in the kill experiment)."""
    import signal

    import tinygrad_tx_launch as launch

    def interrupted_import(args):
        try:
            raise launch.Stopped(signal.SIGTERM)
        except KeyboardInterrupt as stop:
            raise ImportError("initialization failed") from stop

    exits = []
    monkeypatch.setattr(cli, "cmd_run", interrupted_import)
    monkeypatch.setattr(cli.os, "_exit", exits.append)
    assert cli.main(["run", "script.py"]) == 143
    assert exits == [143]
    assert capsys.readouterr().err.strip() == "tinygrad-tx: interrupted (SIGTERM)"
    monkeypatch.setattr(cli, "cmd_run", lambda args: (_ for _ in ()).throw(ImportError("no module named x")))
    assert cli.main(["run", "script.py"]) == 1                      # a real import error stays one
    assert "error: no module named x" in capsys.readouterr().err


def test_a_stop_turned_into_another_error_by_a_c_extension_is_a_stop(monkeypatch, capsys):
    """Raised by training's handler inside matplotlib's C code, the stop came out as a TypeError
    that does not keep it (kill experiment: exit 1). The handler remembers what it raised
    (``signals.raised``), and the command reports the stop; a later run's real error is an error."""
    import signal

    from tinygrad_tx.training import signals

    def stopped_in_c(args):
        with signals.StopSignals() as stop:
            try:
                stop._handle(signal.SIGTERM, None)
            except KeyboardInterrupt:
                raise TypeError("affine_transform(): incompatible function arguments") from None

    exits = []
    monkeypatch.setattr(cli.os, "_exit", exits.append)
    monkeypatch.setattr(cli, "cmd_run", stopped_in_c)
    assert cli.main(["run", "script.py"]) == 143 and exits == [143]
    assert capsys.readouterr().err.strip() == "tinygrad-tx: interrupted (SIGTERM)"
    monkeypatch.setattr(cli, "cmd_run", lambda args: (_ for _ in ()).throw(TypeError("a real one")))
    assert cli.main(["run", "script.py"]) == 1 and exits == [143]
    assert "error: a real one" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["run", "trace", "graph"])
def test_syntax_error_in_the_users_file_is_one_line(tmp_path, capsys, command):
    """A syntax error in FILE.py: one line naming the file, the line and Python's message (issue 35);
    --debug shows the traceback."""
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\nx = (\n")
    assert cli.main([command, str(bad)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"tinygrad-tx: error: {bad}, line 2: SyntaxError: '(' was never closed (--debug shows the traceback)"]
    assert cli.main(["--debug", command, str(bad)]) == 1
    assert "Traceback" in capsys.readouterr().err


def test_help_speaks_of_every_command(capsys):
    """The top-level description names the study tools and the benchmark; plot's names all its
    pictures; bench's shows no reStructuredText markup."""
    def shown(argv):
        try:
            code = cli.main(argv)
        except SystemExit as e:
            code = e.code
        assert code in (0, None)
        return " ".join(capsys.readouterr().out.split())

    text = shown(["--help"])
    for word in ("graph", "trace", "explain", "compile", "exercise", "benchmark", "PyTorch scripts"):
        assert word in text.split("positional arguments")[0], word
    text = shown(["plot", "--help"])
    description = text.split("positional arguments")[0]
    for picture in ("bigram", "embeddings", "attention", "seq-cost", "grad-distance", "name-models", "digits-data"):
        assert picture in description, picture
    from bench.cli import parse_args as bench_args   # a source checkout: the tests run from it
    with pytest.raises(SystemExit):
        bench_args(["--help"])
    assert "``" not in capsys.readouterr().out


_WITHOUT = """
import importlib.abc, sys
class _Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {"safetensors", "tqdm", "names", "matplotlib"}:
            raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, _Missing())
from tinygrad_tx.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("argv", [["explain", "softmax"], ["explain", "TanhBackward0"], ["trace", "layernorm"],
                                  ["graph", "attention", "-o", "{tmp}/g.svg"], ["--help"]])
def test_study_commands_run_without_the_training_stack(argv, tmp_path):
    """Issue 32: every command imported the training stack (models, safetensors checkpoints,
    tqdm, matplotlib), so `tinygrad-tx explain softmax` failed where safetensors was missing. The
    study commands now run with those four packages unimportable."""
    import subprocess
    argv = [a.format(tmp=tmp_path) for a in argv]
    done = subprocess.run([sys.executable, "-c", _WITHOUT, *argv], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Error" not in done.stderr, done.stderr[-2000:]
