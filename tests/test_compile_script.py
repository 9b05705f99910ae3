"""``tinygrad-tx compile FILE.py --call EXPR``: a function of the user's own script compiled and
compared with eager (issue 35: the command worked only on the built-in GPT)."""
import textwrap

import pytest

from tinygrad_tx import cli

SCRIPT = textwrap.dedent("""
    import torch
    import torch.nn as nn
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 4), torch.randn(16, 1)

    def step(x, y):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    if __name__ == "__main__":
        raise SystemExit("the main block must not run")
""")


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return path


def test_compiles_the_users_function_against_eager(script, capsys):
    assert cli.main(["compile", str(script), "--call", "step(x, y)", "--steps", "4", "--show"]) == 0
    out = capsys.readouterr().out
    assert "def program(" in out
    assert "4 calls of step(x, y): results, parameters and gradients identical to eager: yes" in out


def test_a_difference_from_eager_is_reported_with_status_1(script, capsys, monkeypatch):
    """The comparison can fail: a 'compiled' function that returns another value is reported NO."""
    import tinygrad_tx

    def wrong_compile(fn, **kw):
        return lambda *a, **k: fn(*a, **k) + 1
    monkeypatch.setattr(tinygrad_tx, "compile", wrong_compile)
    assert cli.main(["compile", str(script), "--call", "step(x, y)", "--steps", "3"]) == 1
    assert "identical to eager: NO" in capsys.readouterr().out


def test_a_global_the_function_reads_is_not_frozen(tmp_path, capsys):
    path = tmp_path / "counter.py"
    path.write_text(textwrap.dedent("""
        import torch
        calls = []
        def step(x):
            calls.append(1)
            return x * len(calls)      # changes every call: the replay must guard it or refuse
        x = torch.ones(3)
    """))
    assert cli.main(["compile", str(path), "--call", "step(x)", "--steps", "3"]) == 0
    assert "identical to eager: yes" in capsys.readouterr().out


def test_needs_call_and_a_function_name(script, capsys):
    assert cli.main(["compile", str(script)]) == 2
    assert "needs --call EXPR" in capsys.readouterr().err
    assert cli.main(["compile", str(script), "--call", "x + 1"]) == 1
    assert "must call a function of the script by its name" in capsys.readouterr().err
    assert cli.main(["compile", str(script), "--call", "nope(x)"]) == 1
    assert "defines no function 'nope'" in capsys.readouterr().err
