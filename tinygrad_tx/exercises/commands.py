"""``tinygrad-tx exercise list | start | check | solution``.

``tinygrad_tx.cli`` calls :func:`register_exercise_commands` with its sub-command parsers;
:func:`main` runs the same commands on their own (the tests call it). Progress lives in a small
JSON file in the learner's directory (``.tinygrad-tx-exercises.json``, or ``--state PATH``),
never in the installed package; it is written atomically (a temporary file, then ``os.replace``).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
from pathlib import Path

from .ladder import LADDER

CASE_TIMEOUT = 10.0     # = checker.CASE_TIMEOUT (the checker, with hypothesis, is imported only by 'check')

PROG = "tinygrad-tx"
STATE_FILE = ".tinygrad-tx-exercises.json"
EXERCISE_HELP = "learn backprop by writing it: a ladder of backward exercises with a diagnosing checker"


# --------------------------------------------------------------------------- progress

def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def load_state(path) -> dict:
    """The progress file's contents ({"version": 1, "exercises": {name: {...}}}); empty when absent."""
    path = Path(path)
    if not path.exists():
        return {"version": 1, "exercises": {}}
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"the progress file {path} is not valid JSON ({e}); delete it or pass --state") from None
    if not isinstance(state, dict) or not isinstance(state.get("exercises"), dict):
        raise ValueError(f"the progress file {path} is not a tinygrad-tx exercise progress file")
    return state


