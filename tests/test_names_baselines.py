"""The names baselines of ``tinygrad-tx train gpt --type rnn | gru | lstm | bow | wavenet``
(``tinygrad_tx.models.recurrent_baselines``) against their PyTorch twins
(``reference.recurrent_baselines``), and through the training command.

* parity (hypothesis): logits and loss, and the gradient of every parameter under a random
  cotangent, float64 within 1e-10 relative, float32 by the kit's rule (``check_model`` of
  tests/test_models.py);
* the models are causal (a later token never changes an earlier logit), BoW's mixing is the
  plain average of the past, and the WaveNet sees exactly its receptive field;
* training: AdamW steps equal torch's step by step (float64, every parameter), ``--compare-torch``
  agrees to 1e-12, a run interrupted and resumed equals the uninterrupted run bit for bit, and
  the CLI trains, resumes and samples each type;
* the parameter counts at the default size (the README quotes them), state-dict round trips,
  and clear errors for bad arguments.

The tests use a 20-name corpus written to ``tmp_path``; none needs /work/shared.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

import reference as R
import tinygrad_tx as tg
from reference.testing import DEVICE
from reference.train import build_twin, compare, torch_optimizer
from test_models import check_model, ids, lm_targets, with_targets
from test_resume import assert_same_run, interrupted_then_resumed
from tinygrad_tx import cli
from tinygrad_tx import models as M
from tinygrad_tx.testing.strategies import seeds
from tinygrad_tx.training import GPTConfig, GPTTask, fit, load_gpt
from tinygrad_tx.training.config import NAME_BASELINES
from tinygrad_tx.training.loop import batch_stream, make_optimizer, train_step
from tinygrad_tx.training.saving import load_history

torch.set_num_threads(1)

NAMES = ["emma", "olivia", "ava", "isabella", "sophia", "charlotte", "mia", "amelia", "harper", "evelyn",
         "abigail", "emily", "liam", "noah", "oliver", "elijah", "james", "william", "benjamin", "lucas"]
CELLS = ("rnn", "gru", "lstm")
TYPES = {"rnn": "RecurrentLM", "gru": "RecurrentLM", "lstm": "RecurrentLM", "bow": "BagOfWordsLM",
         "wavenet": "WaveNetLM"}


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "names.txt"
    path.write_text("\n".join(NAMES) + "\n")
    return path


def builder(kind, vocab, block_size, d_model, hidden, n_layers, kernel_size=2):
    """``build(lib)`` of one of the three models, for ``check_model``."""
    if kind in CELLS:
        return lambda lib, **kw: lib.RecurrentLM(vocab, block_size, d_model, hidden, n_layers, kind)
    if kind == "bow":
        return lambda lib, **kw: lib.BagOfWordsLM(vocab, block_size, d_model, hidden, n_layers)
    return lambda lib, **kw: lib.WaveNetLM(vocab, block_size, d_model, n_layers, kernel_size)


# ============================================================================ parity

@pytest.mark.parametrize("kind", NAME_BASELINES)
@given(vocab=st.integers(2, 9),
       d_model=st.integers(1, 5), hidden=st.integers(1, 6), n_layers=st.integers(1, 3), kernel=st.integers(2, 3),
       B=st.integers(1, 3), T=st.integers(1, 7), targets=st.sampled_from(["none", "last", "all"]), seed=seeds)
def test_model_parity_with_its_torch_twin(kind, vocab, d_model, hidden, n_layers, kernel, B, T, targets, seed):
    """Logits (and loss) and every parameter's gradient equal torch's: float64 within 1e-10,
    float32 by the kit's rule. T runs up to 7 past a block of 5 for the RNNs and the WaveNet
    (they read any length); BoW's position table holds exactly T rows."""
    rng = np.random.default_rng(seed)
    idx, tgt = ids(rng, vocab, (B, T)), lm_targets(rng, vocab, B, T, targets)
    block = T if kind == "bow" else 5
    # one step from the zero state: W_hh multiplies h_0 = 0, so its gradient is exactly zero
    zero = (r"\.weight_hh_l\d+$",) if kind in CELLS and T == 1 else ()
    check_model(f"{kind}LM", builder(kind, vocab, block, d_model, hidden, n_layers, kernel), lambda m, *a: m(*a),
                (idx,) + with_targets(tgt), seed, may_be_zero=zero,
                prepare=unsaturated_bow(idx, n_layers) if kind == "bow" else None)


