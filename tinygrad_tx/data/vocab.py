"""``CharVocab``: the character vocabulary of the names model (tutorial section 2.1).

A vocabulary is a bijection between a small alphabet of characters and the
contiguous integers ``0 .. len(vocab) - 1``:

* ``stoi`` ("string to int") maps a character to its index,
* ``itos`` ("int to string") maps an index back to its character.

Index 0 is always the sentinel ``'$'``. It plays two roles: it is the
start-of-sequence prompt the model is conditioned on before the first letter,
and the end-of-sequence label the model must predict after the last letter.
A name therefore never contains the sentinel itself.

``CharVocab.tutorial()`` is exactly the tutorial's vocabulary::

    vocab = ['$'] + ['a', ..., 'z']          # 27 symbols
    stoi  = {'$': 0, 'a': 1, ..., 'z': 26}
    itos  = {0: '$', 1: 'a', ..., 26: 'z'}

so ``encode('$john$') == [0, 10, 15, 8, 14, 0]``.
"""
from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence


SENTINEL = "$"


class CharVocab:
    """A character vocabulary with the sentinel at index 0.

    Parameters
    ----------
    chars:
        The symbols in index order. ``chars[0]`` must be the sentinel; every
        entry must be a single character and appear once.
    sentinel:
        The start/end-of-sequence symbol (default ``'$'``).

    Attributes
    ----------
    chars: list[str]
        ``itos`` as a list: ``chars[i]`` is the symbol with index ``i``.
    stoi: dict[str, int]
    itos: dict[int, str]
    sentinel: str
    sentinel_id: int
        Always 0.
    """

    def __init__(self, chars: Sequence[str], sentinel: str = SENTINEL):
        chars = list(chars)
        if not chars or chars[0] != sentinel:
            raise ValueError(f"the first symbol of a CharVocab must be the sentinel {sentinel!r}, "
                             f"got {chars[:1]!r}")
        bad = [c for c in chars if not isinstance(c, str) or len(c) != 1]
        if bad:
            raise ValueError(f"every symbol must be a single character; got {bad!r}")
        if len(set(chars)) != len(chars):
            dup = sorted({c for c in chars if chars.count(c) > 1})
            raise ValueError(f"symbols must be unique; repeated: {dup!r}")
        self.chars = chars
        self.sentinel = sentinel
        self.sentinel_id = 0
        self.stoi = {c: i for i, c in enumerate(chars)}
        self.itos = {i: c for i, c in enumerate(chars)}

    # ------------------------------------------------------------------ builders
    @classmethod
    def tutorial(cls) -> "CharVocab":
        """The tutorial's 27-symbol vocabulary: ``['$'] + ['a', ..., 'z']``."""
        return cls([SENTINEL] + [chr(i) for i in range(ord("a"), ord("z") + 1)])

    @classmethod
    def from_corpus(cls, texts: Iterable[str], sentinel: str = SENTINEL) -> "CharVocab":
        """The sentinel followed by every character of ``texts``, sorted by code point.

        Raises ``ValueError`` when the corpus is empty or contains the sentinel
        (a name containing the end-of-sequence symbol could not be decoded
        unambiguously).
        """
        texts = list(texts)
        alphabet = set().union(*map(set, texts)) if texts else set()
        if not alphabet:
            raise ValueError("cannot build a vocabulary from an empty corpus")
        if sentinel in alphabet:
            raise ValueError(f"the corpus contains the sentinel {sentinel!r}; "
                             "pick another sentinel or clean the corpus")
        return cls([sentinel] + sorted(alphabet), sentinel=sentinel)

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        return len(self.chars)

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def __contains__(self, ch: str) -> bool:
        return ch in self.stoi

    def __eq__(self, other) -> bool:
        return isinstance(other, CharVocab) and self.chars == other.chars and self.sentinel == other.sentinel

    def __hash__(self) -> int:
        return hash((tuple(self.chars), self.sentinel))

    def __repr__(self) -> str:
        return f"CharVocab({''.join(self.chars)!r})"

    def unknown_chars(self, text: str | Iterable[str]) -> list[str]:
        """The characters of ``text`` (a string or several) that are not in the vocabulary, sorted and unique."""
        if isinstance(text, str):
            text = [text]
        return sorted(set().union(*map(set, text)) - self.stoi.keys())

    # ------------------------------------------------------------ encode/decode
    def encode(self, text: str) -> list[int]:
        """``[stoi[c] for c in text]``; unknown characters raise ``ValueError`` listing all of them,
        anything but a ``str`` (``None``, a list, bytes) a ``TypeError``."""
        if not isinstance(text, str):
            raise TypeError(f"encode expects a str, got {type(text).__name__} ({text!r})")
        try:
            return [self.stoi[c] for c in text]
        except KeyError:
            raise ValueError(f"characters not in the vocabulary: {self.unknown_chars(text)!r} "
                             f"(in {text!r}; vocabulary is {''.join(self.chars)!r})") from None

    def decode(self, ids: Iterable[int]) -> str:
        """``''.join(itos[i] for i in ids)``; accepts any iterable of integers (a list, a NumPy array)."""
        try:
            ids = [operator.index(i) for i in ids]
        except TypeError:
            raise TypeError(f"decode expects integer token ids, got {ids!r}") from None
        bad = sorted({i for i in ids if not 0 <= i < len(self.chars)})
        if bad:
            raise ValueError(f"token ids out of range [0, {len(self.chars)}): {bad!r}")
        return "".join(self.chars[i] for i in ids)