def save_state(path, state: dict) -> None:
    """Write ``state`` to ``path`` atomically: a temporary file in the same directory, then os.replace."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise IsADirectoryError(21, "Is a directory; --state names the progress file", str(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=directory)
    except OSError as e:     # name the user's file, not the temporary one beside it
        raise type(e)(e.errno, f"cannot write the progress file {path}: {e.strerror} (its directory {directory} "
                               f"must be writable; --state chooses another file)") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(state, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _entry(state, name) -> dict:
    return state["exercises"].setdefault(name, {})


def _status(entry: dict) -> str:
    if entry.get("passed"):
        return "passed" + (" (solution seen)" if entry.get("solution_seen") else "")
    if not entry:
        return ""
    text = "started" if entry.get("file") else "not started"
    if entry.get("checks"):
        text += f", {entry['checks']} check{'s' * (entry['checks'] != 1)}, last: {entry.get('last', '?')}"
    if entry.get("solution_seen"):
        text += " (solution seen)"
    return text


# --------------------------------------------------------------------------- commands

def cmd_list(args) -> int:
    state = load_state(args.state)
    done = sum(1 for n in LADDER if state["exercises"].get(n, {}).get("passed"))
    print(f"The backward ladder ({done} of {len(LADDER)} passed; progress in {args.state})")
    width = max(map(len, LADDER))
    following = None
    for i, (name, ex) in enumerate(LADDER.items(), 1):
        entry = state["exercises"].get(name, {})
        mark = "x" if entry.get("passed") else ("~" if entry else " ")
        status = _status(entry)
        print(f"  [{mark}] {i:2d}. {name:<{width}}  {ex.title}" + (f"  -- {status}" if status else ""))
        if following is None and not entry.get("passed"):
            following = name
    if following:
        verb = "check" if state["exercises"].get(following, {}).get("file") else "start"
        print(f"next: {PROG} exercise {verb} {following}")
    else:
        print("every rung passed")
    return 0


def _default_file(name) -> str:
    return f"exercise_{name}.py"


def cmd_start(args) -> int:
    from .templates import template
    ex = LADDER[args.name]
    path = Path(args.out or _default_file(args.name))
    if path.exists() and not args.force:
        raise ValueError(f"{path} exists (your work?); pass --force to overwrite it, or -o another file")
    path.write_text(template(ex, str(path)), encoding="utf-8")
    state = load_state(args.state)
    entry = _entry(state, args.name)
    entry.setdefault("started", _now())
    entry["file"] = str(path)
    save_state(args.state, state)
    print(f"wrote {path}: {ex.title}. Write {ex.class_name}.backward, then run\n"
          f"  {PROG} exercise check {args.name} {path}")
    return 0


def cmd_check(args) -> int:
    from .checker import check, load_function
    ex = LADDER[args.name]
    state = load_state(args.state)
    entry = _entry(state, args.name)
    path = Path(args.file or entry.get("file") or _default_file(args.name))
    fn = load_function(path, ex, timeout=args.timeout)
    report = check(ex, fn, max_examples=args.max_examples, seed=args.seed, timeout=args.timeout,
                   progress=True)   # a check longer than ~2 s says what it is doing (stderr)
    print(report.text)
    entry["checks"] = entry.get("checks", 0) + 1
    entry.setdefault("file", str(path))
    if report.passed:
        entry.setdefault("passed", _now())
        entry["last"] = "passed"
        print(f"the library's own versions: {PROG} exercise solution {args.name}")
    else:
        entry["last"] = "failed: " + ", ".join(sorted(set(report.tags.values()))) if report.tags else "failed"
    save_state(args.state, state)
    return 0 if report.passed else 1


def cmd_solution(args) -> int:
    from .templates import solution_text
    state = load_state(args.state)
    entry = _entry(state, args.name)
    if not entry.get("passed"):
        print(f"# you have not passed {args.name} yet; here are the solutions, as you asked "
              f"(the progress file notes that you saw them)\n")
    print(solution_text(LADDER[args.name]))
    entry["solution_seen"] = True
    save_state(args.state, state)
    return 0


# --------------------------------------------------------------------------- parsers

def _positive_int(text):
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {n}")
    return n


def _positive_float(text):
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not x > 0 or x == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return x


def register_exercise_commands(commands) -> None:
    """Add ``exercise`` (with ``list``, ``start``, ``check``, ``solution``) to the ``tinygrad-tx``
    sub-command parsers ``commands``."""
    p = commands.add_parser("exercise", help=EXERCISE_HELP, description=EXERCISE_HELP + ". The ladder runs from "
                            "mul to a whole GPT block; 'exercise list' shows it and your progress.")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    names = list(LADDER)

    def common(q):
        q.add_argument("--state", default=STATE_FILE, metavar="PATH",
                       help="the progress file (default: %(default)s in the current directory)")
        q.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)

    q = actions.add_parser("list", help="the ladder and your progress", description="The ladder and your progress.")
    common(q)
    q.set_defaults(func=cmd_list)

    q = actions.add_parser("start", help="write an exercise file: forward filled in, backward to write, hints",
                           description="Write exercise_NAME.py: the forward filled in, the backward to write and "
                                       "the hints the derivation gives (without the answer).")
    q.add_argument("name", choices=names, metavar="NAME", help="one of: " + ", ".join(names))
    q.add_argument("-o", "--out", default=None, metavar="FILE", help="where (default: exercise_NAME.py)")
    q.add_argument("--force", action="store_true", help="overwrite an existing file")
    common(q)
    q.set_defaults(func=cmd_start)

    q = actions.add_parser("check", help="check your backward and diagnose what is wrong",
                           description="Run your Function on hypothesis-drawn shapes with random cotangents in "
                                       "float64 against the library's gradient; when wrong, the smallest failing "
                                       "case, the largest error and where, and the mistake if it is a known one.")
    q.add_argument("name", choices=names, metavar="NAME", help="the exercise")
    q.add_argument("file", nargs="?", default=None, metavar="FILE",
                   help="your file (default: the one 'start' wrote, else exercise_NAME.py)")
    q.add_argument("--max-examples", type=_positive_int, default=30, help="hypothesis cases (default: %(default)s)")
    q.add_argument("--seed", type=int, default=None,
                   help="draw another fixed set of cases (default: the same derandomized set every run)")
    q.add_argument("--timeout", type=_positive_float, default=CASE_TIMEOUT, metavar="SECONDS",
                   help="the longest your forward or backward may take on one case (default: %(default)s)")
    common(q)
    q.set_defaults(func=cmd_check)

    q = actions.add_parser("solution", help="show the library's own versions (composite, closed form, fused)",
                           description="Show the library's versions of the exercise's op: the composite of "
                                       "primitives, the plain closed-form Function, the fused default, and the "
                                       "exercise's reference solution.")
    q.add_argument("name", choices=names, metavar="NAME", help="the exercise")
    common(q)
    q.set_defaults(func=cmd_solution)


def main(argv=None) -> int:
    """``tinygrad-tx exercise ...`` on its own: ``main(["exercise", "list"])`` (or without the
    leading "exercise"). Returns the exit status: 0 ok (a check passed), 1 a failed check or an
    error (one line), 2 a bad command line."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] != ["exercise"]:
        argv = ["exercise"] + argv
    parser = argparse.ArgumentParser(prog=PROG)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    register_exercise_commands(commands)
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 0
    try:
        return args.func(args)
    except (ValueError, TypeError, OSError, ImportError) as e:
        if getattr(args, "debug", False):
            raise
        print(f"{PROG}: error: {' '.join(str(e).split()) or type(e).__name__}", file=sys.stderr)
        return 1
