"""``--resume``, checkpoints at every evaluation, and interrupted training (SIGINT/SIGTERM/SIGKILL).

The central property: a run interrupted at step k and resumed to step N equals the run that
went to N uninterrupted, bit for bit (every parameter and AdamW moment ``array_equal``, the
history equal), with dropout (the global generator), augmentation (the ViT's own generator)
and several epochs of the data order (a 20-name corpus: two batches per epoch) crossing the
interruption. A control shows the comparison can fail: resuming without the global
generator's state gives different weights.

The kill experiment (:func:`kill_experiment`) starts ``tinygrad-tx train gpt`` as a
subprocess, kills it at a random moment (SIGKILL, SIGINT or SIGTERM), resumes it when a
checkpoint exists (else starts again), and checks: the final checkpoint equals the
uninterrupted run's, no temporary file is left, and the history stored beside the checkpoint
agrees with its step (as read back by ``load_history``; the raw files are counted too). The
``ci`` profile runs one kill; ``python tests/test_resume.py 25`` runs 25 and prints the counts.
"""
from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tinygrad_tx import cli, generator
from tinygrad_tx.checkpoint import load_checkpoint
from tinygrad_tx.data import ArrayDataset, DataLoader
from tinygrad_tx.training import (EncoderConfig, EncoderTask, GPTConfig, GPTTask, Seq2SeqConfig, Seq2SeqTask,
                                  ViTConfig, ViTTask, fit, loop, signals)
from tinygrad_tx.training.loop import BatchStream
from tinygrad_tx.training.saving import best_path, history_path, load_history
from tinygrad_tx.training.signals import StopSignals, TrainingInterrupted

REPO = Path(__file__).resolve().parents[1]
NAMES = ["emma", "olivia", "ava", "isabella", "sophia", "charlotte", "mia", "amelia", "harper", "evelyn",
         "abigail", "emily", "liam", "noah", "oliver", "elijah", "james", "william", "benjamin", "lucas"]
TINY = dict(d_model=16, n_heads=2, n_layers=1, batch_size=8, progress=False, num_samples=0, warmup_steps=3)


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "names.txt"
    path.write_text("\n".join(NAMES) + "\n")
    return path


class StopAt:
    """A stand-in for the CLI's StopSignals that 'receives' SIGINT during step ``k``."""

    def __init__(self, k: int, signum=signal.SIGINT):
        self.k, self.checks, self.signum = k, 0, signum

    @property
    def requested(self) -> bool:
        self.checks += 1
        return self.checks >= self.k

    def during_steps(self):
        return contextlib.nullcontext()


def quiet(*_):
    pass


def arrays(path) -> dict:
    """Model and optimizer arrays of a checkpoint, by name."""
    state, opt, _ = load_checkpoint(path)
    out = dict(state)
    for i, entries in opt["state"].items():
        out.update({f"opt.{i}.{k}": np.asarray(v) for k, v in entries.items()})
    return out


def assert_same_run(a: dict, b: dict):
    assert a["history"] == b["history"]
    sa, sb = a["model"].state_dict(), b["model"].state_dict()
    assert list(sa) == list(sb)
    for k in sa:
        assert np.array_equal(sa[k], sb[k]), k
    oa, ob = a["optimizer"].state_dict()["state"], b["optimizer"].state_dict()["state"]
    for i in oa:
        for k, v in oa[i].items():
            assert np.array_equal(np.asarray(v), np.asarray(ob[i][k])), (i, k)


def interrupted_then_resumed(make_task, cfg, k, out):
    with pytest.raises(TrainingInterrupted) as e:
        fit(make_task(cfg), out=out, stop=StopAt(k), log=quiet)
    assert (e.value.step, e.value.steps, e.value.path) == (k, cfg.steps, out)
    assert int(load_checkpoint(out)[2]["step"]) == k
    return fit(make_task(cfg.replace(resume=str(out))), out=out, log=quiet)


# ---------------------------------------------------------------------------- bit for bit