TANH_LIMIT = 6.0


def unsaturated_bow(idx, n_layers):
    """BoW's residual stream doubles at position 0 in every block (x + mean of x_0 alone = 2 x_0), so
    after the test's weight perturbation its MLP pre-activations reach 8 in the median draw. There
    tanh' = 1 - y^2 ~ 4e-7 is a difference of numbers near 1, and torch's float64 reference (which
    rounds y*y; ours takes (1 - y)(1 + y)) carries a relative error of ~1e-16 / (1 - y^2) ~ 3e-10 in
    it: over the 1e-10 bound with one hidden unit (a whole weight gradient through that tanh), and
    at |pre| > 19 tanh' underflows to 0 (a blind test). So the embeddings are scaled by
    2^-n_layers to undo the doubling, and the rare draw whose pre-activations still exceed
    TANH_LIMIT (relative error of the reference <= ~1e-11) is skipped, measured by forward hooks."""
    def prepare(model):
        for emb in (model.token_embedding, model.pos_embedding):
            emb.weight._data *= 0.5 ** n_layers
        pre = []
        hooks = [b.mlp[0].register_forward_hook(lambda m, i, o: pre.append(float(np.abs(o._data).max())))
                 for b in model.blocks]
        model(idx)
        for h in hooks:
            h.remove()
        assume(max(pre) < TANH_LIMIT)
    return prepare


# ============================================================================ what each model computes

def logits_of(model, idx):
    return model(np.asarray(idx, dtype=np.int64))[0]._data


@given(kind=st.sampled_from(("rnn", "gru", "lstm", "bow", "wavenet")), T=st.integers(2, 8), data=st.data(),
       seed=seeds)
def test_a_later_token_never_changes_an_earlier_logit(kind, T, data, seed):
    """Causality, the property every layout relies on: changing token s changes no logit at t < s."""
    tg.manual_seed(seed)
    model = builder(kind, 7, 8, 4, 5, 2)(M).double()
    rng = np.random.default_rng(seed)
    idx = ids(rng, 7, (2, T))
    s = data.draw(st.integers(1, T - 1), label="changed position")
    changed = idx.copy()
    changed[:, s] = (changed[:, s] + 1 + rng.integers(0, 6, 2)) % 7
    a, b = logits_of(model, idx), logits_of(model, changed)
    np.testing.assert_array_equal(a[:, :s], b[:, :s])
    assert not np.array_equal(a[:, s], b[:, s])                   # the changed token itself is seen


