"""The tutorial's own PyTorch code, run on tinygrad_tx with the word ``torch`` replaced.

The code blocks of ``../shared/seed/how-transformers-work.txt`` (sections 2–10) are extracted
as written, ``torch`` is replaced by ``tinygrad_tx`` (nothing else changes), and the blocks run
in order in one namespace — and, for comparison, unchanged on PyTorch itself. The checks: the
bigram probabilities equal PyTorch's; the dataset's batches are Tensors of the tutorial's shapes;
the tutorial's ``GPTLanguageModel`` matches PyTorch's run of the same code and the project's
``reference`` twin in float64 (outputs, every parameter gradient with a random cotangent, the
state_dict) and trains the same; ``generate`` runs with ``top_k``; the ViT patch projection runs.
The tutorial's text is read at test time and never copied into the project.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

import tinygrad_tx

TUTORIAL = Path(__file__).resolve().parents[2] / "shared" / "seed" / "how-transformers-work.txt"

pytestmark = [pytest.mark.skipif(not TUTORIAL.is_file(), reason=f"tutorial not found at {TUTORIAL}"),
              pytest.mark.cpu_only(reason="the tutorial's code runs on torch as written: its tensors are built on the CPU")]

# a line that opens (or continues at column 0) a Python block rather than prose
_CODE = re.compile(r"^(import |from \S+ import |class |def |@|# |print\(|for |if |with |[\)\]\}]"
                   r"|[A-Za-z_][\w.]*(\[[^\]]*\])?(\s*,\s*[A-Za-z_]\w*)*\s*(=|\+=|-=|\*=|/=)(?!=))")


def code_blocks(text: str) -> list[str]:
    """The tutorial's Python blocks: runs of code-like lines (blank and indented lines continue one)."""
    blocks, cur = [], []
    for line in text.splitlines():
        if cur and (not line.strip() or line[:1] in " \t" or _CODE.match(line)):
            cur.append(line)
            continue
        if cur:
            blocks.append("\n".join(cur).rstrip() + "\n")
            cur = []
        if _CODE.match(line):
            cur.append(line)
    if cur:
        blocks.append("\n".join(cur).rstrip() + "\n")
    return blocks


def on_engine(code: str) -> str:
    """The only change a learner makes: the word ``torch`` becomes ``tinygrad_tx``."""
    return re.sub(r"\btorch\b", "tinygrad_tx", code)


def run_blocks(blocks, engine: bool) -> dict:
    ns = {"__name__": "tutorial"}
    for block in blocks:
        exec(compile(on_engine(block) if engine else block, "<tutorial>", "exec"), ns)
    return ns


@pytest.fixture(scope="module")
def blocks():
    found = code_blocks(TUTORIAL.read_text(encoding="utf-8"))
    assert len(found) == 7, f"expected the tutorial's 7 code blocks, found {len(found)}"
    return found


@pytest.fixture(scope="module")
def runs(blocks):
    tinygrad_tx.manual_seed(0)
    torch.manual_seed(0)
    return run_blocks(blocks, engine=True), run_blocks(blocks, engine=False)


def test_every_block_runs_on_the_engine(runs):
    ours, theirs = runs
    for name in ("vocab", "bigram_probs", "dataset", "dataloader", "dense_vectors", "GPTLanguageModel",
                 "generate", "tokens"):
        assert name in ours and name in theirs, name


def test_bigram_probabilities_equal_pytorch(runs):
    ours, theirs = runs
    assert isinstance(ours["bigram_counts"], tinygrad_tx.Tensor)
    assert ours["bigram_counts"].dtype == tinygrad_tx.int32
    np.testing.assert_array_equal(ours["bigram_counts"].numpy(), theirs["bigram_counts"].numpy())
    assert ours["bigram_probs"].dtype == tinygrad_tx.float32
    np.testing.assert_allclose(ours["bigram_probs"].numpy(), theirs["bigram_probs"].numpy(), rtol=1e-6, atol=0)
    stoi = ours["stoi"]
    assert f"{ours['bigram_probs'][stoi['$'], stoi['a']]:.4f}" == f"{theirs['bigram_probs'][stoi['$'], stoi['a']]:.4f}"


def test_dataset_batches_are_tensors_of_the_tutorials_shapes(runs):
    ours, theirs = runs
    x, y = ours["sample_x"], ours["sample_y"]
    assert isinstance(x, tinygrad_tx.Tensor) and isinstance(y, tinygrad_tx.Tensor)
    assert x.shape == tuple(theirs["sample_x"].shape) == (4, 6)
    assert y.shape == tuple(theirs["sample_y"].shape) == (4,)
    assert x.dtype == tinygrad_tx.long and y.dtype == tinygrad_tx.long
    assert len(ours["dataset"]) == len(theirs["dataset"])
    np.testing.assert_array_equal(ours["dataset"].inputs.numpy(), theirs["dataset"].inputs.numpy())
    np.testing.assert_array_equal(ours["dataset"].targets.numpy(), theirs["dataset"].targets.numpy())
    assert sum(len(b[0]) for b in ours["dataloader"]) == len(ours["dataset"])


