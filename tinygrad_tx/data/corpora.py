"""Names corpora: a newline-delimited file, or the US Census name lists shipped offline.

Two sources, one cleaning rule
------------------------------
``load_names(path)`` reads any newline-delimited file in the format of the
makemore ``names.txt`` (one name per line). ``load_names()`` with no path uses
an offline default that works right after ``pip install``: the first-name
lists of the 1990 US Census, which the small PyPI package ``names`` (MIT,
a 0.8 MB download, a runtime dependency of tinygrad_tx) ships as data files inside its
package directory. We read those files ourselves through
``importlib.resources``; the ``names`` package's own random-name functions are
not used.

Every line goes through the same explicit cleaning:

1. decode as UTF-8 (a leading byte-order mark is ignored; the census files are ASCII); a
   file that is not UTF-8 (binary, latin-1) is a ``ValueError`` naming the file, line and byte,
2. strip surrounding whitespace and lower-case (``str.lower``),
3. skip empty lines,
4. check every character against the vocabulary (by default ``CharVocab.tutorial()``,
   i.e. ``a``..``z``; the sentinel ``'$'`` is never allowed inside a name).
   A name with any other character (a space, a hyphen, an apostrophe, a digit,
   an accented letter) is *invalid*: with ``on_invalid='drop'`` (the default)
   it is dropped and one ``UserWarning`` reports how many were dropped and
   which characters caused it; with ``on_invalid='raise'`` a ``ValueError``
   lists the offending lines and characters.

A corpus left empty after cleaning raises ``ValueError``. A file keeps its
duplicates and its order (word frequency is part of the data); the census
default is de-duplicated because the male and female lists overlap.

The census files
----------------
``dist.male.first`` (1,219 names), ``dist.female.first`` (4,275 names) and
``dist.all.last`` (88,799 surnames); each line is
``NAME  percent_of_population  cumulative_percent  rank``, upper-case, sorted
by frequency. 331 first names appear in both first-name lists, so the default
corpus has 5,163 unique first names.
"""
from __future__ import annotations

import importlib.resources
import os
import warnings
from collections.abc import Iterable

import numpy as np

from .vocab import CharVocab

CENSUS_PACKAGE = "names"
CENSUS_FILES = {"male": "dist.male.first", "female": "dist.female.first", "last": "dist.all.last"}
ON_INVALID = ("drop", "raise")


def clean_names(lines: Iterable[str], vocab: CharVocab | None = None, on_invalid: str = "drop",
                source: str = "corpus") -> list[str]:
    """Strip, lower-case and validate raw lines (the cleaning rule in the module docstring).

    ``source`` only names the corpus in warnings and errors.
    """
    if on_invalid not in ON_INVALID:
        raise ValueError(f"on_invalid must be one of {ON_INVALID}, got {on_invalid!r}")
    vocab = CharVocab.tutorial() if vocab is None else vocab
    allowed = set(vocab.chars) - {vocab.sentinel}
    names, invalid = [], []
    for lineno, line in enumerate(lines, start=1):
        name = line.strip().lower()
        if not name:
            continue
        if set(name) <= allowed:
            names.append(name)
        else:
            invalid.append((lineno, name))
    if invalid:
        bad_chars = sorted(set().union(*(set(n) for _, n in invalid)) - allowed)
        examples = ", ".join(f"line {i}: {n!r}" for i, n in invalid[:5])
        message = (f"{len(invalid)} name(s) in {source} contain characters outside the vocabulary "
                   f"{bad_chars!r} (e.g. {examples})")
        if on_invalid == "raise":
            raise ValueError(message)
        warnings.warn(f"dropped {message}", UserWarning, stacklevel=3)
    if not names:
        raise ValueError(f"no names left in {source} after cleaning "
                         f"({len(invalid)} invalid, the rest empty lines)")
    return names


def load_names(path: str | os.PathLike | None = None, *, vocab: CharVocab | None = None,
               on_invalid: str = "drop") -> list[str]:
    """Load a names corpus as a list of lower-case strings.

    Parameters
    ----------
    path:
        A UTF-8, newline-delimited file with one name per line (e.g. makemore's
        ``names.txt``: 32,033 names). ``None`` loads the offline default: the
        5,163 unique US Census first names (``load_census_first_names``).
    vocab:
        The characters a name may use (minus the sentinel); default ``a``..``z``.
    on_invalid:
        ``'drop'`` (default: drop and warn with the count) or ``'raise'``.
    """
    if path is None:
        seen = dict.fromkeys(name for name, _ in load_census_first_names())
        return clean_names(seen, vocab=vocab, on_invalid=on_invalid, source="the US Census first names")
    with open(path, "rb") as f:
        lines = decode_utf8(f.read(), os.fspath(path)).splitlines()
    return clean_names(lines, vocab=vocab, on_invalid=on_invalid, source=os.fspath(path))


