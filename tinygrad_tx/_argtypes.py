"""The command line's checked number types for argparse, shared by ``cli.py`` and the study
commands (``viz/commands.py``) so that neither imports the other."""
from __future__ import annotations

import argparse


def number(kind, lo=None, hi=None):
    """An argparse ``type`` that parses ``kind`` and checks ``lo <= value <= hi``."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'}, "
                                             f"got {text!r}") from None
        if kind is float and value != value:
            raise argparse.ArgumentTypeError("nan is not allowed")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            bounds = f">= {lo}" if hi is None else f"<= {hi}" if lo is None else f"in [{lo}, {hi}]"
            raise argparse.ArgumentTypeError(f"must be {bounds}, got {text}")
        return value
    parse.__name__ = kind.__name__
    return parse
