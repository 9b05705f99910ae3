"""Run PyTorch code on tinygrad_tx: ``import torch`` (and ``torch.nn``, ``torch.utils.data``, ...)
loads the matching tinygrad_tx module while :func:`torch_as_tinygrad_tx` is active.

This is the same change as replacing the word ``torch`` by ``tinygrad_tx`` in the source, done
by an import hook instead of an edit, so a learner's script runs unchanged:

    tinygrad-tx run my_model.py --epochs 2

When the script uses a name tinygrad_tx does not have, :func:`run_file` says which one
(``torch.foo``), rather than leaving only a traceback.

One name differs: ``torch.__version__`` is :data:`TORCH_VERSION` ("2.13.0+tinygradtx.0.1.0": the
torch release whose API tinygrad_tx follows, tinygrad_tx's own version as the PEP 440 local
label), so a script's version checks read torch 2.13; ``tinygrad_tx.__version__`` stays "0.1.0".
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import re
import runpy
import sys
import types
from contextlib import contextmanager

ALIAS = "torch"
TARGET = "tinygrad_tx"


TORCH_API_VERSION = "2.13.0"   # the torch release whose names, signatures and results tinygrad_tx follows


class TorchVersion(str):
    """``torch.__version__`` under the alias. As a str it splits as torch's does
    (``int(v.split(".")[0]) >= 2``) and ``packaging.version.parse`` reads it; like torch's own
    ``TorchVersion``, ``<``/``<=``/``>``/``>=`` against a release string or a tuple of ints compare
    as versions (``v >= "2.4"``, ``v >= (2, 0)``: plain str order would put "2.13" below "2.4").
    Anything else (a pre-release like "2.0.0a0") compares as a str, as torch's does for what it
    cannot parse; ``==`` is str equality."""

    __slots__ = ()

    def _compare(self, other, method):
        mine, theirs = _release_key(str(self)), _release_key(other)
        if mine is None or theirs is None:
            return getattr(super(), method)(other)
        return getattr(mine, method)(theirs)

    def __lt__(self, other):
        return self._compare(other, "__lt__")

    def __le__(self, other):
        return self._compare(other, "__le__")

    def __gt__(self, other):
        return self._compare(other, "__gt__")

    def __ge__(self, other):
        return self._compare(other, "__ge__")


_RELEASE = re.compile(r"v?(\d+(?:\.\d+)*)(\+[a-z0-9]+(?:[._-][a-z0-9]+)*)?", re.IGNORECASE)


def _release_key(v):
    """PEP 440 order of a plain release ("2.4", "2.13.0+cpu") or a tuple of ints: (release without
    trailing zeros, local label), a local label sorting after none (2.13.0+cpu > 2.13.0), its
    numeric parts after text ones, text by case-folded str order. None for anything else."""
    if isinstance(v, (tuple, list)) and v and all(type(n) is int for n in v):
        numbers, local = list(v), None
    elif isinstance(v, str) and (m := _RELEASE.fullmatch(v.strip())):
        numbers, local = [int(n) for n in m.group(1).split(".")], m.group(2)
    else:
        return None
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    parts = re.split(r"[._-]", local[1:]) if local else []
    return tuple(numbers), tuple((1, int(p), "") if p.isdigit() else (0, 0, p.lower()) for p in parts)


def torch_version() -> TorchVersion:
    """``"2.13.0+tinygradtx.<tinygrad_tx.__version__>"``."""
    return TorchVersion(f"{TORCH_API_VERSION}+tinygradtx.{importlib.import_module(TARGET).__version__}")


class _TorchModule(types.ModuleType):
    """``torch`` under the alias: every name read through to tinygrad_tx (so it stays current:
    ``torch.Tensor is tinygrad_tx.Tensor``), except ``__version__``."""

    def __init__(self, target):
        super().__init__(ALIAS, target.__doc__)
        self.__path__ = list(target.__path__)   # a package: ``import torch.nn`` goes on to the finder
        self.__version__ = torch_version()

    def __getattr__(self, name):
        return getattr(sys.modules[TARGET], name)

    def __dir__(self):
        return sorted(set(dir(sys.modules[TARGET])) | set(self.__dict__))


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class _TorchFinder(importlib.abc.MetaPathFinder):
    """Resolves ``torch[.x.y]`` to the already imported ``tinygrad_tx[.x.y]`` (``torch`` itself to
    a :class:`_TorchModule` reading through to tinygrad_tx)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != ALIAS and not fullname.startswith(ALIAS + "."):
            return None
        real = TARGET + fullname[len(ALIAS):]
        try:
            module = importlib.import_module(real)
        except ModuleNotFoundError as e:
            if e.name is not None and e.name.startswith(TARGET) and real.startswith(e.name):
                raise ModuleNotFoundError(f"tinygrad_tx has no module {real!r} (the code imports "
                                          f"{fullname!r})", name=fullname) from None
            raise
        if fullname == ALIAS:
            module = _TorchModule(module)
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(module))


@contextmanager
def torch_as_tinygrad_tx():
    """While active, ``import torch...`` gives tinygrad_tx's modules; afterwards ``sys.modules``
    and the import path are as they were (a real torch imported before comes back)."""
    saved = {k: v for k, v in sys.modules.items() if k == ALIAS or k.startswith(ALIAS + ".")}
    for k in saved:
        del sys.modules[k]
    finder = _TorchFinder()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for k in [k for k in sys.modules if k == ALIAS or k.startswith(ALIAS + ".")]:
            del sys.modules[k]
        sys.modules.update(saved)


_MISSING_ATTR = re.compile(r"module '(tinygrad_tx[\w.]*)' has no attribute '(\w+)'")
_MISSING_NAME = re.compile(r"cannot import name '(\w+)' from '((?:tinygrad_tx|torch)[\w.]*)'")


def missing_name(exc: BaseException) -> str | None:
    """The torch name a failure says tinygrad_tx lacks (``torch.nn.Foo``), or None."""
    text = str(exc)
    m = _MISSING_ATTR.search(text)
    if m:
        return ALIAS + m.group(1)[len(TARGET):] + "." + m.group(2)
    m = _MISSING_NAME.search(text)
    if m:
        module = m.group(2)
        return (ALIAS + module[len(TARGET):] if module.startswith(TARGET) else module) + "." + m.group(1)
    if isinstance(exc, ModuleNotFoundError) and exc.name and exc.name.startswith(ALIAS):
        return exc.name
    return None


def run_file(path: str, argv=()) -> int:
    """Run the script at ``path`` as ``__main__`` with ``sys.argv = [path, *argv]`` and ``torch``
    meaning tinygrad_tx. Returns the exit status (0, the script's ``sys.exit`` code, or 1 after
    an uncaught error, which is re-raised after a one-line note naming a missing torch name)."""
    import os
    if not os.path.isfile(path):
        raise FileNotFoundError(f"run: no such file: {path!r}")
    old_argv = sys.argv
    sys.argv = [path, *argv]
    try:
        with torch_as_tinygrad_tx():
            runpy.run_path(path, run_name="__main__")
    except SystemExit as e:
        code = e.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)             # sys.exit("message"): Python prints it and exits 1
        return 1
    except (AttributeError, ImportError) as e:
        name = missing_name(e)
        if name is not None:
            print(f"tinygrad-tx run: {path} uses {name}, which tinygrad_tx does not have "
                  f"({type(e).__name__}: {e})", file=sys.stderr)
        raise
    finally:
        sys.argv = old_argv
    return 0