def decode_utf8(data: bytes, source: str) -> str:
    """``data`` as UTF-8 text (a leading byte-order mark dropped). Bytes that are not UTF-8 (a
    binary file, a latin-1 export) are a ``ValueError`` naming ``source``, the line and the byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise ValueError(f"{source}: line {line}, column {column}: byte 0x{data[e.start]:02x} is not UTF-8 "
                         f"(a binary file, or latin-1 text? names files must be UTF-8, e.g. "
                         f"iconv -f latin1 -t utf-8)") from None


def _read_census_file(key: str) -> list[str]:
    """Names from one census file of the ``names`` package, upper-case, in rank order."""
    try:
        root = importlib.resources.files(CENSUS_PACKAGE)
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "the offline names corpus needs the 'names' package (pip install names==0.3.0); "
            "or pass a path to a newline-delimited names file") from None
    filename = CENSUS_FILES[key]
    text = root.joinpath(filename).read_text(encoding="ascii")
    names = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 4:
            raise ValueError(f"{filename} line {lineno}: expected 'NAME percent cumulative rank', got {line!r}")
        names.append(fields[0])
    if not names:
        raise ValueError(f"{filename} in package {CENSUS_PACKAGE!r} holds no names")
    return names


def load_census_first_names() -> list[tuple[str, str]]:
    """``(name, gender)`` pairs from the 1990 US Census first-name lists, gender ``'male'``/``'female'``.

    Names are lower-cased and restricted to ``a``..``z``; each list is in its
    frequency-rank order, male list first (1,219 pairs) then female (4,275).
    A name on both lists (331 of them, e.g. ``'james'``, ``'mary'``) appears
    once per gender: a gender classifier must expect these ambiguous labels.
    """
    pairs = []
    for gender in ("male", "female"):
        names = clean_names(_read_census_file(gender), source=CENSUS_FILES[gender])
        pairs.extend((name, gender) for name in names)
    return pairs


def load_census_last_names() -> list[str]:
    """The 88,799 surnames of the 1990 US Census (``dist.all.last``), lower-cased, in rank order."""
    return clean_names(_read_census_file("last"), source=CENSUS_FILES["last"])


def split_names(names, seed: int = 42, fractions=(0.8, 0.1, 0.1)) -> tuple[list, ...]:
    """Deterministic random split, by default 80% train / 10% dev / 10% test.

    The order is ``np.random.default_rng(seed).permutation(len(names))``; the
    shuffled list is cut into consecutive parts: part ``i < k-1`` gets
    ``floor(fractions[i] * len(names))`` names and the last part gets the rest
    (for the 32,033 names of ``names.txt``: 25,626 / 3,203 / 3,204, the sizes
    of makemore's split). Same ``names``, ``seed`` and ``fractions`` give the
    same parts on every machine (NumPy's PCG64 stream is stable). The split is
    by position: a name listed twice in the corpus may land in two parts; de-
    duplicate first if dev/test must be unseen names.

    ``fractions`` must be positive and sum to 1; every part must be non-empty.
    Returns a tuple of lists, one per fraction.
    """
    names = list(names)
    fractions = [float(f) for f in fractions]
    if not fractions or any(f <= 0 for f in fractions) or abs(sum(fractions) - 1.0) > 1e-6:
        raise ValueError(f"fractions must be positive and sum to 1, got {fractions!r}")
    n = len(names)
    sizes = [int(np.floor(f * n)) for f in fractions[:-1]]
    sizes.append(n - sum(sizes))
    if min(sizes) == 0:
        raise ValueError(f"{n} names cannot be split by {fractions!r}: part sizes would be {sizes}")
    order = np.random.default_rng(seed).permutation(n)
    parts, start = [], 0
    for size in sizes:
        parts.append([names[i] for i in order[start:start + size]])
        start += size
    return tuple(parts)
