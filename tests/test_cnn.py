"""The digits CNN of ``tinygrad-tx train vit --type cnn`` (``tinygrad_tx.models.cnn``) against its
PyTorch twin (``reference.cnn``), and PyTorch teaching code for small CNNs run on tinygrad_tx.

* parity (hypothesis): logits and loss, and the gradient of every parameter and of the images
  under a random cotangent, float64 within 1e-10 relative, float32 by the kit's rule
  (``check_model`` of tests/test_models.py);
* training: AdamW steps of the loop equal torch's step by step (float64, every parameter),
  ``--compare-torch`` agrees, a run interrupted and resumed equals the uninterrupted run bit for
  bit, the CLI trains and resumes; the parameter count at the default size (the README's);
* teaching code: ``tests/teaching_cnn/lenet5.py`` (LeNet-5, ``F.max_pool2d``/``F.relu``/``view``,
  SGD with momentum) and ``tests/teaching_cnn/cifar_cnn.py`` (conv-BN-ReLU(inplace)-pool blocks in
  ``nn.Sequential``, ``AdaptiveAvgPool2d``, ``Flatten``, ``Dropout``, Adam, ``CrossEntropyLoss``),
  each source executed twice -- as written and with ``torch`` meaning tinygrad_tx
  (``torch_shim.torch_as_tinygrad_tx``, what ``tinygrad-tx run`` does) -- from the same weights on
  the same batches: after 3 steps the losses, gradients and the whole state dict (BatchNorm's
  running statistics included) agree, float64 within 1e-10; in float32 both frameworks are
  measured against a float64 torch oracle on the same float32 start and ours may be at most
  ``F32_RATIO`` (4) times torch's worst relative error plus ``F32_FLOOR``, the kit's rule.
"""
from __future__ import annotations

import contextlib
import io
import runpy
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

import reference as R
import tinygrad_tx as tg
from reference.testing import DEVICE, F32_FLOOR, F32_RATIO, rel_err
from reference.train import compare, lockstep, torch_step
from test_models import check_model
from test_names_baselines import run
from test_resume import assert_same_run, interrupted_then_resumed
from tinygrad_tx import cli
from tinygrad_tx import models as M
from tinygrad_tx.testing.strategies import seeds
from tinygrad_tx.torch_shim import torch_as_tinygrad_tx
from tinygrad_tx.training import ViTConfig, ViTTask, fit
from tinygrad_tx.training.loop import train_step
from tinygrad_tx.training.saving import load_history, load_run

torch.set_num_threads(1)

TEACHING = Path(__file__).resolve().parent / "teaching_cnn"


# ============================================================================ parity

def active(images):
    """``prepare`` for check_model: conv biases made positive, and the draw kept only when no
    gradient (of the images or of a parameter) is all zero by a dead path: a blind comparison.
    Asking only that both pooled ReLU outputs have a positive entry was not enough: with one
    channel and a 1×1 final grid the whole gradient passes through the one conv1 window that the
    second pool picks, which may be dead while conv2's bias keeps the second pool positive (a
    fresh clone's dev draw: H=7, W=6, kernel=1, c1=c2=1, seed=3). The probe runs as the comparison
    does (eval mode, a generic cotangent); ``assume`` skips the rare draw that is still blind."""
    def prepare(model):
        for conv in (model.conv1, model.conv2):
            conv.bias._data[...] = np.abs(conv.bias._data) + 0.1
        was_training = model.training
        model.eval()
        x = tg.tensor(images.astype(model.conv1.weight._data.dtype), requires_grad=True)
        logits = model(x)[0]
        logits.backward(tg.tensor(np.random.default_rng(0).standard_normal(tuple(logits.shape)),
                                  dtype=logits.dtype))
        grads = [x.grad] + [p.grad for p in model.parameters()]
        blind = any(g is None or not np.any(g.numpy()) for g in grads)
        for p in model.parameters():
            p.grad = None
        model.train(was_training)
        assume(not blind)
    return prepare


