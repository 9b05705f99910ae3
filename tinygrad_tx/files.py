"""Files written so that nothing is lost: atomic writes (a temporary file, fsynced, renamed over
the target, the directory fsynced) and the checks a file must pass before it is read. Shared by
``tinygrad_tx.save`` (``serialization.py``) and the checkpoints (``checkpoint.py``); it needs
nothing beyond the standard library."""
from __future__ import annotations

import os
import re
import stat
import time


class LoadError(RuntimeError, ValueError):
    """A file that is not a readable tinygrad_tx or PyTorch save (truncated, corrupt, unknown)."""


def _umask() -> int:
    """The process's umask, read without changing it (Linux: /proc/self/status); elsewhere
    the classic set-and-restore, which is not thread-safe but lasts two system calls."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def temp_path(path) -> str:
    """The temporary file :func:`atomic_write` writes ``path`` through: ``.<name>.tmp-<pid>``
    in the same directory (the same file system, so ``os.replace`` is a rename)."""
    path = os.path.abspath(os.fspath(path))
    return os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.tmp-{os.getpid()}")


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True            # someone else's live process (or we cannot tell): leave its file alone
    return True


_FOREIGN_TEMP = re.compile(r"\.tmp[A-Za-z0-9]{6}")   # safetensors' save_file (Rust tempfile): .tmpXXXXXX
_FOREIGN_TEMP_AGE = 3600.0   # without /proc, a .tmpXXXXXX is stale when untouched this long (seconds)


def _open_files_of_running_processes() -> set | None:
    """The files any process we may inspect holds open (Linux ``/proc``); None where unknown."""
    if not os.path.isdir("/proc/self/fd"):
        return None
    held = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                held.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except OSError:
                pass
    return held


def _stale_foreign_temps(directory: str, names) -> list[str]:
    """The ``.tmpXXXXXX`` files of ``safetensors.numpy.save_file`` in ``directory`` that no running
    process holds open (a writer killed mid-save): they are never renamed into place."""
    candidates = [os.path.join(directory, n) for n in names if _FOREIGN_TEMP.fullmatch(n)]
    candidates = [p for p in candidates if os.path.isfile(p) and not os.path.islink(p)]
    if not candidates:
        return []
    held = _open_files_of_running_processes()
    if held is None:
        now = time.time()
        return [p for p in candidates if now - os.path.getmtime(p) > _FOREIGN_TEMP_AGE]
    return [p for p in candidates if os.path.realpath(p) not in held]


def remove_stale_temps(path) -> list[str]:
    """Delete the temporary files of ``path`` left by processes that died mid-write (SIGKILL,
    power loss); temporaries of processes still running are kept. Also deletes the
    ``.tmpXXXXXX`` files of safetensors' own ``save_file`` in the same directory that no running
    process holds open. Returns the removed paths."""
    path = os.path.abspath(os.fspath(path))
    directory, prefix = os.path.dirname(path), f".{os.path.basename(path)}.tmp-"
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for stale in _stale_foreign_temps(directory, names):
        try:
            os.unlink(stale)
            removed.append(stale)
        except OSError:
            pass
    for name in names:
        pid = name[len(prefix):]
        if not name.startswith(prefix) or not pid.isdigit():
            continue
        if int(pid) != os.getpid() and _pid_running(int(pid)):
            continue
        try:
            os.unlink(os.path.join(directory, name))
            removed.append(os.path.join(directory, name))
        except OSError:
            pass
    return removed


def atomic_write(path, write) -> None:
    """Write ``path`` atomically: ``write(tmp)`` fills :func:`temp_path` (``.<name>.tmp-<pid>``),
    which is fsynced, given the umask's mode (``0o666 & ~umask``, as ``open()`` creates files)
    and renamed over ``path``; then the directory is fsynced so the rename is durable. Stale
    temporaries of the same target (:func:`remove_stale_temps`) are removed first. On any
    error the temporary file is removed and the old ``path``, if any, is untouched. A target
    that is a directory is an ``IsADirectoryError`` naming it (not the temporary file)."""
    atomic_write_many([(path, write)])


def atomic_write_many(files) -> None:
    """:func:`atomic_write` of several ``(path, write)`` pairs as one step: every temporary file
    is written and fsynced first, then the renames follow one another with no other work in
    between, in the order given. A process killed before the first rename leaves every target
    as it was; the window in which only some are renamed is that of consecutive ``rename``
    system calls (no serialisation, no fsync). On an error before the renames every temporary
    file is removed and no target changes."""
    files = [(os.fspath(path), write) for path, write in files]
    for path, _ in files:
        if os.path.isdir(path):
            raise IsADirectoryError(21, "Is a directory; give a file path", path)
    ready = []
    try:
        for path, write in files:
            remove_stale_temps(path)
            tmp = temp_path(path)
            ready.append(tmp)
            write(tmp)
            os.chmod(tmp, 0o666 & ~_umask())
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        for (path, _), tmp in zip(files, ready):
            os.replace(tmp, path)
    except BaseException:
        for tmp in ready:
            if os.path.lexists(tmp):
                os.unlink(tmp)
        raise
    for directory in dict.fromkeys(os.path.dirname(os.path.abspath(p)) for p, _ in files):
        _fsync_directory(directory)


def _fsync_directory(directory: str) -> None:
    """Make the renames in ``directory`` durable."""
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(dfd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(dfd)


def check_regular_file(path, what: str = "checkpoint") -> str:
    """``path`` as a string if it is an existing regular file; else ``FileNotFoundError`` or
    ``ValueError`` naming it (a directory, a FIFO -- opening one would block until a writer
    comes -- a socket or a device)."""
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} not found: {path}") from None
    except OSError as e:            # a symlink loop, a name too long: one error naming the path
        raise LoadError(f"{path}: cannot read this {what}: {e.strerror or e}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{path}: is a directory, not a {what} file")
    if not stat.S_ISREG(st.st_mode):
        kind = "a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else "not a regular file"
        raise ValueError(f"{path}: is {kind}; a {what} must be a regular file")
    return path