@pytest.mark.parametrize("k", [1, 5, 8])       # 8: an evaluation step (saved once, not twice)
def test_gpt_interrupted_and_resumed_equals_uninterrupted(tmp_path, corpus, k):
    cfg = GPTConfig(steps=11, data=str(corpus), dropout=0.2, eval_every=4, **TINY)
    full = fit(GPTTask(cfg), out=tmp_path / "full.safetensors", log=quiet)
    resumed = interrupted_then_resumed(GPTTask, cfg, k, tmp_path / "run.safetensors")
    assert_same_run(full, resumed)
    assert arrays(tmp_path / "full.safetensors").keys() == arrays(tmp_path / "run.safetensors").keys()


@pytest.mark.parametrize("kind", ["vit", "encoder", "seq2seq"])
def test_every_task_of_the_loop_resumes_exactly(tmp_path, kind):
    """The ViT's augmentation draws from its task's own generator: restored too."""
    common = dict(steps=5, d_model=16, n_heads=2, n_layers=1, batch_size=8, progress=False, eval_every=0,
                  dropout=0.1, warmup_steps=1)
    cfg, make_task = {"vit": (ViTConfig(augment=True, **common), ViTTask),
                      "encoder": (EncoderConfig(**common), EncoderTask),
                      "seq2seq": (Seq2SeqConfig(num_examples=60, **common), Seq2SeqTask)}[kind]
    if kind == "vit":
        assert list(make_task(cfg).rngs()) == ["rng"]
    full = fit(make_task(cfg), log=quiet)
    resumed = interrupted_then_resumed(make_task, cfg, 2, tmp_path / f"{kind}.safetensors")
    assert_same_run(full, resumed)


def test_control_resuming_without_the_global_generator_differs(tmp_path, corpus, monkeypatch):
    """The comparison above can fail: drop the global generator's restore and dropout draws other masks."""
    cfg = GPTConfig(steps=6, data=str(corpus), dropout=0.2, eval_every=0, **TINY)
    full = fit(GPTTask(cfg), log=quiet)
    monkeypatch.setattr(loop, "set_rng_state", lambda state: None)
    generator.manual_seed(12345)
    resumed = interrupted_then_resumed(GPTTask, cfg, 3, tmp_path / "run.safetensors")
    assert full["history"]["loss"][:3] == resumed["history"]["loss"][:3]
    assert full["history"]["loss"][3:] != resumed["history"]["loss"][3:]


def test_batch_stream_resumes_at_any_position_across_epochs():
    data = ArrayDataset(np.arange(21)[:, None])
    reference = DataLoader(data, batch_size=4, shuffle=True, seed=3, drop_last=True)
    expected = [b[0][:, 0].tolist() for _ in range(4) for b in reference]     # 4 epochs of 5 batches
    for k in (0, 1, 5, 7, 10):
        first = BatchStream(data, 4, seed=3)
        got = [next(first)[0][:, 0].tolist() for _ in range(k)]
        state = json.loads(json.dumps(first.state_dict()))
        second = BatchStream(data, 4, seed=99)                 # another seed: the state decides
        second.load_state_dict(state)
        got += [next(second)[0][:, 0].tolist() for _ in range(len(expected) - k)]
        assert got == expected, k


def test_resume_with_more_steps_continues_the_finished_run(tmp_path, corpus):
    out = tmp_path / "m.safetensors"
    cfg = GPTConfig(steps=4, data=str(corpus), dropout=0.0, eval_every=2, **TINY)
    first = fit(GPTTask(cfg), out=out, log=quiet)
    more = fit(GPTTask(cfg.replace(steps=7, resume=str(out))), out=out, log=quiet)
    assert more["history"]["step"] == list(range(1, 8))
    assert more["history"]["loss"][:4] == first["history"]["loss"]
    assert [e["step"] for e in more["history"]["evals"]] == [2, 4, 6, 7]
    assert load_checkpoint(out)[2]["step"] == "7"