@given(H=st.integers(4, 9), W=st.integers(4, 9), kernel=st.sampled_from([1, 3, 5]), c_in=st.integers(1, 2),
       c1=st.integers(1, 3), c2=st.integers(1, 3), classes=st.integers(2, 4), B=st.integers(1, 3),
       with_targets=st.booleans(), seed=seeds)
def test_cnn_parity_with_its_torch_twin(H, W, kernel, c_in, c1, c2, classes, B, with_targets, seed):
    """Logits (and loss) and the gradients of every parameter and of the images equal torch's:
    float64 within 1e-10, float32 by the kit's rule. Odd sizes exercise the pools' floor."""
    rng = np.random.default_rng(seed)
    images = rng.standard_normal((B, c_in, H, W))
    targets = (rng.integers(0, classes, B).astype(np.int64),) if with_targets else ()
    check_model("CNN", lambda lib, **kw: lib.CNN((H, W), c_in, classes, c1, c2, kernel, dropout=0.1),
                lambda m, *a: m(*a), (images,) + targets, seed, prepare=active(images))


# ============================================================================ training

def tiny_task(dtype="float64", **kw):
    cfg = ViTConfig(type="cnn", d_model=6, batch_size=8, dtype=dtype, dropout=0.0, steps=4, warmup_steps=2,
                    progress=False, eval_every=0, **kw)
    return ViTTask(cfg)


def test_adamw_steps_equal_torch_step_by_step():
    """The loop's own step (AdamW with weight decay on matrices, warmup/cosine, clipping) against
    torch's on the same augmented batches: every parameter within 1e-10 after every step (float64)."""
    task = tiny_task()
    ours, twin, (opt, sched), (t_opt, t_sched), stream = lockstep(task, DEVICE)
    for step in range(4):
        spec = task.batch_call(next(stream))
        loss = train_step(ours, opt, sched, spec, task.config.grad_clip)[0]
        t_loss = torch_step(twin, t_opt, t_sched, spec, torch.float64, task.config.grad_clip, DEVICE)
        assert abs(loss - t_loss) <= 1e-12 * abs(t_loss), step
        theirs = {n: p.detach().cpu().numpy() for n, p in twin.named_parameters()}
        errs = {n: rel_err(p._data, theirs[n]) for n, p in ours.named_parameters()}
        assert max(errs.values()) <= 1e-10, (step, errs)


def test_compare_torch_loss_curves_agree():
    """What --compare-torch runs: float64 curves within 1e-12, float32 within 1e-5 (the CLI's verdict
    bound is 1e-4)."""
    assert compare(tiny_task(), log=lambda *_: None)["max_rel_diff"] <= 1e-12
    assert compare(tiny_task(dtype="float32"), log=lambda *_: None)["max_rel_diff"] <= 1e-5


def test_interrupted_and_resumed_equals_uninterrupted(tmp_path):
    """Dropout and the random shifts on: the global generator and the augmentation's are restored."""
    cfg = ViTConfig(type="cnn", steps=5, d_model=4, batch_size=8, dropout=0.2, eval_every=2, warmup_steps=2,
                    progress=False)
    full = fit(ViTTask(cfg), out=tmp_path / "full.safetensors", log=lambda *_: None)
    resumed = interrupted_then_resumed(ViTTask, cfg, 3, tmp_path / "run.safetensors")
    assert_same_run(full, resumed)


def test_cli_trains_and_resumes(tmp_path, capsys):
    ckpt = tmp_path / "cnn.safetensors"
    common = ["train", "vit", "--type", "cnn", "--d-model", "4", "--batch-size", "8", "--eval-every", "2",
              "--out", ckpt, "--no-progress", "--threads", "1"]
    code, out, err = run([*common, "--steps", "2"], capsys)
    assert code == 0, err
    assert "model: CNN, 266 parameters (float32)" in out and "test accuracy" in out
    first = load_history(ckpt)["loss"]
    code, out, err = run([*common, "--steps", "4", "--resume", ckpt], capsys)
    assert code == 0, err
    assert f"resumed from {ckpt} at step 2/4" in out
    assert [line.split(":")[0] for line in out.splitlines() if line.startswith("step")] == ["step      4/4"]
    history = load_history(ckpt)
    assert history["loss"][:2] == first and len(history["loss"]) == 4
    model, info = load_run(ckpt)
    assert type(model).__name__ == "CNN" and info["config"]["type"] == "cnn"
    code, _, err = run([*common, "--steps", "4", "--resume", ckpt, "--d-model", "6"], capsys)
    assert code == 1 and "the checkpoint's model is vit: CNN(" in err


