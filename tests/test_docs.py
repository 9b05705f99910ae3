"""The docs cannot rot: every command and Python snippet in docs/*.md is run here.

* every line of a ```bash block is run as a command (``tinygrad-tx`` falls back to
  ``python -m tinygrad_tx`` when the console script is not on PATH) and must exit 0;
* every ```python block is run with this interpreter and must exit 0;
* a ```text block right after one of those lists lines its output must contain;
* every ``path``, ``function`` reference (a backticked repository path followed by a
  backticked name) must name a file that exists and a def/class in it, and every image
  must exist;
* every file in docs/images has its command named in the docs (``PICTURES``), and that
  command, made cheap (fewer steps, a tiny corpus, the benchmark redrawn with ``--replot``),
  still runs and writes the file the picture is copied from.

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


# --------------------------------------------------------------------------- the committed pictures

# Every file in docs/images, the command the docs name for it, the file that command writes, and
# the arguments the test appends to run it cheaply (argparse keeps the last value of a flag).
# A picture without an entry fails the test: a new picture needs its command here.
GRAPHVIZ = shutil.which("dot") is not None
TINY_GPT = ["--steps", "2", "--d-model", "16", "--n-heads", "2", "--n-layers", "1", "--no-progress"]
NAMES_RUN = "tinygrad-tx train gpt --data names.txt --batch-size 128 --steps 3000 --dropout 0"
NAMES_COMPARE = "tinygrad-tx train gpt --data names.txt --compare-torch --steps 200 --dtype {} --compare-every 20"
PICTURES = {
    "bigram.png": ("tinygrad-tx plot bigram -o docs/images/bigram.png", "docs/images/bigram.png", []),
    "embeddings.png": ("tinygrad-tx plot embeddings -o docs/images/embeddings.png", "docs/images/embeddings.png",
                       ["--steps", "2"]),
    "attention.png": ("tinygrad-tx plot attention -o docs/images/attention.png", "docs/images/attention.png",
                      ["--steps", "2"]),
    "compare.png": ("tinygrad-tx train gpt --compare-torch --dtype float64 --steps 200 --compare-every 20 --plot "
                    "docs/images/compare.png", "docs/images/compare.png", TINY_GPT),
    "graph-attention.svg": ("tinygrad-tx graph attention --svg -o docs/images/graph-attention.svg",
                            "docs/images/graph-attention.svg", []),
    "graph-gpt-block.svg": ("tinygrad-tx graph gpt-block --svg -o docs/images/graph-gpt-block.svg",
                            "docs/images/graph-gpt-block.svg", []),
    "gpt_names_loss.png": (NAMES_RUN, "runs/gpt/model.loss.png", TINY_GPT + ["--batch-size", "8"]),
    "gpt_names_compare_float64.png": (NAMES_COMPARE.format("float64"), "runs/gpt/compare_float64.png", TINY_GPT),
    "gpt_names_compare_float32.png": (NAMES_COMPARE.format("float32"), "runs/gpt/compare_float32.png", TINY_GPT),
    # the benchmark's plots: the full run times for minutes; --replot draws them from its results.json
    "bench_ratio.png": ("tinygrad-tx bench", "bench/results/ratio.png", None),
    "bench_section11.png": ("tinygrad-tx bench", "bench/results/scaling_section11.png", None),
}
DOCS_TEXT = " ".join((ROOT / "README.md").read_text().split() + [w for p in PAGES for w in p.read_text().split()])


def test_every_committed_picture_has_its_command_in_the_docs():
    images = sorted(p.name for p in (ROOT / "docs" / "images").iterdir())
    assert images == sorted(PICTURES), "docs/images and PICTURES disagree: give each picture its command"
    for name, (command, _, _) in PICTURES.items():
        assert " ".join(command.split()) in DOCS_TEXT, f"{name}: the docs do not name {command!r}"
        assert f"images/{name}" in DOCS_TEXT, f"{name} is shown nowhere"


def _bench_results():
    stats = {"median": 0.01, "min": 0.009, "max": 0.012}
    row = {"name": "linear", "kind": "op", "available": True, "target": 1.1, "config": {},
           "results": {"ours": {"fwd": stats, "fwdbwd": stats}, "torch": {"fwd": stats, "fwdbwd": stats}},
           "ratio": {"fwd": 1.0, "fwdbwd": 1.0}}
    side = {"fwdbwd": stats, "saved_bytes": 2 ** 20, "saved_bytes_distinct": 2 ** 20}
    s11 = [{"T": T, "d": 64, "heads": 4, "batch": 2, "macs_4Td2": 1e6, "macs_2T2d": 1e6 * T / 64, "t2_share": 0.5,
            "score_bytes_f32": 2 ** 20, "ours": side, "torch": side} for T in (32, 128)]
    return {"meta": {"date": "2026-12-01", "threads": 1, "python": "3", "cpu_count": 2}, "components": [row],
            "section11": s11}


@pytest.mark.parametrize("name", sorted(PICTURES))
def test_the_command_of_every_picture_still_runs(name, tmp_path):
    """Each picture's documented command (made cheap) runs in a scratch directory and writes the
    file the picture is copied from, so a change of the code cannot leave a command behind."""
    import json
    from tinygrad_tx import cli
    command, written, cheap = PICTURES[name]
    argv = shlex.split(command)[1:]
    if name.endswith(".svg") and not GRAPHVIZ:
        pytest.skip("Graphviz's dot is not installed")
    if "--compare-torch" in argv:
        pytest.importorskip("torch")
    if "names.txt" in argv:
        (tmp_path / "names.txt").write_text("\n".join(["emma", "olivia", "ava", "isabella", "sophia", "mia",
                                                       "amelia", "harper", "evelyn", "abigail", "emily"]) + "\n")
    if cheap is None:                          # the benchmark: redraw from a results.json instead of timing
        results = tmp_path / "results.json"
        results.write_text(json.dumps(_bench_results()))
        argv, cheap = ["bench", "--replot", str(results), "--out", str(tmp_path / "bench/results")], []
    (tmp_path / "docs/images").mkdir(parents=True)
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert cli.main(argv + cheap) == 0
    finally:
        os.chdir(old)
    assert (tmp_path / written).stat().st_size > 1000
