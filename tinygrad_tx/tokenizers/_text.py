"""Text handling shared by the tokenizers: checks, word splitting, the byte-level alphabet.

Every splitter returns *pieces* ``(piece, start)``: a piece is ``text[start:start + len(piece)]``
(the offsets of its tokens are computed from ``start``), except that a byte-level prefix space
(``add_prefix_space``) makes the piece one character longer than the text it covers; that
added space is aligned with the piece's first character, as in Hugging Face ``tokenizers``.
"""
from __future__ import annotations

import functools
import numbers
import operator
import re
import string
import sys
import unicodedata

_WS = "\\t\\n\\x0b\\x0c\\r "
BPE_SPLIT_PATTERN = rf" ?[^{_WS}]+|[{_WS}]+(?![^{_WS}])|[{_WS}]+"
"""GPT-2-style word split over ASCII whitespace (see the package docstring)."""

GPT2_SPLIT_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
"""GPT-2's own word split, as Hugging Face's ``ByteLevel(use_regex=True)`` applies it (Oniguruma syntax).

Python's ``re`` has no ``\\p{L}``: this exact string is compiled with explicit classes of the
Unicode letters (category L*), numbers (N*) and ``White_Space`` characters from Python's
``unicodedata`` (Unicode 14.0 on Python 3.11; a character assigned later may be classified
differently from the Rust side)."""

# Unicode White_Space property (what Rust's char::is_whitespace and Oniguruma's \s test).
# Python's str.isspace differs: it also accepts U+001C..U+001F.
UNICODE_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000")

_SURROGATE = re.compile("[\ud800-\udfff]")


def check_text(text, what: str = "text") -> str:
    """``text`` itself; TypeError if it is not a str, ValueError if it holds a lone surrogate.

    A lone surrogate (``"\\ud800"``, e.g. from ``errors="surrogateescape"``) is not a character:
    it has no UTF-8 encoding, so no tokenizer here (nor Hugging Face's) can take it.
    """
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, got {type(text).__name__}")
    bad = _SURROGATE.search(text)
    if bad:
        raise ValueError(f"{what} contains a lone surrogate U+{ord(bad.group()):04X} at index {bad.start()}; "
                         "it has no UTF-8 encoding (decode the bytes with errors='replace' first)")
    return text


