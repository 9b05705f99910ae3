"""``tinygrad-tx train ... --compile``: the training step (zero_grad, forward, backward, clip,
AdamW step) recorded once by ``tinygrad_tx.compile`` (``fuse=True`` where the C kernels run) and
replayed. Tiny models (the sizes of tests/test_cli.py and tests/test_resume.py): the losses equal
eager's within the float32 rule (our error against a float64 oracle within torch-style bounds of
eager float32's), float64 to 1e-10; every step after the recordings is a replay; a resumed
compiled run equals the uninterrupted one bit for bit; a model compile refuses warns once and
trains eagerly; the flag is in --help."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from tinygrad_tx import cli, kernels
from tinygrad_tx.compile import CompileWarning
from tinygrad_tx.testing.compare import check_f32, rel_err
from tinygrad_tx.training import EncoderConfig, EncoderTask, GPTConfig, GPTTask, ViTConfig, ViTTask, fit, loop
from tinygrad_tx.training.saving import load_history
from tinygrad_tx.training.signals import TrainingInterrupted
from test_resume import StopAt, quiet

needs_cc = pytest.mark.skipif(not kernels.mode().startswith("c ("), reason="C kernels off (no compiler)")

NAMES = ["emma", "olivia", "ava", "isabella", "sophia", "charlotte", "mia", "amelia", "harper", "evelyn",
         "abigail", "emily", "liam", "noah", "oliver", "elijah", "james", "william", "benjamin", "lucas"]
TINY = dict(d_model=16, n_heads=2, n_layers=1, batch_size=8, progress=False, num_samples=0, warmup_steps=3)
TINY_ARGS = ["--d-model", "16", "--n-heads", "2", "--n-layers", "1", "--batch-size", "8", "--no-progress",
             "--num-samples", "0", "--warmup-steps", "3"]


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "names.txt"
    path.write_text("\n".join(NAMES) + "\n")
    return path


@pytest.fixture()
def steps_made(monkeypatch):
    """The CompiledStep objects the loop makes (to see what ran: programs, replays)."""
    made = []

    class Spy(loop.CompiledStep):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(loop, "CompiledStep", Spy)
    return made


def losses(run) -> np.ndarray:
    return np.array(run["history"]["loss"])


def programs(step) -> int:
    return sum(len(v) for fn in step.functions.values() for v in fn.programs.values())


# ---------------------------------------------------------------------------- the command line

def test_compile_flag_is_in_train_help(capsys):
    for kind in ("gpt", "vit", "encoder", "seq2seq"):
        assert cli.main(["train", kind, "--help"]) == 0
        out = capsys.readouterr().out
        assert "--compile" in out and "tinygrad_tx.compile" in out, kind
    assert cli.main(["train", "bigram", "--help"]) == 0      # the count model has no gradient step
    assert "--compile" not in capsys.readouterr().out


def test_compile_with_compare_torch_is_a_one_line_error(capsys):
    code = cli.main(["train", "gpt", "--compile", "--compare-torch", "--steps", "1"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "--compile does not combine with --compare-torch" in err


@needs_cc
def test_train_gpt_compile_gives_eagers_losses(tmp_path, corpus, capsys, steps_made):
    """``train gpt --compile`` (dropout 0.1, an evaluation in the middle) against the same command
    without it: the loss and gradient-norm curves agree to float32 rounding (measured: bit-equal,
    the fused chains compute eager's own operations in its order), and after the first step of each
    batch shape every step ran the recorded, fused program."""
    common = ["train", "gpt", "--data", corpus, "--steps", "8", "--dropout", "0.1", "--eval-every", "4", *TINY_ARGS]
    histories = {}
    for flag in ([], ["--compile"]):
        out = tmp_path / f"run{len(flag)}.safetensors"
        with warnings.catch_warnings():
            warnings.simplefilter("error", CompileWarning)
            assert cli.main([str(a) for a in common + ["--out", out, *flag]]) == 0
        printed = capsys.readouterr().out
        assert ("--compile: the training step runs as compile(fuse=True): fused C kernels" in printed) == bool(flag)
        histories[bool(flag)] = load_history(out)
    eager, compiled = histories[False], histories[True]
    assert compiled["step"] == eager["step"] == list(range(1, 9))
    assert rel_err(np.array(compiled["loss"]), np.array(eager["loss"])) <= 1e-5
    assert rel_err(np.array(compiled["grad_norm"]), np.array(eager["grad_norm"])) <= 1e-5
    assert [e["step"] for e in compiled["evals"]] == [4, 8]
    (step,) = steps_made
    fn = step.functions["__call__"]
    assert fn.eager_reason is None and "fused" in fn.code and fn.kernels
    assert step.replays == 8                  # every step a replay: a recording call is undone and replayed
    assert 1 <= programs(step) <= 8           # one program per batch width


def _gpt_runs(corpus, dtype, compile_, dropout=0.0, steps=6):
    cfg = GPTConfig(steps=steps, data=str(corpus), dropout=dropout, eval_every=0, dtype=dtype, compile=compile_,
                    **TINY)
    return fit(GPTTask(cfg), log=quiet)


@needs_cc
def test_compiled_float32_within_the_float32_rule_and_float64_to_1e10(corpus, steps_made):
    """The oracle: the eager float64 run from the same initial weights and batches. The compiled
    float32 run's losses and final parameters are within the kit's float32 rule of eager
    float32's error against it; compiled float64 equals eager float64 to 1e-10."""
    oracle = _gpt_runs(corpus, "float64", False)
    eager32, ours32 = _gpt_runs(corpus, "float32", False), _gpt_runs(corpus, "float32", True)
    check_f32("losses", rel_err(losses(ours32), losses(oracle)), rel_err(losses(eager32), losses(oracle)))
    params = [dict(r["model"].named_parameters()) for r in (oracle, eager32, ours32)]
    for name, p in params[0].items():
        check_f32(name, rel_err(params[2][name]._data, p._data), rel_err(params[1][name]._data, p._data))
    ours64 = _gpt_runs(corpus, "float64", True)
    assert rel_err(losses(ours64), losses(oracle)) <= 1e-10
    for name, p in ours64["model"].named_parameters():
        assert np.abs(params[0][name]._data).max() > 0
        assert rel_err(p._data, params[0][name]._data) <= 1e-10
    assert [s.fuse for s in steps_made] == [True, True] and all(s.replays == 6 for s in steps_made)


def test_without_kernels_compile_replays_bit_identical_to_eager(corpus, monkeypatch, steps_made):
    """TINYGRAD_TX_KERNELS=0: plain compile (no fuse), whose replays are eager's own steps."""
    try:
        monkeypatch.setenv("TINYGRAD_TX_KERNELS", "0")
        kernels.reset()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            eager, ours = _gpt_runs(corpus, "float32", False, 0.1), _gpt_runs(corpus, "float32", True, 0.1)
        (step,) = steps_made
        assert not step.fuse and step.mode == "compile: replay (no C kernels)" and step.replays == 6
        assert "fused" not in step.functions["__call__"].code
        assert eager["history"] == ours["history"]
        for (name, a), b in zip(eager["model"].named_parameters(), ours["model"].parameters()):
            assert np.array_equal(a._data, b._data), name
    finally:
        monkeypatch.undo()
        kernels.reset()


@needs_cc
def test_vit_compiles_too(steps_made):
    common = dict(steps=4, d_model=16, n_heads=2, n_layers=1, batch_size=8, progress=False, eval_every=0,
                  dropout=0.1, warmup_steps=1, augment=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        ours = fit(ViTTask(ViTConfig(compile=True, **common)), log=quiet)
    eager = fit(ViTTask(ViTConfig(**common)), log=quiet)
    assert rel_err(losses(ours), losses(eager)) <= 1e-5
    (step,) = steps_made
    assert step.replays == 4 and "fused" in step.functions["__call__"].code


@pytest.mark.parametrize("make", [
    lambda corpus: GPTTask(GPTConfig(type="lstm", steps=5, data=str(corpus), eval_every=0, **TINY)),
    lambda corpus: EncoderTask(EncoderConfig(steps=5, d_model=16, n_heads=2, n_layers=1, batch_size=8,
                                             progress=False, eval_every=0, warmup_steps=1)),
], ids=["gpt-lstm", "encoder"])
def test_a_model_compile_refuses_warns_once_and_trains_eagerly(corpus, make, steps_made):
    """The recurrent baselines (their initial state is a tensor made from a NumPy array inside
    the step) and the encoder (its padding mask's size is read into Python): one CompileWarning
    naming why, and the run is the eager run, bit for bit."""
    eager = fit(make(corpus), log=quiet)
    task = make(corpus)
    task.config = task.config.replace(compile=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = fit(task, log=quiet)
    compile_warnings = [w for w in caught if issubclass(w.category, CompileWarning)]
    assert len(compile_warnings) == 1, [str(w.message) for w in caught]
    message = str(compile_warnings[0].message)
    assert message.startswith(f"tinygrad_tx.compile: the training step of {type(ours['model']).__name__} runs "
                              "eagerly: "), message
    assert eager["history"] == ours["history"]
    (step,) = steps_made
    assert step.replays == 0 and programs(step) == 0


# ---------------------------------------------------------------------------- resume

@needs_cc
@pytest.mark.parametrize("k", [2, 5])
def test_compiled_run_interrupted_and_resumed_equals_uninterrupted(tmp_path, corpus, k, steps_made):
    """With --compile (dropout 0.2: the masks are drawn by the replay from the restored generator),
    a run stopped at step k and resumed in a fresh loop -- which records its programs anew --
    equals the uninterrupted compiled run bit for bit: model, AdamW state, history."""
    cfg = GPTConfig(steps=9, data=str(corpus), dropout=0.2, eval_every=4, compile=True, **TINY)
    full = fit(GPTTask(cfg), out=tmp_path / "full.safetensors", log=quiet)
    out = tmp_path / "run.safetensors"
    with pytest.raises(TrainingInterrupted):
        fit(GPTTask(cfg), out=out, stop=StopAt(k), log=quiet)
    resumed = fit(GPTTask(cfg.replace(resume=str(out))), out=out, log=quiet)
    assert full["history"] == resumed["history"]
    for (name, a), b in zip(full["model"].named_parameters(), resumed["model"].parameters()):
        assert np.array_equal(a._data, b._data), name
    sa, sb = full["optimizer"].state_dict()["state"], resumed["optimizer"].state_dict()["state"]
    for i in sa:
        for key, v in sa[i].items():
            assert np.array_equal(np.asarray(v), np.asarray(sb[i][key])), (i, key)
    assert [s.replays for s in steps_made] == [9, k, 9 - k]


@needs_cc
@pytest.mark.parametrize("undo", [True, False])
def test_control_a_recording_step_is_undone_and_replayed(tmp_path, corpus, monkeypatch, undo):
    """Why the recording call is undone: where a replay differs from eager in the last bits
    (simulated: each replayed step nudges a weight by one ulp; here the fused chains happen to
    agree with eager bit for bit), a resumed run -- whose step k+1 records anew -- equals the
    uninterrupted one only because that recording is undone and the step replayed. Without
    the undo it differs, so the test above can fail."""
    class Nudged(loop.CompiledStep):
        def run(self, method, args, kwargs):
            replays = self.replays
            result = super().run(method, args, kwargs)
            if self.replays > replays:
                w = next(iter(self.model.parameters()))._data
                w[...] = np.nextafter(w, np.inf)
            return result

    if not undo:
        monkeypatch.setattr(Nudged, "_save", lambda self: None)
    monkeypatch.setattr(loop, "CompiledStep", Nudged)
    cfg = GPTConfig(steps=8, data=str(corpus), dropout=0.0, eval_every=0, compile=True, **TINY)
    full = fit(GPTTask(cfg), log=quiet)
    out = tmp_path / "run.safetensors"
    with pytest.raises(TrainingInterrupted):
        fit(GPTTask(cfg), out=out, stop=StopAt(4), log=quiet)
    resumed = fit(GPTTask(cfg.replace(resume=str(out))), out=out, log=quiet)
    assert (full["history"]["loss"] == resumed["history"]["loss"]) == undo
