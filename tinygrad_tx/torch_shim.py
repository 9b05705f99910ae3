"""Run PyTorch code on tinygrad_tx: ``import torch`` (and ``torch.nn``, ``torch.utils.data``, ...)
loads the matching tinygrad_tx module while :func:`torch_as_tinygrad_tx` is active.

This is the same change as replacing the word ``torch`` by ``tinygrad_tx`` in the source, done
by an import hook instead of an edit, so a learner's script runs unchanged:

    tinygrad-tx run my_model.py --epochs 2

When the script uses a name tinygrad_tx does not have, :func:`run_file` says which one
(``torch.foo``), rather than leaving only a traceback.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import re
import runpy
import sys
from contextlib import contextmanager

ALIAS = "torch"
TARGET = "tinygrad_tx"


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class _TorchFinder(importlib.abc.MetaPathFinder):
    """Resolves ``torch[.x.y]`` to the already imported ``tinygrad_tx[.x.y]``."""

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
_MISSING_NAME = re.compile(r"cannot import name '(\w+)' from '(tinygrad_tx[\w.]*)'")


def missing_name(exc: BaseException) -> str | None:
    """The torch name a failure says tinygrad_tx lacks (``torch.nn.Foo``), or None."""
    text = str(exc)
    m = _MISSING_ATTR.search(text)
    if m:
        return ALIAS + m.group(1)[len(TARGET):] + "." + m.group(2)
    m = _MISSING_NAME.search(text)
    if m:
        return ALIAS + m.group(2)[len(TARGET):] + "." + m.group(1)
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