def check_int(n, what: str, minimum: int | None = None) -> int:
    """An integer argument (``vocab_size``, ``min_frequency``, ``max_length``...): a non-int
    (bools included) is a TypeError, as Hugging Face ``tokenizers`` refuses it ("'str' object
    cannot be interpreted as an integer"); below ``minimum`` a ValueError."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{what} must be an int, got {type(n).__name__} ({n!r})")
    if minimum is not None and n < minimum:
        raise ValueError(f"{what} must be an integer >= {minimum}, got {n!r}")
    return int(n)


def check_ids(ids, what: str = "ids") -> list[int]:
    """Token ids to decode as a list of ints: a list/tuple of ints (NumPy ints too) or an
    integer Tensor/array; a str, a single int or a float id is a TypeError naming it."""
    if hasattr(ids, "tolist") and not isinstance(ids, (list, tuple)):
        ids = ids.tolist()
        ids = ids if isinstance(ids, list) else [ids]
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
        raise TypeError(f"{what} must be a list of int token ids, got {type(ids).__name__} ({ids!r})")
    out = []
    for k, i in enumerate(ids):
        if isinstance(i, bool):
            raise TypeError(f"{what}[{k}] must be an int token id, got bool ({i!r})")
        try:
            out.append(operator.index(i))
        except TypeError:
            raise TypeError(f"{what}[{k}] must be an int token id, got {type(i).__name__} ({i!r})") from None
    return out


def check_token_list(tokens, what: str = "special_tokens") -> list:
    """A list of tokens; a single str is a TypeError (it would be read as one token per character)."""
    if isinstance(tokens, (str, bytes)):
        raise TypeError(f"{what} must be a list of str, got the {type(tokens).__name__} {tokens!r}; "
                        f"wrap it in a list: [{tokens!r}]")
    try:
        return list(tokens)
    except TypeError:
        raise TypeError(f"{what} must be a list of str, got {type(tokens).__name__} ({tokens!r})") from None


def check_texts(texts, what: str = "texts") -> list[str]:
    """A list of training texts; TypeError for a single str (it would be read character by character)."""
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{what} must be an iterable of str (a list of texts), got a single "
                        f"{type(texts).__name__}; wrap it in a list: [{texts[:20]!r}]")
    try:
        texts = list(texts)
    except TypeError:
        raise TypeError(f"{what} must be an iterable of str, got {type(texts).__name__}") from None
    for k, t in enumerate(texts):
        check_text(t, f"{what}[{k}]")
    return texts


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map from the 256 bytes to printable characters.

    Printable Latin-1 bytes map to themselves; the other 68 (controls, space,
    ...) map to ``chr(256 + k)``. Byte-level BPE libraries (GPT-2, Hugging Face
    ``ByteLevel``) store tokens as strings of these characters.
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    mapping = {b: chr(b) for b in printable}
    k = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + k)
            k += 1
    return mapping


BYTE_TO_CHAR = bytes_to_unicode()
CHAR_TO_BYTE = {c: b for b, c in BYTE_TO_CHAR.items()}


def to_byte_level(data: bytes) -> str:
    return "".join(BYTE_TO_CHAR[b] for b in data)


# ------------------------------------------------------------------ split patterns
@functools.cache
def _category_class(prefix: str) -> str:
    """A regex character class body (ranges) of every code point whose category starts with ``prefix``."""
    ranges, start = [], None
    for c in range(sys.maxunicode + 2):
        inside = c <= sys.maxunicode and unicodedata.category(chr(c)).startswith(prefix)
        if inside and start is None:
            start = c
        elif not inside and start is not None:
            ranges.append(re.escape(chr(start)) + ("-" + re.escape(chr(c - 1)) if c - 1 > start else ""))
            start = None
    return "".join(ranges)


def compile_split_pattern(pattern: str | None):
    """The compiled ``split_pattern``, or None; clear errors for a non-string or invalid pattern."""
    if pattern is None:
        return None
    if not isinstance(pattern, str):
        raise TypeError(f"split_pattern must be a str (a regular expression) or None, got {type(pattern).__name__}")
    if pattern == GPT2_SPLIT_PATTERN:
        s = "".join(re.escape(c) for c in sorted(UNICODE_WHITESPACE))
        letters, numbers = _category_class("L"), _category_class("N")
        table = {r"[^\s\p{L}\p{N}]": f"[^{s}{letters}{numbers}]", r"\p{L}": f"[{letters}]",
                 r"\p{N}": f"[{numbers}]", r"\s": f"[{s}]", r"\S": f"[^{s}]"}
        pattern = re.sub("|".join(map(re.escape, table)), lambda m: table[m.group()], pattern)
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ValueError(f"split_pattern {pattern!r} is not a valid regular expression: {e}") from None


def split_isolated(regex, pieces):
    """Hugging Face's ``Split(..., behavior="isolated")``: every match and every gap between matches
    becomes its own piece; empty matches only mark a split point."""
    out = []
    for piece, start in pieces:
        words = regex.findall(piece) if regex.groups == 0 else None
        if words is not None and sum(map(len, words)) == len(piece):     # no gaps: the matches are the split
            for w in words:
                if w:
                    out.append((w, start))
                    start += len(w)
            continue
        prev = 0
        for m in regex.finditer(piece):
            s, e = m.span()
            if s > prev:
                out.append((piece[prev:s], start + prev))
            if e > s:
                out.append((piece[s:e], start + s))
                prev = e
            else:
                prev = max(prev, s)
        if prev < len(piece):
            out.append((piece[prev:], start + prev))
    return out


# Hugging Face's BertPreTokenizer classifies with an older Unicode table (Rust's unicode_categories
# crate) than Python's unicodedata: these P* characters, assigned or re-categorised since, are not
# punctuation there, and U+166D and U+111C9 (P* there, no longer in Python's table) are. Measured
# against tokenizers 0.23 over every code point.
_NOT_HF_PUNCTUATION = tuple(((0x61D, 0x61D), (0x9FD, 0x9FD), (0xA76, 0xA76), (0xC77, 0xC77), (0xC84, 0xC84), (0x1B7D, 0x1B7E), (0x2E43, 0x2E4F), (0x2E52, 0x2E5D), (0x10EAD, 0x10EAD), (0x10F55, 0x10F59), (0x10F86, 0x10F89), (0x1144B, 0x1144F), (0x1145A, 0x1145B), (0x1145D, 0x1145D), (0x11660, 0x1166C), (0x116B9, 0x116B9), (0x1183B, 0x1183B), (0x11944, 0x11946), (0x119E2, 0x119E2), (0x11A3F, 0x11A46), (0x11A9A, 0x11A9C), (0x11A9E, 0x11AA2), (0x11C41, 0x11C45), (0x11C70, 0x11C71), (0x11EF7, 0x11EF8), (0x11FFF, 0x11FFF), (0x12FF1, 0x12FF2), (0x16E97, 0x16E9A), (0x16FE2, 0x16FE2), (0x1E95E, 0x1E95F)))
_HF_PUNCTUATION = frozenset("\u166d\U000111c9")


def is_punctuation(ch: str) -> bool:
    """BERT's punctuation test as Hugging Face's BertPreTokenizer applies it: ASCII punctuation
    (``$``, ``+``, ``^`` ... included) or Unicode category P*, by its (older) Unicode table."""
    if ch in string.punctuation or ch in _HF_PUNCTUATION:
        return True
    if not unicodedata.category(ch).startswith("P"):
        return False
    c = ord(ch)
    return not any(lo <= c <= hi for lo, hi in _NOT_HF_PUNCTUATION)


def split_whitespace(pieces, punctuation: bool = False):
    """Split on Unicode whitespace (dropped) and, with ``punctuation``, isolate punctuation characters
    (Hugging Face's ``WhitespaceSplit`` and ``BertPreTokenizer``)."""
    out = []
    for piece, start in pieces:
        word_start = None
        for k, ch in enumerate(piece):
            if ch in UNICODE_WHITESPACE or (punctuation and is_punctuation(ch)):
                if word_start is not None:
                    out.append((piece[word_start:k], start + word_start))
                    word_start = None
                if ch not in UNICODE_WHITESPACE:
                    out.append((ch, start + k))
            elif word_start is None:
                word_start = k
        if word_start is not None:
            out.append((piece[word_start:], start + word_start))
    return out
