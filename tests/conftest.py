"""Test configuration: torch device, hypothesis profiles, and the error report.

* ``TINYGRAD_TX_TORCH_DEVICE`` overrides the torch device (default: ``cuda`` when
  available, else ``cpu``).
* ``HYPOTHESIS_PROFILE`` picks ``ci`` (small, derandomized: the default under
  ``CI=true``), ``dev`` (the default otherwise) or ``thorough`` (long runs).
* At the end of a run the worst relative errors seen by ``check_parity`` are
  printed per op and dtype (and written to ``$TINYGRAD_TX_ERROR_REPORT`` as JSON
  when that variable is set, with ``"_reference"``: torch's device and the float32 matmul
  precision its reference used — TF32 is switched off in ``reference.testing``).
"""
from __future__ import annotations

import contextlib
import json
import os
import sys

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))  # helper modules shared by test files (test_models)

try:  # the parity tests use tiny tensors: torch's intra-op threads would only contend for the
    import torch  # cores with the other xdist worker (7x slower on 2 shared cores, measured)
    torch.set_num_threads(1)
except ImportError:  # pragma: no cover - torch is a dev dependency
    pass


@contextlib.contextmanager
def default_dtypes_kept():
    """tinygrad_tx's and torch's default float dtypes as they were on entry, whatever the body set."""
    ours, theirs = sys.modules.get("tinygrad_tx"), sys.modules.get("torch")
    saved = (ours and ours.get_default_dtype(), theirs and theirs.get_default_dtype())
    try:
        yield
    finally:
        for module, dt in zip((sys.modules.get("tinygrad_tx"), sys.modules.get("torch")), saved):
            if module is not None and hasattr(module, "set_default_dtype"):
                module.set_default_dtype(dt if dt is not None else module.float32)


@pytest.fixture(autouse=True)
def _default_dtype_restored():
    """A test that calls ``set_default_dtype`` (tinygrad_tx's or torch's) leaves the next test's
    default float as it found it (the setting is process-wide, and xdist reuses a worker)."""
    with default_dtypes_kept():
        yield


settings.register_profile(
    "ci", max_examples=12, derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# dev and thorough draw anew each run (CI runs the fuzz and parity files once in dev too); a
# failure prints its @reproduce_failure blob, and ``--hypothesis-seed=N`` replays a whole run
settings.register_profile(
    "dev", max_examples=40, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "thorough", max_examples=500, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
_default = "ci" if os.environ.get("CI") else "dev"
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", _default))


def pytest_report_header(config):
    try:
        import reference.testing as parity
        return (f"torch device: {parity.DEVICE}; hypothesis profile: {settings().max_examples} examples; "
                f"{_precision_line(parity.reference_precision())}")
    except Exception as e:  # pragma: no cover
        return f"torch unavailable: {e}"


def _precision_line(p):
    tf32 = "on" if p["cuda_matmul_allow_tf32"] or p["cudnn_allow_tf32"] else "off"
    return f"float32 reference: matmul precision {p['float32_matmul_precision']!r}, TF32 {tf32}"


def _report_dir(config):
    """A per-run folder where xdist workers leave their error reports for the controller."""
    return os.path.join(str(config.rootpath), ".pytest_error_reports")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "cpu_only(reason): the test runs torch on the CPU whatever TINYGRAD_TX_TORCH_DEVICE says "
        "(state dicts, torch's CPU random streams, code run as written); it still runs in a CUDA session. "
        "tests/test_torch_device.py checks every other torch tensor is built on reference.testing.DEVICE")
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        d = _report_dir(config)
        if os.path.isdir(d):
            for name in os.listdir(d):
                os.remove(os.path.join(d, name))


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if not hasattr(config, "workerinput"):
        return
    try:
        import reference.testing as parity
    except Exception:  # pragma: no cover
        return
    d = _report_dir(config)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"{config.workerinput['workerid']}.json")
    with open(path, "w") as f:
        json.dump([[k[0], k[1], v] for k, v in parity.ERROR_REPORT.items()], f)