def test_parameter_count_at_the_default_size_is_the_readmes():
    """conv 1->32 (3x3): 320, conv 32->64: 18,496, head 64*2*2 -> 10: 2,570."""
    model = ViTTask(ViTConfig(type="cnn")).build_model()
    assert model.num_parameters() == 21_386 == sum(p.numel() for p in R.CNN(8, 1, 10).parameters())
    assert [n for n, _ in model.named_parameters()] == [n for n, _ in R.CNN(8, 1, 10).named_parameters()]


# ============================================================================ errors

@pytest.mark.parametrize("lib", [M, R], ids=["ours", "twin"])
def test_bad_arguments_are_named(lib):
    with pytest.raises(ValueError, match="kernel_size must be a positive odd int .* got 2"):
        lib.CNN(8, 1, 10, kernel_size=2)
    with pytest.raises(ValueError, match=r"image_size must be at least 4 x 4 .* got \(3, 8\)"):
        lib.CNN((3, 8), 1, 10)
    with pytest.raises(ValueError, match="conv1_channels must be a positive int, got 0"):
        lib.CNN(8, 1, 10, conv1_channels=0)
    model = lib.CNN(8, 1, 10)
    to = (lambda a: tg.tensor(a)) if lib is M else (lambda a: torch.from_numpy(a).to(DEVICE))
    if lib is R:
        model.to(DEVICE)
    with pytest.raises(ValueError, match=r"expected images of size \(8, 8\) \(the head's input size is fixed"):
        model(to(np.zeros((2, 1, 6, 8), dtype=np.float32)))
    with pytest.raises(ValueError, match=r"targets must have shape \(2,\), got \(3,\)"):
        model(to(np.zeros((2, 1, 8, 8), dtype=np.float32)), to(np.zeros(3, dtype=np.int64)))


def test_bad_type_is_a_command_line_error(capsys):
    code, _, err = run(["train", "vit", "--type", "resnet"], capsys)
    assert code == 2 and "invalid choice: 'resnet'" in err


# ============================================================================ teaching code

def namespaces(name):
    """The script's source executed as written (torch) and with ``torch`` meaning tinygrad_tx."""
    path = TEACHING / name
    code = compile(path.read_text(), str(path), "exec")
    theirs, ours = {"__name__": "teaching"}, {"__name__": "teaching"}
    exec(code, theirs)
    with torch_as_tinygrad_tx():
        exec(code, ours)
    assert ours["torch"].nn is tg.nn and theirs["torch"] is torch   # under the shim torch reads through to tinygrad_tx
    return ours, theirs


SCRIPTS = {   # script -> (build(namespace), image shape (N, C, H, W))
    "lenet5.py": (lambda ns: ns["LeNet5"](), (48, 1, 28, 28)),
    "cifar_cnn.py": (lambda ns: ns["Net"](dropout=0.0), (24, 3, 32, 32)),   # dropout masks differ by framework
}