def test_resume_refuses_another_model_a_past_step_and_a_plain_checkpoint(tmp_path, corpus):
    out = tmp_path / "m.safetensors"
    cfg = GPTConfig(steps=4, data=str(corpus), eval_every=0, **TINY)
    fit(GPTTask(cfg), out=out, log=quiet)
    with pytest.raises(ValueError, match=r"model is gpt: GPTLanguageModel\(.*d_model=16.*this run's is .*d_model=8"):
        fit(GPTTask(cfg.replace(d_model=8, resume=str(out))), log=quiet)
    with pytest.raises(ValueError, match="checkpoint is at step 4, past --steps 3"):
        fit(GPTTask(cfg.replace(steps=3, resume=str(out))), log=quiet)
    from tinygrad_tx.checkpoint import save_checkpoint
    save_checkpoint(tmp_path / "plain.safetensors", {"w": np.zeros(2)})
    with pytest.raises(ValueError, match="not a tinygrad-tx training checkpoint"):
        fit(GPTTask(cfg.replace(resume=str(tmp_path / "plain.safetensors"))), log=quiet)


def test_checkpoint_at_every_evaluation_and_best_by_dev_loss(tmp_path, corpus):
    out = tmp_path / "m.safetensors"
    cfg = GPTConfig(steps=9, data=str(corpus), eval_every=3, lr=3e-2, **TINY)
    seen = []
    real_save = loop.RunFiles.save

    def record(self, *args, **kw):
        real_save(self, *args, **kw)
        seen.append((load_checkpoint(out)[2]["step"], args[6] if len(args) > 6 else kw.get("best", False)))
    loop.RunFiles.save = record
    try:
        run = fit(GPTTask(cfg), out=out, log=quiet)
    finally:
        loop.RunFiles.save = real_save
    evals = run["history"]["evals"]
    assert [s for s, _ in seen] == ["3", "6", "9"]
    losses = [e["dev_loss"] for e in evals]
    best_step = evals[int(np.argmin(losses))]["step"]
    _, _, meta = load_checkpoint(best_path(out))
    assert best_path(out).name == "m.best.safetensors" and meta["step"] == str(best_step)
    assert [b for _, b in seen] == [losses[i] < min(losses[:i], default=np.inf) for i in range(3)]


# ---------------------------------------------------------------------------- signals, in-process

def cli_argv(corpus, out, steps=12, extra=()):
    return ["train", "gpt", "--data", str(corpus), "--steps", str(steps), "--d-model", "16", "--n-heads", "2",
            "--n-layers", "1", "--batch-size", "8", "--eval-every", "5", "--no-progress", "--num-samples", "0",
            "--warmup-steps", "3", "--out", str(out), *extra]


