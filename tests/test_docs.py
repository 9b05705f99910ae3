"""The docs cannot rot: every command and Python snippet in docs/*.md is run here.

* every line of a ```bash block is run as a command (``tinygrad-tx`` falls back to
  ``python -m tinygrad_tx`` when the console script is not on PATH) and must exit 0;
* every ```python block is run with this interpreter and must exit 0;
* a ```text block after one of those (prose may stand between, another code block may not)
  lists lines its output must contain;
* every number the prose of docs/tour.md quotes from an output (a decimal such as ``5.138``
  or ``2.351``, a count of graph nodes such as "33 nodes" or "four graph nodes", "N times")
  must be printed by a block of its own section, rounded as the prose rounds it, unless
  ``NOT_PRINTED`` says where it comes from instead; the numbers quoted from the long runs
  behind the pictures are in ``LONG_RUNS`` and checked against those runs when
  ``TINYGRAD_TX_DOCS_LONG=1`` (minutes; plot digits-data 10-30 of them);
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
        if i + 1 < len(found) and found[i + 1][0] == "text":   # prose may stand between
            expected = [ln.strip() for ln in found[i + 1][1].splitlines() if ln.strip()]
        blocks.append((lang, body, line, expected))
    return blocks


# --------------------------------------------------------------------------- numbers quoted in prose

WORDS = {w: i for i, w in enumerate("one two three four five six seven eight nine ten eleven twelve thirteen "
                                    "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split(), 1)}
PROSE_NUMBER = re.compile(r"(?<![\w.+-])(?:(?P<decimal>\d+\.\d+(?:e[-+]?\d+)?x?)"
                          r"|(?P<count>\d[\d,]*|" + "|".join(WORDS) + r")\s+(?:graph\s+)?(?P<unit>nodes?|times)\b)"
                          r"(?![\w.]*\d)", re.I)
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
# Numbers in the tour's prose that no block of its section prints, and where each comes from.
NOT_PRINTED = {
    "1.6x": "the measured gain of _softmax_unshifted, in its docstring (a benchmark, not a command here)",
    "0.1": "the default dropout of train gpt (a setting)",
    "three times": "each fused op is written three times (its rungs), not an output",
}
# Numbers quoted from the long runs behind the pictures: the command (as the tour gives it) and
# the numbers it prints; checked by test_numbers_quoted_from_the_long_runs when
# TINYGRAD_TX_DOCS_LONG=1.
LONG_RUNS = {
    "tinygrad-tx plot embeddings -o docs/images/embeddings.png": ["2.552", "0.511", "0.707", "0.723"],
    "tinygrad-tx plot attention -o docs/images/attention.png": ["2.096", "0.63", "0.73", "0.85"],
    "tinygrad-tx train gpt --compare-torch --dtype float64 --steps 200 --compare-every 20 --plot "
    "docs/images/compare.png": ["3.8e-16"],
    "tinygrad-tx plot grad-distance --data names.txt -o docs/images/grad_distance.png":
        ["2.074", "2.116", "2.179", "0.46", "0.61", "0.58", "0.74", "1.04", "0.92"],
    "tinygrad-tx plot name-models --data names.txt -o docs/images/name_models.png":   # 6-7 minutes
        ["2.164", "16.5", "2.226", "2.422", "2.473", "2.451"],
    "tinygrad-tx plot digits-data -o docs/images/digits_data.png":   # 10-30 minutes
        ["91.3", "97.1", "51.4", "84.2"],
}
# makemore's names.txt, for a long run that names it (skipped when absent)
NAMES_TXT = ROOT.parent / "shared" / "data" / "names.txt"


def prose_quotes(text: str):
    """``[(section start offset, line number, quoted text, checker)]``: the numbers the prose of a page
    quotes (see the module docstring); section numbers ("section 3.3") are not quotes."""
    prose = FENCE.sub(lambda m: " " * len(m.group(0)), text)
    starts = [0] + [m.start() for m in re.finditer(r"^## ", text, re.M)]
    found = []
    for m in PROSE_NUMBER.finditer(prose):
        if re.search(r"sections?\s+$", prose[max(0, m.start() - 10):m.start()], re.I):
            continue
        section = max(s for s in starts if s <= m.start())
        found.append((section, text.count("\n", 0, m.start()) + 1, m.group(0), m))
    return found


def printed(quote, output: str) -> bool:
    """Whether ``output`` prints the number that ``quote`` (a :data:`PROSE_NUMBER` match) quotes: a
    decimal as the prose rounds it (2.351 for 2.3507, 5.138 for 5.138e+00), a count with its unit."""
    if quote.group("decimal"):
        q = quote.group("decimal").rstrip("x")
        mantissa, _, exponent = q.lower().partition("e")
        digits = len(mantissa.split(".")[1])
        for n in NUMBER.findall(output):
            v = float(n)
            if exponent and f"{v:.{digits}e}".replace("e-0", "e-").replace("e+0", "e+") == \
                    f"{float(q):.{digits}e}".replace("e-0", "e-").replace("e+0", "e+"):
                return True
            if not exponent and len(n.lower().split("e")[0].partition(".")[2]) >= digits \
                    and f"{v:.{digits}f}" == q:
                return True
        return False
    count = quote.group("count").lower()
    n = WORDS.get(count) or int(count.replace(",", ""))
    unit = quote.group("unit").lower()
    if unit.startswith("node"):
        return re.search(rf"(?<![\d,]){n} nodes?\b", output) is not None
    return re.search(rf"(?<![\d,.])(?:{n:,}|{n})(?![\d]|[,.]\d)", output) is not None


def check_prose_numbers(page: str, text: str, outputs: dict):
    """Every quote of :func:`prose_quotes` is printed by a block of its section or of an earlier one
    (the bigram's 2.351, recalled later; ``outputs``: section start offset -> the outputs of its
    blocks), or is in NOT_PRINTED or LONG_RUNS."""
    long_run = {n for numbers in LONG_RUNS.values() for n in numbers}
    stale = [f"{page}:{line}: {quote!r}" for section, line, quote, m in prose_quotes(text)
             if quote not in NOT_PRINTED and m.group("decimal") not in long_run
             and not printed(m, "".join(out for start, out in outputs.items() if start <= section))]
    assert not stale, ("numbers in the prose that no block of their section prints (stale? update the prose, "
                       "or say in NOT_PRINTED where they come from): " + "; ".join(stale))


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
    outputs: dict = {}     # section start -> what its blocks printed
    sections = [0] + [m.start() for m in re.finditer(r"^## ", text, re.M)]
    for lang, body, line, expected in blocks:
        where = f"{page.name}:{line}"
        if lang == "bash":
            commands = bash_commands(body)
            assert commands, f"empty bash block at {where}"
            output = "".join(run(argv_of(c), tmp_path, f"{where}: {c}") for c in commands)
        else:
            output = run([sys.executable, "-c", body], tmp_path, f"the python block at {where}")
        if output.rstrip().endswith(SKIPPED):    # e.g. the tutorial text is not beside the checkout
            continue
        offset = len("\n".join(text.splitlines()[:line - 1]))
        section = max(s for s in sections if s <= offset)
        outputs[section] = outputs.get(section, "") + output
        missing = [e for e in expected if e not in output]
        assert not missing, f"{where}: the output lacks {missing}; it was:\n{output[-3000:]}"
    if page.name == "tour.md":
        check_prose_numbers(page.name, text, outputs)


SKIPPED = ": skipped"   # a block whose output ends so could not run here; its text block is not checked


def test_prose_numbers_are_checked():
    """A stale number in the prose fails, also when prose stands between the block and its output."""
    page = ("## 1. a\n\n```bash\ntinygrad-tx x\n```\n\nThe traced GPT has 33 nodes, four graph nodes, "
            "section 3.3, loss 2.351 (5.138 to each), 1,392 times.\n\n```text\nout\n```\n")
    assert code_blocks(page)[0][3] == ["out"]
    out = {0: "34 nodes; composite 4 nodes; dev 2.3507; 5.138e+00; a$ 1392"}
    quotes = [q for _, _, q, _ in prose_quotes(page)]
    later = page + "\n## 2. b\n\nRecall 2.351.\n"
    check_prose_numbers("page", later.replace("33", "34"), out)     # printed by an earlier section
    assert quotes == ["33 nodes", "four graph nodes", "2.351", "5.138", "1,392 times"]
    with pytest.raises(AssertionError, match=r"page:7: '33 nodes'\n"):
        check_prose_numbers("page", page, out)
    check_prose_numbers("page", page.replace("33 nodes", "34 nodes"), out)
    with pytest.raises(AssertionError, match="2.351"):
        check_prose_numbers("page", page.replace("33", "34"), {0: out[0].replace("2.3507", "2.3517")})


@pytest.mark.skipif(os.environ.get("TINYGRAD_TX_DOCS_LONG") != "1",
                    reason="the long runs behind the pictures take minutes (plot digits-data 10-30): "
                           "TINYGRAD_TX_DOCS_LONG=1")
@pytest.mark.parametrize("command", sorted(LONG_RUNS))
def test_numbers_quoted_from_the_long_runs(command, tmp_path):
    text = " ".join((ROOT / "docs" / "tour.md").read_text().split())
    assert command in text, f"the tour no longer names {command!r}"
    if "--compare-torch" in command:
        pytest.importorskip("torch")
    if "names.txt" in shlex.split(command):
        if not NAMES_TXT.is_file():
            pytest.skip(f"{NAMES_TXT} is absent")
        shutil.copy(NAMES_TXT, tmp_path / "names.txt")
    (tmp_path / "docs/images").mkdir(parents=True)
    output = run(argv_of(command), tmp_path, command)
    missing = [n for n in LONG_RUNS[command]
               if not printed(PROSE_NUMBER.search(n + " "), output)]
    assert not missing, f"{command} no longer prints {missing}:\n{output[-3000:]}"


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
    "seq_cost.png": ("tinygrad-tx plot seq-cost --torch -o docs/images/seq_cost.png", "docs/images/seq_cost.png",
                     ["--lengths", "4", "8", "--repeats", "1", "--batch", "2"]),
    "grad_distance.png": ("tinygrad-tx plot grad-distance --data names.txt -o docs/images/grad_distance.png",
                          "docs/images/grad_distance.png",
                          ["--steps", "2", "--length", "3", "--names", "2", "--batch-size", "4"]),
    "name_models.png": ("tinygrad-tx plot name-models --data names.txt -o docs/images/name_models.png",
                        "docs/images/name_models.png", ["--steps", "2", "--eval-every", "1", "--models", "bigram",
                                                        "rnn"]),
    "digits_data.png": ("tinygrad-tx plot digits-data -o docs/images/digits_data.png", "docs/images/digits_data.png",
                        ["--sizes", "10", "0", "--seeds", "1", "--steps", "2"]),
    # the benchmark's plots: the full run times for minutes; --replot draws them from its results.json
    "bench_ratio.png": ("tinygrad-tx bench", "bench/results/latest/ratio.png", None),
    "bench_section11.png": ("tinygrad-tx bench", "bench/results/latest/scaling_section11.png", None),
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
    if "--compare-torch" in argv or "--torch" in argv:
        pytest.importorskip("torch")
    if "names.txt" in argv:
        (tmp_path / "names.txt").write_text("\n".join(["emma", "olivia", "ava", "isabella", "sophia", "mia",
                                                       "amelia", "harper", "evelyn", "abigail", "emily"]) + "\n")
    if cheap is None:                          # the benchmark: redraw from a results.json instead of timing
        results = tmp_path / "results.json"
        results.write_text(json.dumps(_bench_results()))
        argv, cheap = ["bench", "--replot", str(results), "--out", str(tmp_path / "bench/results/latest")], []
    (tmp_path / "docs/images").mkdir(parents=True)
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert cli.main(argv + cheap) == 0
    finally:
        os.chdir(old)
    assert (tmp_path / written).stat().st_size > 1000


def test_engine_reading_path_names_exist():
    """docs/engine.md, the reading path: every file it names exists, and every code name in a
    section (`Mul`, `run_backward`, `ArrayFunction.apply`, `input_nodes`) is in one of the files
    that section names — a class as ``class Name``, a function or method as ``def name``, an
    attribute or a table as a word — so a rename cannot leave the path pointing at nothing."""
    text = (ROOT / "docs" / "engine.md").read_text()
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    assert len(sections) >= 6
    file_pattern = r"`((?:tinygrad_tx|docs|tests)/[\w/.-]+)`"   # a file, or a folder (ending in /)
    for section in sections:
        title = section.splitlines()[0]
        files = re.findall(file_pattern, section)
        assert files, f"engine.md section {title!r} names no file"
        sources = []
        for path in files:
            exists = (ROOT / path).is_dir() if path.endswith("/") else (ROOT / path).is_file()
            assert exists, f"engine.md ({title}) names {path}, which does not exist"
            if path.endswith(".py"):
                sources.append((ROOT / path).read_text())
        code = "\n".join(sources)
        for token in re.findall(r"`([A-Za-z_][\w.]*)`", section):
            if "/" in token or token in ("None", "True", "False"):
                continue
            for name in token.split("."):
                if name[0].isupper() and not name.isupper():
                    ok = re.search(rf"^\s*class {name}\b", code, re.M)
                else:
                    ok = re.search(rf"^\s*def {name}\b", code, re.M) or re.search(rf"\b{name}\b", code)
                assert ok, f"engine.md ({title}) names `{token}`, not found in {files}"
