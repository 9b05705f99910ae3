"""The section-1 experiments (``tinygrad_tx/training/experiments.py``) at a tiny size: the shapes of
what they return and the mathematical facts that must hold whatever the machine: the critical
path of an RNN grows by a fixed number of ops per step while the Transformer's and the dilated
CNN's do not depend on T, and the gradient of a causal model's loss at position p with respect
to any later input is exactly zero. No timing is asserted. The run on names.txt skips when
``../shared/data/names.txt`` is absent."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tinygrad_tx as tg
from tinygrad_tx.training import experiments as ex

NAMES_TXT = Path(__file__).resolve().parents[2] / "shared" / "data" / "names.txt"


def test_critical_path_counts_the_longest_chain():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    w = tg.tensor([3.0, 4.0], requires_grad=True)
    y = ((x * 2 + 1) * w).sum()          # mul, add, mul, sum on the longest chain; w joins at the third
    assert ex.critical_path(y) == 4
    assert ex.critical_path(x) == 0      # a leaf: no op


def test_sequence_cost_shapes_and_critical_paths():
    lengths = [4, 8, 12]
    result = ex.sequence_cost(lengths=lengths, batch=2, repeats=1)
    assert result["kinds"] == list(ex.SIZES) and result["lengths"] == lengths
    for k in ex.SIZES:
        for key in ("wall", "cpu", "ops", "path"):
            assert len(result[key][k]) == len(lengths)
        assert all(t > 0 for t in result["wall"][k])
        assert 30_000 < result["params"][k] < 50_000            # comparable sizes
    for k in ("rnn", "lstm"):                                   # sequential over T: a fixed cost per step
        p = result["path"][k]
        assert p[1] - p[0] == p[2] - p[1] > 0
        assert result["ops"][k][2] > result["ops"][k][1] > result["ops"][k][0]
    for k in ("transformer", "wavenet"):                       # parallel over T: the same graph at every T
        assert len(set(result["path"][k])) == 1 and len(set(result["ops"][k])) == 1
    table = ex.cost_table(result)
    assert table.count("\n") == 2 + len(lengths) + 4 and "critical path (ops)" in table


@pytest.mark.parametrize("kind", list(ex.SIZES))
def test_gradient_after_the_scored_position_is_exactly_zero(kind):
    model = ex.build_model(kind, block_size=8)
    rng = np.random.default_rng(0)
    ids, targets = rng.integers(0, ex.VOCAB_SIZE, (3, 8)), rng.integers(0, ex.VOCAB_SIZE, 3)
    norms = ex.gradient_by_distance(model, ids, targets, position=4)
    assert norms.shape == (8,)
    assert np.all(norms[5:] == 0.0)                             # causal: loss_4 never reads x_5..x_7
    assert np.all(norms[:5] > 0)
    assert model.training                                      # the mode is restored
    last = ex.gradient_by_distance(model, ids, targets)
    assert np.all(last > 0)


def test_decay_per_step_of_a_geometric_sequence():
    assert ex.decay_per_step(5.0 * 0.5 ** np.arange(6)) == pytest.approx(0.5)
    assert ex.decay_per_step(np.ones(4)) == pytest.approx(1.0)


def test_name_batch_cuts_names_and_targets_the_next_character():
    from tinygrad_tx.data import CharVocab
    vocab = CharVocab.tutorial()
    ids, targets = ex.name_batch(["ab", "abcd", "abc", "xyz"], vocab, 4, 2)
    assert ids.tolist() == [[0, 1, 2, 3], [0, 1, 2, 3]]
    assert targets.tolist() == [4, 0]                          # 'd', then the closing '$' of "abc"
    with pytest.raises(ValueError, match="smaller --length"):
        ex.name_batch(["ab"], vocab, 5, 1)


def _check_gradient_result(result, kinds, length):
    assert result["kinds"] == kinds and result["length"] == length
    for k in kinds:
        for when in ("init", "trained"):
            assert result[when][k].shape == (length,) and np.all(np.isfinite(result[when][k]))
            assert np.all(result[when][k] > 0)
        assert np.isfinite(result["dev_loss"][k])
    table = ex.gradient_table(result)
    assert table.count("\n") == 2 + length + 1 and "factor per step" in table


def test_gradient_experiment_tiny(tmp_path):
    names = tmp_path / "names.txt"
    names.write_text("\n".join(["emma", "olivia", "isabella", "sophia", "amelia", "harper", "evelyn",
                                "abigail", "emily", "elizabeth", "charlotte", "madison"] * 2) + "\n")
    kinds = ["rnn", "transformer"]
    result = ex.gradient_experiment(kinds, data=str(names), steps=2, length=4, count=2, batch_size=4, log=None)
    _check_gradient_result(result, kinds, 4)
    assert ex.plot_gradients(result, tmp_path / "g.png").stat().st_size > 1000


@pytest.mark.skipif(not NAMES_TXT.is_file(), reason=f"{NAMES_TXT} is absent")
def test_gradient_experiment_on_names_txt():
    kinds = ["rnn", "lstm", "transformer"]
    result = ex.gradient_experiment(kinds, data=str(NAMES_TXT), steps=3, length=10, count=8, log=None)
    _check_gradient_result(result, kinds, 10)
    assert result["names"] == 8


def test_torch_twins_timed_in_a_child_process():
    pytest.importorskip("torch")
    result = ex.torch_sequence_cost(["rnn", "transformer"], [4, 8], batch=2, repeats=1)
    assert sorted(result["cpu"]) == ["rnn", "transformer"] and result["torch"]
    assert all(len(v) == 2 and min(v) > 0 for times in (result["cpu"], result["wall"]) for v in times.values())


def test_the_commands(tmp_path, capsys):
    from tinygrad_tx import cli
    assert cli.main(["plot", "seq-cost", "--lengths", "4", "8", "--repeats", "1", "--batch", "2",
                     "--models", "rnn", "transformer", "-o", str(tmp_path / "c.png")]) == 0
    out = capsys.readouterr().out
    assert "| T | RNN (tanh) | Transformer |" in out and "threads 1" in out and (tmp_path / "c.png").is_file()
    assert cli.main(["plot", "seq-cost", "--lengths", "0"]) != 0           # a one-line usage error
    assert "--lengths: must be >= 1" in capsys.readouterr().err