@pytest.fixture()
def interactive_sigint():
    """pytest started as a shell's background job (or under nohup) inherits an ignored SIGINT, and
    StopSignals keeps an ignored signal ignored (test_stop_signals_keep_an_ignored_signal_ignored),
    so an in-process SIGINT test would see no stop: these tests want the interactive case, Python's
    own SIGINT handler, whatever the harness left."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("interactive_sigint")
@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_during_training_saves_and_prints_the_resume_command(tmp_path, corpus, capsys, monkeypatch, signum,
                                                                     status):
    before = {s: signal.getsignal(s) for s in signals.STOP_SIGNALS}
    real_step = loop.train_step
    calls = []

    def step_then_signal(*args, **kw):
        calls.append(1)
        result = real_step(*args, **kw)
        if len(calls) == 3:
            os.kill(os.getpid(), signum)      # arrives in the middle of the run, handled at once
        return result
    monkeypatch.setattr(loop, "train_step", step_then_signal)
    out = tmp_path / "m.safetensors"
    argv = cli_argv(corpus, out)
    assert cli.main(argv) == status
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0]
    name = signal.Signals(signum).name
    command = f"tinygrad-tx {' '.join(argv)} --resume {out}"
    assert err[0] == f"tinygrad-tx: interrupted ({name}) at step 3/12; checkpoint: {out}; resume with: {command}"
    assert {s: signal.getsignal(s) for s in signals.STOP_SIGNALS} == before
    assert load_checkpoint(out)[2]["step"] == "3"

    monkeypatch.setattr(loop, "train_step", real_step)
    assert cli.main(command.split()[1:]) == 0
    capsys.readouterr()
    resumed = arrays(out)
    assert cli.main(cli_argv(corpus, tmp_path / "full.safetensors")) == 0
    full = arrays(tmp_path / "full.safetensors")
    assert resumed.keys() == full.keys() and all(np.array_equal(resumed[k], full[k]) for k in full)
    assert load_history(out) == load_history(tmp_path / "full.safetensors")


@pytest.mark.usefixtures("interactive_sigint")
def test_sigint_during_start_up_is_one_line_and_130(tmp_path, corpus, capsys, monkeypatch):
    from tinygrad_tx.training import gpt
    real_init = gpt.GPTTask.__init__

    def init_then_sigint(self, *a, **kw):
        real_init(self, *a, **kw)
        os.kill(os.getpid(), signal.SIGINT)
    monkeypatch.setattr(gpt.GPTTask, "__init__", init_then_sigint)
    assert cli.main(cli_argv(corpus, tmp_path / "m.safetensors")) == 130
    assert capsys.readouterr().err == "tinygrad-tx: interrupted (SIGINT)\n"
    assert not (tmp_path / "m.safetensors").exists()


def test_in_process_sigint_tests_pass_when_the_harness_ignores_sigint():
    """Regression: run as a background job (SIGINT ignored), the two in-process SIGINT tests
    failed (training ran to the end, status 0 instead of 130)."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           f"{__file__}::test_sigint_during_start_up_is_one_line_and_130"],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert proc.returncode == 0, proc.stdout[-2000:]


def test_library_fit_installs_no_handlers(corpus):
    before = {s: signal.getsignal(s) for s in signals.STOP_SIGNALS}
    seen = []
    real = loop.train_step

    def spy(*a, **kw):
        seen.append({s: signal.getsignal(s) for s in signals.STOP_SIGNALS})
        return real(*a, **kw)
    loop.train_step = spy
    try:
        fit(GPTTask(GPTConfig(steps=2, data=str(corpus), eval_every=0, **TINY)), log=quiet)
    finally:
        loop.train_step = real
    assert seen == [before, before] and signals.current() is None


def test_stop_signals_keep_an_ignored_signal_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with StopSignals():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_IGN, signal.SIG_DFL)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


# ---------------------------------------------------------------------------- the kill experiment

KILL_ARGS = ["train", "gpt", "--steps", "40", "--d-model", "16", "--n-heads", "2", "--n-layers", "1",
             "--batch-size", "8", "--eval-every", "4", "--dropout", "0.1", "--no-progress", "--num-samples", "0"]


def _cli(args, **kw):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-m", "tinygrad_tx_launch", *map(str, args)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_default_signals, **kw)


def _default_signals():
    """A shell's background job (or nohup) ignores SIGINT, and the child would inherit that: the
    experiment wants the interactive case, so the child starts with the default dispositions."""
    for s in signals.STOP_SIGNALS:
        signal.signal(s, signal.SIG_DFL)


def _temps(directory) -> list[str]:
    """Temporary files of any kind: ours (.<name>.tmp-<pid>, .probe-), safetensors' save_file's (.tmpXXXXXX)."""
    return sorted(p for p in os.listdir(directory) if ".tmp" in p or ".probe-" in p)


def _history_agrees(path) -> bool:
    """The raw ``<stem>.history.json`` ends at the checkpoint's step."""
    step = int(load_checkpoint(path)[2]["step"])
    try:
        return json.loads(history_path(path).read_text())["step"][-1] == step
    except (OSError, ValueError, IndexError, KeyError):
        return False