def test_embedding_and_patch_projection_shapes(runs):
    ours, theirs = runs
    assert ours["dense_vectors"].shape == tuple(theirs["dense_vectors"].shape) == (3, 3)
    assert ours["tokens"].shape == tuple(theirs["tokens"].shape) == (1, 196, 768)


def _params(model):
    return dict(model.named_parameters())


def _same_model(ours_cls, torch_cls, vocab_size, **config):
    """The tutorial's GPT on both engines in float64, with the same weights (ours copied to torch)."""
    tinygrad_tx.manual_seed(1)
    ours = ours_cls(vocab_size, **config).double()
    theirs = torch_cls(vocab_size, **config).double()
    theirs.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in ours.state_dict().items()})
    return ours, theirs


CONFIG = dict(d_model=16, n_heads=4, n_layers=2, block_size=8, dropout=0.0)


def _rel(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def test_gpt_matches_pytorch_and_the_reference_twin_in_float64(runs):
    from reference.gpt import GPTLanguageModel as Twin
    ours_ns, theirs_ns = runs
    vocab_size = ours_ns["vocab_size"]
    ours, theirs = _same_model(ours_ns["GPTLanguageModel"], theirs_ns["GPTLanguageModel"], vocab_size, **CONFIG)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    twin = Twin(vocab_size, **CONFIG).double()
    twin.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in ours.state_dict().items()})

    rng = np.random.default_rng(0)
    idx = rng.integers(0, vocab_size, size=(3, CONFIG["block_size"]))
    targets = rng.integers(0, vocab_size, size=(3, CONFIG["block_size"]))
    logits, loss = ours(tinygrad_tx.tensor(idx), tinygrad_tx.tensor(targets))
    g = rng.standard_normal(logits.shape)
    ((logits * tinygrad_tx.tensor(g)).sum() + loss).backward()  # cotangent g on logits, 1 on the loss

    for ref in (theirs, twin):
        t_logits, t_loss = ref(torch.tensor(idx), torch.tensor(targets))
        params = [p for _, p in ref.named_parameters()]
        grads = torch.autograd.grad([t_logits, t_loss], params, [torch.tensor(g), torch.ones((), dtype=torch.float64)])
        assert _rel(logits.detach().numpy(), t_logits.detach().numpy()) <= 1e-10
        assert abs(loss.item() - t_loss.item()) <= 1e-10 * abs(t_loss.item())
        ours_params = _params(ours)
        for (name, _), tg in zip(ref.named_parameters(), grads):
            assert torch.any(tg != 0), f"{name}: reference gradient is zero: the test is blind"
            assert _rel(ours_params[name].grad.numpy(), tg.numpy()) <= 1e-10, name
    for k, v in ours.state_dict().items():
        np.testing.assert_array_equal(np.asarray(v), theirs.state_dict()[k].numpy())


def test_gpt_trains_like_pytorch(runs):
    ours_ns, theirs_ns = runs
    vocab_size = ours_ns["vocab_size"]
    ours, theirs = _same_model(ours_ns["GPTLanguageModel"], theirs_ns["GPTLanguageModel"], vocab_size, **CONFIG)
    opt = tinygrad_tx.optim.AdamW(ours.parameters(), lr=3e-3)
    t_opt = torch.optim.AdamW(theirs.parameters(), lr=3e-3)
    data = ours_ns["dataset"]
    xs, ys = data.inputs.numpy(), data.targets.numpy()
    losses, t_losses = [], []
    for step in range(5):
        batch = slice(0, 8)   # one batch again and again: the loss must fall
        _, loss = ours(tinygrad_tx.tensor(xs[batch][:, -CONFIG["block_size"]:]), tinygrad_tx.tensor(ys[batch]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        _, t_loss = theirs(torch.tensor(xs[batch][:, -CONFIG["block_size"]:]), torch.tensor(ys[batch]))
        t_opt.zero_grad()
        t_loss.backward()
        t_opt.step()
        losses.append(loss.item())
        t_losses.append(t_loss.item())
    np.testing.assert_allclose(losses, t_losses, rtol=1e-10)
    assert losses[-1] < losses[0]


def test_generate_runs_with_top_k(runs):
    ours_ns, _ = runs
    vocab_size = ours_ns["vocab_size"]
    tinygrad_tx.manual_seed(2)
    model = ours_ns["GPTLanguageModel"](vocab_size, **CONFIG)
    prompt = tinygrad_tx.tensor([[ours_ns["stoi"]["$"]]], dtype=tinygrad_tx.long)
    out = ours_ns["generate"](model, prompt, max_new_tokens=12, top_k=5)
    assert isinstance(out, tinygrad_tx.Tensor) and out.dtype == tinygrad_tx.long
    assert out.shape[0] == 1 and 2 <= out.shape[1] <= 13
    assert out[0, 0].item() == ours_ns["stoi"]["$"]
    assert all(0 <= int(i) < vocab_size for i in out[0].tolist())
    assert not model.training   # generate() put the model in eval mode, as the tutorial's does