def train_both(name, dtype, seed, steps=3):
    """Our model and torch's from the same weights (ours, drawn with ``seed``), the script's
    ``make_optimizer`` and ``train`` on the same images; returns ``(losses, state, grads)`` per side,
    as NumPy, keyed "ours", "torch" (torch in ``dtype``) and "oracle" (torch in float64 from the
    same ``dtype``-rounded start)."""
    ours_ns, theirs_ns = namespaces(name)
    build, shape = SCRIPTS[name]
    tg.manual_seed(seed)
    ours = build(ours_ns)
    start = {k: np.array(v) for k, v in ours.state_dict().items()}
    start = {k: v.astype(dtype) if v.dtype.kind == "f" else v for k, v in start.items()}
    rng = np.random.default_rng(seed)
    images = rng.standard_normal(shape).astype(dtype)
    labels = rng.integers(0, 10, shape[0]).astype(np.int64)
    out = {}
    for side, ns, dt in (("ours", ours_ns, dtype), ("torch", theirs_ns, dtype), ("oracle", theirs_ns, np.float64)):
        model = build(ns)
        if side == "ours":
            model.load_state_dict({k: tg.tensor(v) for k, v in start.items()})
            x, y = tg.tensor(images), tg.tensor(labels)
        else:
            model.to(DEVICE)
            model.load_state_dict({k: torch.from_numpy(v.astype(dt) if v.dtype.kind == "f" else v).to(DEVICE)
                                   for k, v in start.items()})
            x, y = torch.from_numpy(images.astype(dt)).to(DEVICE), torch.from_numpy(labels).to(DEVICE)
        if np.dtype(dt) == np.float64:
            model.double()
        losses = ns["train"](model, ns["make_optimizer"](model), x, y, steps)
        state = {k: (np.array(v) if side == "ours" else v.detach().cpu().numpy())
                 for k, v in model.state_dict().items()}
        grads = {n: (p.grad.numpy() if side == "ours" else p.grad.detach().cpu().numpy())
                 for n, p in model.named_parameters()}
        out[side] = (np.array(losses), state, grads)
    out["start"] = start
    group = ns["make_optimizer"](build(theirs_ns)).param_groups[0]
    out["weight_decay"], out["adam_eps"] = group["weight_decay"], group.get("eps")
    return out


def errors(result, ref):
    """Relative error (max |a - b| / max |b|) of the losses and of every state-dict entry and gradient."""
    (l_a, s_a, g_a), (l_b, s_b, g_b) = result, ref
    assert list(s_a) == list(s_b) and list(g_a) == list(g_b)
    errs = {"losses": rel_err(l_a, l_b)}
    errs.update({f"state {k}": rel_err(s_a[k], s_b[k]) for k in s_b if s_b[k].dtype.kind == "f"})
    errs.update({f"grad {k}": rel_err(g_a[k], g_b[k]) for k in g_b})
    for k in s_b:
        if s_b[k].dtype.kind != "f":        # BatchNorm's num_batches_tracked
            assert np.array_equal(s_a[k], s_b[k]), k
    return errs


@pytest.mark.parametrize("name", sorted(SCRIPTS))
@pytest.mark.parametrize("seed", [0, 1])
def test_teaching_cnn_trains_like_pytorch_float64(name, seed):
    result = train_both(name, np.float64, seed)
    for what, (_, _, grads) in (("ours", result["ours"]), ("torch", result["torch"])):
        assert all(np.any(g != 0) for g in grads.values()), f"{what}: a zero gradient makes the check blind"
    errs = errors(result["ours"], result["torch"])
    worst = max(errs, key=errs.get)
    assert errs[worst] <= 1e-10, (worst, errs[worst])