def kill_experiment(n: int, workdir: Path, seed: int = 0) -> dict:
    """Kill ``n`` runs at random moments, resume each; returns the counts (see the module docstring)."""
    rnd = random.Random(seed)
    ref = workdir / "reference" / "m.safetensors"
    t0 = time.perf_counter()
    assert _cli(KILL_ARGS + ["--data", workdir / "names.txt", "--out", ref]).wait() == 0
    duration = time.perf_counter() - t0
    expected = arrays(ref)
    expected_history = load_history(ref)
    counts = {"runs": n, "by_signal": {}, "checkpoint_at_kill": 0, "temps_after_kill": 0,
              "raw_history_disagreed_after_kill": 0, "history_disagreed_after_load": 0, "resumed_equal": 0,
              "temps_after_resume": 0, "exit_status_ok": 0, "ended_during_import": 0, "statuses": {}}
    for i in range(n):
        signum = rnd.choice([signal.SIGKILL, signal.SIGKILL, signal.SIGINT, signal.SIGTERM])
        name = signal.Signals(signum).name
        counts["by_signal"][name] = counts["by_signal"].get(name, 0) + 1
        out = workdir / f"run{i}" / "m.safetensors"
        args = KILL_ARGS + ["--data", workdir / "names.txt", "--out", out]
        proc = _cli(args)
        time.sleep(rnd.uniform(0.2, duration))
        proc.send_signal(signum)
        _, err = proc.communicate()
        status = proc.returncode
        key = f"{name} -> {status}"
        counts["statuses"][key] = counts["statuses"].get(key, 0) + 1
        # 0: the run had finished; 128 + signal: the CLI's own exit; -signal: the signal's default
        # action, only before the launcher installs its handlers -- while `import tinygrad_tx` runs
        # (SIGINT then prints Python's KeyboardInterrupt) or, on a loaded machine, while the
        # interpreter itself still starts, before Python has a SIGINT handler (no output at all)
        before_main = status == -signum and (signum != signal.SIGINT or b"KeyboardInterrupt" in err
                                             or not err.strip()) \
            or status == 1 and signum == signal.SIGINT and b"init_import_site" in err
        # (the last: Python's own startup, importing `site`, met the Ctrl-C: it exits 1 with
        # "Fatal Python error: init_import_site" before any code of the command exists)
        counts["ended_during_import"] += before_main and signum != signal.SIGKILL
        counts["exit_status_ok"] += status in (0, -9 if signum == signal.SIGKILL else 128 + signum) or before_main
        if out.parent.exists():
            counts["temps_after_kill"] += bool(_temps(out.parent))
        resume = []
        if out.exists():
            counts["checkpoint_at_kill"] += 1
            counts["raw_history_disagreed_after_kill"] += not _history_agrees(out)
            history = load_history(out)
            counts["history_disagreed_after_load"] += history["step"][-1] != int(load_checkpoint(out)[2]["step"])
            resume = ["--resume", out]
        assert _cli(args + resume).wait() == 0, err
        got = arrays(out)
        counts["resumed_equal"] += got.keys() == expected.keys() and all(
            np.array_equal(got[k], expected[k]) for k in expected) and load_history(out) == expected_history
        counts["temps_after_resume"] += bool(_temps(out.parent))
    return counts


def test_kill_experiment(tmp_path):
    (tmp_path / "names.txt").write_text("\n".join(NAMES) + "\n")
    n = int(os.environ.get("TINYGRAD_TX_KILLS", "1" if os.environ.get("CI") else "3"))
    counts = kill_experiment(n, tmp_path, seed=n)
    assert counts["resumed_equal"] == n, counts
    assert counts["temps_after_resume"] == 0, counts
    assert counts["history_disagreed_after_load"] == 0, counts
    assert counts["exit_status_ok"] == n, counts


if __name__ == "__main__":      # python tests/test_resume.py 25
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "names.txt").write_text("\n".join(NAMES) + "\n")
        print(json.dumps(kill_experiment(int(sys.argv[1]) if len(sys.argv) > 1 else 25, Path(d)), indent=1))