def test_bow_mixes_each_position_with_the_plain_average_of_its_past():
    from tinygrad_tx.models.recurrent_baselines import causal_mean
    x = np.random.default_rng(0).standard_normal((2, 5, 3))
    expected = np.stack([x[:, :t + 1].mean(axis=1) for t in range(5)], axis=1)
    np.testing.assert_allclose(causal_mean(tg.Tensor(x))._data, expected, rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("n_layers,kernel", [(1, 2), (3, 2), (4, 2), (2, 3)])
def test_wavenet_sees_exactly_its_receptive_field(n_layers, kernel):
    """Output t depends on tokens t - R + 1 .. t, R = kernel**n_layers (dilations 1, k, k^2, ...)."""
    tg.manual_seed(1)
    model = M.WaveNetLM(5, block_size=32, d_model=3, n_layers=n_layers, kernel_size=kernel).double()
    R_ = model.receptive_field
    assert R_ == kernel ** n_layers and model.dilations == [kernel ** i for i in range(n_layers)]
    T = R_ + 3
    idx = np.ones((1, T), dtype=np.int64)
    base = logits_of(model, idx)
    for s in range(T):
        moved = idx.copy()
        moved[0, s] = 3
        changed = np.flatnonzero(np.abs(logits_of(model, moved) - base)[0].max(axis=-1) > 0)
        assert changed.tolist() == list(range(s, min(s + R_, T))), s


# ============================================================================ training

def tiny_task(kind, dtype="float64", **kw):
    cfg = GPTConfig(type=kind, d_model=6, n_layers=2, block_size=8, batch_size=6, dtype=dtype, dropout=0.0,
                    steps=4, warmup_steps=2, progress=False, num_samples=0, eval_every=0, **kw)
    return GPTTask(cfg, names=(NAMES, NAMES[:14], NAMES[14:17], NAMES[17:]))


@pytest.mark.parametrize("kind", NAME_BASELINES)
def test_adamw_steps_equal_torch_step_by_step(kind):
    """The training loop's own step (AdamW with weight decay on matrices, warmup/cosine, clipping)
    against torch's on the same batches: every parameter within 1e-10 after every step (float64)."""
    task = tiny_task(kind)
    ours = task.build_model()
    twin = build_twin(task, ours).to(DEVICE)
    opt, sched, schedule = make_optimizer(ours, task.config)
    t_opt, t_sched = torch_optimizer(twin, task.config, schedule)
    stream = batch_stream(task.train_dataset(), task.config.batch_size, 0, task.train_batch)
    for step in range(4):
        _, (x, y), _ = task.batch_call(next(stream))
        loss = train_step(ours, opt, sched, ("__call__", (x, y), {}), task.config.grad_clip)[0]
        t_opt.zero_grad()
        t_loss = twin(torch.from_numpy(x).to(DEVICE), torch.from_numpy(y).to(DEVICE))[1]
        t_loss.backward()
        torch.nn.utils.clip_grad_norm_(twin.parameters(), task.config.grad_clip)
        t_opt.step()
        t_sched.step()
        assert abs(loss - t_loss.item()) <= 1e-12 * abs(t_loss.item())
        theirs = dict(twin.named_parameters())
        for name, p in ours.named_parameters():
            t = theirs[name].detach().cpu().numpy()
            assert np.abs(p._data - t).max() <= 1e-10 * np.abs(t).max(), (step, name)


@pytest.mark.parametrize("kind", NAME_BASELINES)
def test_compare_torch_loss_curves_agree(kind):
    """What --compare-torch runs: float64 curves within 1e-12, float32 within 1e-5 (the CLI's verdict
    bound is 1e-4)."""
    assert compare(tiny_task(kind), log=lambda *_: None)["max_rel_diff"] <= 1e-12
    assert compare(tiny_task(kind, dtype="float32"), log=lambda *_: None)["max_rel_diff"] <= 1e-5


@pytest.mark.parametrize("kind", NAME_BASELINES)
def test_interrupted_and_resumed_equals_uninterrupted(kind, tmp_path, corpus):
    cfg = GPTConfig(type=kind, steps=5, data=str(corpus), d_model=6, n_layers=2, block_size=8, batch_size=8,
                    eval_every=2, warmup_steps=2, progress=False, num_samples=0)
    full = fit(GPTTask(cfg), out=tmp_path / "full.safetensors", log=lambda *_: None)
    resumed = interrupted_then_resumed(GPTTask, cfg, 3, tmp_path / "run.safetensors")
    assert_same_run(full, resumed)


def run(argv, capsys):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("kind", NAME_BASELINES)
def test_cli_trains_resumes_and_samples(kind, tmp_path, corpus, capsys):
    ckpt = tmp_path / f"{kind}.safetensors"
    common = ["train", "names", "--type", kind, "--data", corpus, "--block-size", "8", "--d-model", "6",
              "--n-layers", "2", "--batch-size", "8", "--eval-every", "2", "--out", ckpt, "--no-progress"]
    code, out, err = run([*common, "--steps", "2", "--num-samples", "0"], capsys)
    assert code == 0, err
    first = load_history(ckpt)["loss"]
    assert f"model: {TYPES[kind]}," in out and "dev loss" in out
    code, out, err = run([*common, "--steps", "4", "--num-samples", "3", "--resume", ckpt], capsys)
    assert code == 0, err
    assert [line.split(":")[0].strip() for line in out.splitlines() if line.startswith("step")] == ["step      4/4"]
    assert len(out.split("generated names:")[1].strip().splitlines()) == 3
    model, _, info = load_gpt(ckpt)
    assert type(model).__name__ == TYPES[kind] and info["layout"] == "full" and info["config"]["type"] == kind
    assert load_history(ckpt)["loss"][:2] == first and len(first) == 2
    code, out, err = run(["sample", "--checkpoint", ckpt, "-n", "4", "--seed", "2", "--prefix", "Li", "--no-mark"],
                         capsys)
    assert code == 0, err
    header, *names = out.splitlines()
    assert header.endswith(f"(full layout, dev loss {info['metrics']['dev_loss']:.4f})")
    assert len(names) == 4 and all(n.startswith("li") and set(n) <= set("abcdefghijklmnopqrstuvwxyz")
                                   for n in names)


# ============================================================================ sizes, state dicts, errors

DEFAULT_PARAMETERS = {"transformer": 202_816, "rnn": 36_763, "gru": 103_323, "lstm": 136_603, "bow": 136_859,
                      "wavenet": 36_507}


@pytest.mark.parametrize("kind", DEFAULT_PARAMETERS)
def test_parameter_counts_at_the_default_size_are_the_readmes(kind):
    task = GPTTask(GPTConfig(type=kind), names=(NAMES, NAMES[:14], NAMES[14:17], NAMES[17:]))
    model = task.build_model()
    assert sum(p._data.size for p in model.parameters()) == DEFAULT_PARAMETERS[kind]
    twin = build_twin(task, model)
    assert sum(p.numel() for p in twin.parameters()) == DEFAULT_PARAMETERS[kind]


@pytest.mark.parametrize("kind", NAME_BASELINES)
def test_state_dict_round_trip_ours_torch_ours(kind):
    tg.manual_seed(0)
    ours = builder(kind, 11, 6, 4, 5, 2)(M)
    twin = builder(kind, 11, 6, 4, 5, 2)(R)
    assert list(ours.state_dict()) == list(twin.state_dict())
    twin.load_state_dict(ours.state_dict())
    back = builder(kind, 11, 6, 4, 5, 2)(M)
    back.load_state_dict(twin.state_dict())
    for k, v in ours.state_dict().items():
        assert np.array_equal(np.asarray(back.state_dict()[k]), np.asarray(v)), k


@pytest.mark.parametrize("lib", [M, R], ids=["ours", "reference"])
@pytest.mark.parametrize("build,fragment", [
    (lambda lib: lib.RecurrentLM(5, cell="transformer"), "cell must be one of ['gru', 'lstm', 'rnn'], got 'transformer'"),
    (lambda lib: lib.RecurrentLM(5, n_layers=0), "n_layers must be an integer >= 1, got 0"),
    (lambda lib: lib.BagOfWordsLM(5, hidden=0), "hidden must be an integer >= 1, got 0"),
    (lambda lib: lib.WaveNetLM(5, kernel_size=1), "kernel_size must be an integer >= 2, got 1"),
    (lambda lib: lib.WaveNetLM(5, d_model=2.5), "d_model must be an integer >= 1, got 2.5"),
])
def test_bad_arguments_name_the_argument_and_its_value(lib, build, fragment):
    with pytest.raises(ValueError, match=__import__("re").escape(fragment)):
        build(lib)


@pytest.mark.parametrize("lib", [M, R], ids=["ours", "reference"])
def test_bad_inputs(lib):
    make = tg.Tensor if lib is M else torch.tensor
    with pytest.raises(ValueError, match="Cannot forward sequence of length 7, block size is 6"):
        lib.BagOfWordsLM(5, block_size=6, d_model=2)(make(np.zeros((1, 7), dtype=np.int64)))
    for model in (lib.RecurrentLM(5, d_model=2, hidden=2), lib.WaveNetLM(5, d_model=2)):
        model(make(np.zeros((1, 40), dtype=np.int64)))       # any length: no position table
        with pytest.raises(ValueError, match="empty sequence"):
            model(make(np.zeros((1, 0), dtype=np.int64)))
        with pytest.raises(ValueError, match=r"\[0, vocab_size\)|vocab"):
            model(make(np.full((1, 3), 5, dtype=np.int64)))


@pytest.mark.parametrize("kind", NAME_BASELINES)
def test_zero_layers_fail_before_the_corpus_loads(kind, tmp_path, capsys):
    code, _, err = run(["train", "names", "--type", kind, "--n-layers", "0", "--data", tmp_path / "missing.txt"],
                       capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"--type {kind} needs --n-layers >= 1, got 0" in err and "file not found" not in err


def test_the_types_are_listed_in_the_readme():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    for kind in NAME_BASELINES:
        assert f"`{kind}`" in readme or f"`--type {kind}`" in readme, kind
    for n in DEFAULT_PARAMETERS.values():
        assert f"{n:,}" in readme, n
