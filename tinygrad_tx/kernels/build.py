"""Find the machine's C compiler, build the kernels' shared library once, cache it, load it.

* Compiler: ``$CC`` if set (then only it: a user who names a compiler is not given another),
  else the first of ``cc``, ``gcc``, ``clang`` on ``PATH``.
* Flags: ``-O3 -march=native -fopenmp-simd -fno-math-errno -ffp-contract=off -fPIC -shared``,
  ``-DTGX_SIMD_MATH`` (libmvec declarations, see ``source``) and, on AVX-512 CPUs,
  ``-mprefer-vector-width=512``; never ``-ffast-math``. If that build
  fails, one portable retry without ``-march=native`` and the libmvec declarations.
* Cache: ``$XDG_CACHE_HOME/tinygrad_tx`` (default ``~/.cache/tinygrad_tx``), one file per hash of
  the source, the flags, the compiler's version and the CPU's flags (``-march=native`` code must
  not be loaded on another CPU sharing the home directory). The library is written to a temporary
  file and renamed into place (``os.replace``: a reader never sees half a file), with its SHA-256
  beside it; it is loaded only if owned by this user, not writable by group or others, and its
  digest matches — otherwise rebuilt (a damaged or truncated file is never handed to the loader).
* Errors: ``KernelBuildError`` carries the compiler's message; the caller decides (fall back
  with a warning, or raise when ``TINYGRAD_TX_KERNELS=1`` asked for kernels).
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time

from .source import source

# -ffp-contract=off: no fused multiply-adds the source did not write, so a kernel rounds as its
# NumPy form does (Adam's update is bit-identical to it).
PORTABLE_FLAGS = ("-O3", "-fopenmp-simd", "-fno-math-errno", "-ffp-contract=off", "-fPIC", "-shared")
FLAGS = PORTABLE_FLAGS[:1] + ("-march=native",) + PORTABLE_FLAGS[1:] + ("-DTGX_SIMD_MATH",)


def native_flags() -> tuple:
    """FLAGS, plus 512-bit vectors where the CPU has AVX-512 (libmvec's 16-wide erfcf/expf:
    exact GELU's kernel 645 -> 472 µs on (512, 256) float32, one thread, 2026-12-07)."""
    if platform.machine() in ("x86_64", "AMD64") and " avx512f" in f" {_cpu_flags()}":
        return FLAGS + ("-mprefer-vector-width=512",)
    return FLAGS
CANDIDATES = ("cc", "gcc", "clang")


class KernelBuildError(RuntimeError):
    """The C compiler could not build the kernels (the message includes its output)."""


class NoCompiler(RuntimeError):
    """No C compiler: ``expected`` is True when ``$CC`` named one that is not there."""

    def __init__(self, message: str, expected: bool):
        super().__init__(message)
        self.expected = expected


def find_compiler() -> str:
    """The compiler's path: ``$CC`` (which must exist) or the first of cc, gcc, clang on PATH."""
    cc = os.environ.get("CC", "").strip()
    if cc:
        path = shutil.which(cc)
        if path is None:
            raise NoCompiler(f"CC={cc!r} is not an executable C compiler", expected=True)
        return path
    for name in CANDIDATES:
        path = shutil.which(name)
        if path is not None:
            return path
    raise NoCompiler("no C compiler found (CC, cc, gcc, clang)", expected=False)


def compiler_version(cc: str) -> tuple[str, str]:
    """(short name such as 'gcc 12.2.0', the full first line of ``--version``) of a compiler."""
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise NoCompiler(f"{cc} --version failed: {e}", expected=True) from None
    first = out.splitlines()[0] if out else os.path.basename(cc)
    family = "clang" if "clang" in out else "gcc" if ("gcc" in out or "Free Software Foundation" in out) \
        else os.path.basename(cc)
    try:
        flag = "-dumpfullversion" if family == "gcc" else "-dumpversion"
        number = subprocess.run([cc, flag], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        number = ""
    return (f"{family} {number}".strip(), first)


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tinygrad_tx")


def _cpu_flags() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def cache_key(src: str, flags: tuple, version_line: str) -> str:
    h = hashlib.sha256()
    for part in (src, " ".join(flags), version_line, platform.machine(), _cpu_flags()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def trusted(path: str) -> bool:
    """Owned by this user and not writable by group or others (else never loaded)."""
    st = os.stat(path)
    return st.st_uid == os.getuid() and not (st.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def _usable(path: str) -> bool:
    """The cached library exists, is trusted and matches the digest written beside it."""
    try:
        if not trusted(path):
            return False
        with open(path + ".sha256") as f:
            return f.read().strip() == _digest(path)
    except OSError:
        return False


def _write_atomically(directory: str, final: str, data: bytes, mode: int = 0o644) -> None:
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, final)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _compile(cc: str, flags: tuple, src: str, directory: str) -> bytes:
    """Run the compiler on ``src``; the shared library's bytes, or KernelBuildError."""
    with tempfile.TemporaryDirectory(dir=directory, prefix=".build-") as work:
        c_path, so_path = os.path.join(work, "kernels.c"), os.path.join(work, "kernels.so")
        with open(c_path, "w") as f:
            f.write(src)
        cmd = [cc, *flags, "-o", so_path, c_path, "-lm"]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as e:
            raise KernelBuildError(f"{' '.join(cmd)}: {e}") from None
        if res.returncode != 0 or not os.path.exists(so_path):
            message = (res.stderr or res.stdout).strip().splitlines()
            raise KernelBuildError(f"{' '.join(cmd)} failed (exit {res.returncode}):\n" + "\n".join(message[:20]))
        with open(so_path, "rb") as f:
            return f.read()


PROGRESS_AFTER_S = 1.0


class _Progress:
    """One stderr line for a build that takes more than ``PROGRESS_AFTER_S`` (the first build takes
    ~2 s here): its start is printed by a timer when the build is still running then, its end
    (``done in 2.1 s``) by ``finish``; a quicker build prints nothing. Only for a person at a
    terminal: never into a pipe or log, whose readers may compare the output, nor with
    ``TINYGRAD_TX_KERNELS_QUIET=1``."""

    def __init__(self, text: str):
        self.shown = False
        self._lock = threading.Lock()
        stream = sys.stderr
        if stream is None or not stream.isatty() or os.environ.get("TINYGRAD_TX_KERNELS_QUIET") == "1":
            self._timer = None
            return
        self._stream = stream
        self._timer = threading.Timer(PROGRESS_AFTER_S, self._show, (stream, text))
        self._timer.daemon = True
        self._timer.start()

    def _show(self, stream, text):
        with self._lock:
            if self.shown is None:                    # finished meanwhile
                return
            print(text, end="", file=stream, flush=True)
            self.shown = True

    def finish(self, outcome: str) -> None:
        if self._timer is None:
            return
        self._timer.cancel()
        with self._lock:
            if self.shown:
                print(f" {outcome}", file=self._stream, flush=True)
            self.shown = None


def load() -> tuple[ctypes.CDLL, str, str, float]:
    """(library, compiler name and version, its path, seconds spent building: 0 when cached).

    Raises NoCompiler or KernelBuildError."""
    cc = find_compiler()
    short, version_line = compiler_version(cc)
    src = source()
    directory = cache_dir()
    os.makedirs(directory, mode=0o700, exist_ok=True)
    errors = []
    for flags in (native_flags(), PORTABLE_FLAGS):
        path = os.path.join(directory, f"kernels-{cache_key(src, flags, version_line)}.so")
        if _usable(path):
            try:
                return ctypes.CDLL(path), short, path, 0.0
            except OSError:
                pass                              # damaged beyond the digest's reach: rebuild
        start = time.perf_counter()
        progress = _Progress(f"tinygrad_tx: building C kernels with {short} (first run; cached in {directory})...")
        try:
            data = _compile(cc, flags, src, directory)
        except KernelBuildError as e:
            progress.finish(f"failed after {time.perf_counter() - start:.1f} s")
            errors.append(str(e))
            continue
        progress.finish(f"done in {time.perf_counter() - start:.1f} s")
        for stale in (path, path + ".sha256"):    # a refused file (not ours, or writable by others) goes
            if os.path.lexists(stale):
                os.unlink(stale)
        _write_atomically(directory, path, data, 0o755)
        _write_atomically(directory, path + ".sha256", hashlib.sha256(data).hexdigest().encode())
        return ctypes.CDLL(path), short, path, time.perf_counter() - start
    raise KernelBuildError("\n".join(errors))