def _merged_report(config):
    """This process's report merged with what xdist workers left: the worst error per (op, dtype)."""
    merged = {}
    entries = []
    try:
        import reference.testing as parity
        entries += [(k[0], k[1], v) for k, v in parity.ERROR_REPORT.items()]
    except Exception:  # pragma: no cover
        pass
    d = _report_dir(config)
    if os.path.isdir(d):
        for name in sorted(n for n in os.listdir(d) if n.endswith(".json")):  # not table.txt
            with open(os.path.join(d, name)) as f:
                entries += [tuple(e) for e in json.load(f)]
    for name, dtype, r in entries:
        m = merged.setdefault((name, dtype), {"ours": 0.0, "torch": None, "calls": 0})
        m["calls"] += r["calls"]
        if r["ours"] >= m["ours"]:
            m["ours"], m["torch"] = r["ours"], r["torch"]
    return merged


def _error_table(report, precision):
    """The whole table, one line per (op, dtype): what the run compared and how far each side was."""
    lines = []
    if precision is not None:
        lines.append(f"torch device {precision['device']}; {_precision_line(precision)}")
    lines.append(f"{'op':38s} {'dtype':8s} {'calls':>6s} {'ours':>10s} {'torch':>10s}")
    for (name, dtype), r in sorted(report.items()):
        torch_err = f"{r['torch']:.2e}" if r["torch"] is not None else "-"
        lines.append(f"{name:38s} {dtype:8s} {r['calls']:6d} {r['ours']:10.2e} {torch_err:>10s}")
    return lines


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """A short summary of the worst errors on screen; the whole table (~1,200 lines) goes to
    ``.pytest_error_reports/table.txt`` (and to ``$TINYGRAD_TX_ERROR_REPORT`` as JSON when set)."""
    report = _merged_report(config)
    if not report:
        return
    tr = terminalreporter
    try:
        import reference.testing as parity
        precision = parity.reference_precision()
    except Exception:  # pragma: no cover
        precision = None
    d = _report_dir(config)
    os.makedirs(d, exist_ok=True)
    table = os.path.join(d, "table.txt")
    with open(table, "w") as f:
        f.write("\n".join(_error_table(report, precision)) + "\n")
    tr.section("worst relative errors per op (ours vs reference)")
    if precision is not None:
        tr.write_line(f"torch device {precision['device']}; {_precision_line(precision)}")
    f64 = [(r["ours"], name) for (name, dtype), r in report.items() if dtype == "float64"]
    from tinygrad_tx.testing.compare import F32_FLOOR, F32_RATIO
    # the bound is relative to torch's own float32 error: pairs recorded without it (exact results,
    # or checked against another yardstick such as finite differences) are only counted
    f32 = [(r["ours"] / (F32_RATIO * r["torch"] + F32_FLOOR), r["ours"], r["torch"], name)
           for (name, dtype), r in report.items() if dtype == "float32" and r["torch"] is not None]
    f32_alone = sum(1 for (name, dtype), r in report.items() if dtype == "float32" and r["torch"] is None)
    tr.write_line(f"{len(report)} (op, dtype) pairs compared in {sum(r['calls'] for r in report.values())} calls")
    if f64:
        err, name = max(f64)
        tr.write_line(f"float64: worst relative error {err:.2e} ({name})")
    if f32:
        used, ours, theirs, name = max(f32)
        beyond = ("; past it, the test's ill-conditioning yardsticks passed it: the oracle's own move under "
                  "one-ulp input changes, or the median over neighbouring problems (README, Correctness)"
                  if used > 1 else "")
        tr.write_line(f"float32: closest to the bound ({F32_RATIO:g} x torch's own error + {F32_FLOOR:.1e}): "
                      f"{name}, ours {ours:.2e}, torch {theirs:.2e} ({used:.0%} of the bound{beyond})")
    if f32_alone:
        tr.write_line(f"float32: {f32_alone} more pairs carry no torch error (exact results such as reshape, "
                      "or a check against another yardstick such as finite differences)")
    tr.write_line(f"the whole table: {os.path.relpath(table)}")
    path = os.environ.get("TINYGRAD_TX_ERROR_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump({"_reference": precision, **{f"{k[0]}|{k[1]}": v for k, v in report.items()}}, f, indent=1)
