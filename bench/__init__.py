"""Speed, accuracy and memory benchmark of tinygrad_tx against its PyTorch twins.

Run ``python -m bench`` (or ``python -m bench --quick``); ``main(argv)`` is the
entry point ``tinygrad-tx bench`` calls. See :mod:`bench.cli` for the process
layout and :mod:`bench.components` for the component table.
"""


def main(argv=None) -> int:
    from .cli import main as _main
    return _main(argv)


__all__ = ["main"]