@pytest.mark.parametrize("name", sorted(SCRIPTS))
@pytest.mark.parametrize("seed", [0, 1])
def test_teaching_cnn_trains_like_pytorch_float32(name, seed):
    """One training step in float32 (forward, backward, the script's optimizer step) against the
    float64 oracle from the same float32 start: our worst relative error over the loss, the
    gradients and the new state at most F32_RATIO x torch float32's worst + F32_FLOOR.

    One step, because a float32 trajectory through Adam is ill-conditioned, for torch as for us:
    Adam's first update is lr * h / (|h| + eps) with h = g + weight_decay * w, and where g and
    weight_decay * w nearly cancel, |h| comes near eps (cifar_cnn seed 1: g = 1.4926e-05,
    weight_decay * w = -1.4878e-05, h = 4.8e-08 against eps 1e-08), so a gradient's float32
    rounding (1.0e-08 absolute there: 2e-7 of the tensor's largest) moves the update by 3 %
    (ours: w1 -0.0306103 against the oracle's -0.0305839; torch's own error there 4.6e-06). Later
    steps start from states that differ by that much. So the state check leaves out the elements
    whose update moves by more than 1/1000 when h moves by float32's epsilon times the gradient's
    largest element (d update / dh = eps / (|h| + eps)^2); the multi-step trajectories are checked
    in float64 (1e-10) above. SGD (lenet5) has no such element."""
    result = train_both(name, np.float32, seed, steps=1)
    assert all(v.dtype == np.float32 for v in result["ours"][1].values() if v.dtype.kind == "f")
    wd, eps, start, (_, _, g_oracle) = result["weight_decay"], result["adam_eps"], result["start"], result["oracle"]
    left_out = 0

    def conditioned(res):      # the state with Adam's ill-conditioned elements set to the oracle's
        nonlocal left_out
        losses, state, grads = res
        kept = dict(state)
        for k in g_oracle if eps is not None else ():
            h = g_oracle[k] + wd * start[k].astype(np.float64)
            bad = eps * np.finfo(np.float32).eps * np.abs(g_oracle[k]).max() / (np.abs(h) + eps) ** 2 > 1e-3
            kept[k] = np.where(bad, result["oracle"][1][k], state[k])
            left_out += int(bad.sum())
        return losses, kept, grads

    ours = errors(conditioned(result["ours"]), result["oracle"])
    theirs = errors(conditioned(result["torch"]), result["oracle"])
    worst = max(ours, key=ours.get)
    assert ours[worst] <= F32_RATIO * max(theirs.values()) + F32_FLOOR, (worst, ours[worst], max(theirs.values()))
    total = sum(v.size for k, v in g_oracle.items())
    assert left_out <= 2 * total // 1000, (left_out, total)   # a handful, not the comparison itself


@pytest.mark.cpu_only(reason="the teaching scripts as written build their tensors without a device")
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_teaching_script_runs_as_a_script_on_both(name, capsys):
    """``python SCRIPT`` and ``tinygrad-tx run SCRIPT``: the same lines (parameter count, one loss per
    epoch, an accuracy), the same parameter count; the numbers differ only by the frameworks' RNGs."""
    path = str(TEACHING / name)
    with contextlib.redirect_stdout(io.StringIO()) as theirs:
        runpy.run_path(path, run_name="__main__")
    assert cli.main(["run", path]) == 0
    ours = capsys.readouterr().out
    t_lines, o_lines = theirs.getvalue().splitlines(), ours.splitlines()
    assert [ln.split(":")[0] for ln in o_lines] == [ln.split(":")[0] for ln in t_lines]
    assert o_lines[0] == t_lines[0]                     # "... N parameters"


def test_relu_inplace_overwrites_its_input_like_torch():
    """``nn.ReLU(inplace=True)`` / ``F.relu(x, inplace=True)`` (teaching code's conv-BN-ReLU) modify
    their input and return it, with torch's gradient; a leaf that requires grad refuses, as torch's."""
    a = np.random.default_rng(0).standard_normal((2, 3))
    g = np.random.default_rng(1).standard_normal((2, 3))
    x = tg.tensor(a, requires_grad=True)
    y = x * 2.0
    out = tg.nn.ReLU(inplace=True)(y)
    assert out is y and np.array_equal(y.detach().numpy(), np.maximum(2 * a, 0))
    out.backward(tg.tensor(g))
    tx = torch.tensor(a, requires_grad=True, device=DEVICE)
    torch.nn.functional.relu(tx * 2.0, inplace=True).backward(torch.tensor(g, device=DEVICE))
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.cpu().numpy())
    leaf = tg.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        tg.nn.functional.relu(leaf, inplace=True)
    with pytest.raises(TypeError, match="inplace must be a bool, got 'yes'"):
        tg.nn.ReLU(inplace="yes")
    assert repr(tg.nn.ReLU(inplace=True)) == repr(torch.nn.ReLU(inplace=True).to(DEVICE)) == "ReLU(inplace=True)"
