"""The docs cannot rot: every command and Python snippet in docs/*.md is run here.

* every line of a ```bash block is run as a command (``tinygrad-tx`` falls back to
  ``python -m tinygrad_tx`` when the console script is not on PATH) and must exit 0;
* every ```python block is run with this interpreter and must exit 0;
* a ```text block right after one of those lists lines its output must contain;
* every ``path``, ``function`` reference (a backticked repository path followed by a
  backticked name) must name a file that exists and a def/class in it, and every image
  must exist.

The blocks of one page run in order in one scratch directory (a later command may use
what an earlier one wrote), so nothing is written into the checkout.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").glob("*.md"))
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.S | re.M)
SHELL_SYNTAX = {"|", "||", "&&", ";", ">", ">>", "<", "&"}


def code_blocks(text: str):
    """``[(language, body, line number, expected output lines)]`` of a Markdown page."""
    found = [(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1, m.start(), m.end())
             for m in FENCE.finditer(text)]
    blocks = []
    for i, (lang, body, line, _, end) in enumerate(found):
        if lang not in ("bash", "python"):
            continue
        expected = []
        if i + 1 < len(found) and found[i + 1][0] == "text" and not text[end:found[i + 1][3]].strip():
            expected = [ln.strip() for ln in found[i + 1][1].splitlines() if ln.strip()]
        blocks.append((lang, body, line, expected))
    return blocks


def bash_commands(body: str):
    """The commands of a bash block: continuation lines joined, blank lines and comments skipped."""
    commands, current = [], ""
    for raw in body.splitlines():
        line = raw.rstrip()
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        if current.strip() and not current.lstrip().startswith("#"):
            commands.append(current.strip())
        current = ""
    return commands


def argv_of(command: str):
    argv = shlex.split(command)
    bad = SHELL_SYNTAX.intersection(argv)
    if bad:
        raise AssertionError(f"docs commands are plain commands (no shell syntax {sorted(bad)}): {command}")
    if argv[0] == "tinygrad-tx" and shutil.which("tinygrad-tx") is None:
        return [sys.executable, "-m", "tinygrad_tx", *argv[1:]]
    if argv[0] == "python":
        return [sys.executable, *argv[1:]]
    return argv


def environment():
    env = dict(os.environ)
    # one BLAS thread: the commands are small, and the machine running the tests is shared
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def run(argv, cwd, what):
    proc = subprocess.run(argv, cwd=cwd, env=environment(), capture_output=True, text=True, timeout=600)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{what} exited with {proc.returncode}:\n{output[-3000:]}"
    return output


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_command_and_snippet_runs(page, tmp_path):
    text = page.read_text()
    blocks = code_blocks(text)
    assert blocks, f"{page.name} has no bash or python block"
    for lang, body, line, expected in blocks:
        where = f"{page.name}:{line}"
        if lang == "bash":
            commands = bash_commands(body)
            assert commands, f"empty bash block at {where}"
            output = "".join(run(argv_of(c), tmp_path, f"{where}: {c}") for c in commands)
        else:
            output = run([sys.executable, "-c", body], tmp_path, f"the python block at {where}")
        missing = [e for e in expected if e not in output]
        assert not missing, f"{where}: the output lacks {missing}; it was:\n{output[-3000:]}"


REFERENCE = re.compile(r"`((?:tinygrad_tx|reference|tests|bench)/[\w/.]+\.py)`,?\s+`(\w+)`")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)]+)\)")


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_files_functions_and_images_exist(page):
    text = page.read_text()
    for path in re.findall(r"`((?:tinygrad_tx|reference|tests|bench|docs)/[\w/.-]+)`", text):
        assert (ROOT / path).exists(), f"{page.name} mentions {path}, which does not exist"
    pairs = REFERENCE.findall(text)
    assert pairs, f"{page.name} points at no function"
    for path, name in pairs:
        source = (ROOT / path).read_text()
        assert re.search(rf"^\s*(def|class) {name}\b", source, re.M) or re.search(rf"^{name} = ", source, re.M), \
            f"{page.name}: {path} defines no {name}"
    for image in IMAGE.findall(text):
        assert (page.parent / image).is_file(), f"{page.name} shows {image}, which does not exist"


def test_block_parsing():
    page = "text\n```bash\ntinygrad-tx a \\\n  --b 1\n# note\n\ntinygrad-tx c\n```\n\n```text\n  out 1\n```\n" \
           "```python\nprint(1)\n```\n```text\nx\n```\n```sh\nnot run\n```\n"
    blocks = code_blocks(page)
    assert [(b[0], b[2], b[3]) for b in blocks] == [("bash", 2, ["out 1"]), ("python", 13, ["x"])]
    assert [shlex.split(c) for c in bash_commands(blocks[0][1])] == [["tinygrad-tx", "a", "--b", "1"],
                                                                       ["tinygrad-tx", "c"]]
    with pytest.raises(AssertionError, match="shell syntax"):
        argv_of("tinygrad-tx a | head")
