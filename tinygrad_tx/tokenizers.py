"""Subword tokenizers (tutorial section 9.1): byte-level BPE and WordPiece.

Character-level models need one position per character; subword tokenizers
cut text into frequent multi-character pieces so sequences get shorter.
Both tokenizers here split text into *words* first (pre-tokenization), then
cut every word into subword tokens independently, so no token crosses a word
boundary.

Byte-level BPE (``BPETokenizer``)
---------------------------------
*Alphabet.* The 256 possible bytes are tokens ``0..255``; any string is first
encoded as UTF-8, so every Unicode string can be tokenized, nothing is ever
unknown, and ``decode(encode(s)) == s`` exactly, for every ``s``.

*Training* (``BPETokenizer.train``) counts, over all words of the corpus
(weighted by word frequency), every pair of adjacent tokens, and merges the
most frequent pair into a new token, again and again until the vocabulary has
``vocab_size`` tokens (or no pair occurs ``min_frequency`` times). Ties are
broken deterministically: among pairs with the highest count, the smallest
``(left_id, right_id)`` wins. A merge whose bytes already form a token (the
same string reached by two different merge paths, e.g. ``a+bc`` and ``ab+c``)
reuses that token's id, so every byte string has exactly one id; the merge is
still recorded because encoding needs it.

*Encoding* a word starts from its bytes and repeatedly merges the leftmost
occurrence of the pair with the lowest merge rank (the earliest learned
merge), until no adjacent pair is a learned merge. This is exactly the rule of
Hugging Face ``tokenizers``' BPE model, so given the same vocabulary and
merges both produce the same ids (``tests/test_tokenizers.py`` checks it).
Each step scans the word (``O(len(word)**2)`` per word); results are cached
per word.

*Pre-tokenization.* ``split_pattern`` (a regular expression, default
``BPE_SPLIT_PATTERN``) cuts text into words in the style of GPT-2: a word is a
run of non-whitespace characters with at most one leading space; a run of
whitespace is its own word, except that its last space joins the following
word. Only ASCII whitespace (``\\t \\n \\v \\f \\r`` and space) counts as
whitespace, which makes the pattern mean the same in Python's ``re`` and in
Oniguruma (used by Hugging Face ``tokenizers``). ``split_pattern=None`` treats
the whole text as one word (merges may then cross spaces).

WordPiece (``WordPieceTokenizer``)
----------------------------------
BERT's tokenizer. The vocabulary holds word-initial pieces (``"play"``) and
continuation pieces marked with ``"##"`` (``"##ing"``). A word is cut greedily
left to right, always taking the *longest* vocabulary piece that matches at
the current position (``"playing"`` -> ``["play", "##ing"]``). If at some
position no piece matches, or the word has more than
``max_input_chars_per_word`` characters, the *whole word* becomes
``unk_token``. Words come from splitting on Unicode whitespace (the
``White_Space`` property, as Rust's ``char::is_whitespace``) and, with
``split_on_punctuation=True``, isolating every punctuation character as BERT
does (``BertPreTokenizer``).

``decode`` joins tokens with single spaces and glues ``##`` pieces onto the
previous token (Hugging Face's WordPiece decoder with ``cleanup=False``), so
what round-trips is the *word sequence*: whenever no word became
``unk_token`` and no word starts with the continuation prefix (a word
``"##x"`` would decode glued to the previous word),
``decode(encode(s)) == " ".join(pretokenize(s))``, which is ``s`` itself
when ``s`` is words separated by single spaces (and, with punctuation
splitting, contains no punctuation). Whitespace amount and kind are not
preserved.

``WordPieceTokenizer.train`` builds a vocabulary with the WordPiece
likelihood criterion: like BPE it merges adjacent pieces, but it picks the
pair maximising ``count(ab) / (count(a) * count(b))``, which favours pieces
whose parts rarely occur apart.
"""
from __future__ import annotations

import heapq
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence

_WS = "\\t\\n\\x0b\\x0c\\r "
BPE_SPLIT_PATTERN = rf" ?[^{_WS}]+|[{_WS}]+(?![^{_WS}])|[{_WS}]+"
"""GPT-2-style word split over ASCII whitespace (see the module docstring)."""

# Unicode White_Space property (what Rust's char::is_whitespace tests). Python's
# str.isspace differs: it also accepts U+001C..U+001F.
UNICODE_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000")


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


class _PairMerger:
    """Words as lists of symbols, with incrementally maintained pair counts (the heart of both trainers).

    ``pair_counts[(a, b)]`` is the number of times ``b`` directly follows
    ``a`` over all words, each word weighted by its frequency; with
    ``count_symbols``, ``symbol_counts`` counts single symbols the same way.
    ``merge`` replaces every occurrence of a pair (left to right,
    non-overlapping) by a new symbol, updating only the counts around each
    occurrence, and returns the pairs whose counts changed. ``where`` may list
    a word for a pair it no longer contains; merging such a word is a no-op.
    """

    def __init__(self, words: Sequence[list[Hashable]], freqs: Iterable[int], count_symbols: bool = False):
        self.words = [list(w) for w in words]
        self.freqs = list(freqs)
        self.pair_counts: Counter = Counter()
        self.symbol_counts: Counter | None = Counter() if count_symbols else None
        self.where: dict[tuple, set[int]] = {}      # pair -> indices of words that (may) contain it
        for i in range(len(self.words)):
            self._count(i)

    def _count(self, i: int):
        """Add word ``i``'s symbols and pairs to the counts."""
        word, f = self.words[i], self.freqs[i]
        if self.symbol_counts is not None:
            for s in word:
                self.symbol_counts[s] += f
        for pair in zip(word, word[1:]):
            self.pair_counts[pair] += f
            self.where.setdefault(pair, set()).add(i)

    def merge(self, pair: tuple, new_symbol: Hashable) -> set[tuple]:
        """Replace every ``pair`` by ``new_symbol``; return the pairs whose counts changed.

        Only the pairs touching an occurrence change. For an occurrence
        ``p a b n`` -> ``p X n`` (word frequency ``f``): ``(a, b)``, ``(p, a)``
        and ``(b, n)`` lose ``f``, ``(p, X)`` and ``(X, n)`` gain ``f``. Here
        ``p`` is the symbol already written to the merged word (possibly an
        ``X`` from the previous occurrence, whose ``(X, a)`` is then correctly
        replaced by ``(X, X)``) and ``n`` the symbol after ``b`` in the old word.
        """
        a, b = pair
        counts, changed = self.pair_counts, {pair}

        def add(p, delta, i=None):
            counts[p] += delta
            changed.add(p)
            if i is not None:
                self.where.setdefault(p, set()).add(i)

        for i in self.where.pop(pair, ()):
            word, f = self.words[i], self.freqs[i]
            merged, j = [], 0
            while j < len(word):
                if j + 1 < len(word) and word[j] == a and word[j + 1] == b:
                    add(pair, -f)
                    if merged:
                        add((merged[-1], a), -f)
                        add((merged[-1], new_symbol), +f, i)
                    if j + 2 < len(word):
                        add((b, word[j + 2]), -f)
                        add((new_symbol, word[j + 2]), +f, i)
                    if self.symbol_counts is not None:
                        self.symbol_counts[a] -= f
                        self.symbol_counts[b] -= f
                        self.symbol_counts[new_symbol] += f
                    merged.append(new_symbol)
                    j += 2
                else:
                    merged.append(word[j])
                    j += 1
            self.words[i] = merged
        for p in changed:
            if counts[p] == 0:
                del counts[p]
        if self.symbol_counts is not None:
            for s in (a, b):
                if self.symbol_counts[s] == 0:
                    del self.symbol_counts[s]
        return changed


# =============================================================================== BPE
class BPETokenizer:
    """Byte-level BPE: the 256 bytes plus learned merges (see the module docstring).

    Parameters
    ----------
    merges:
        Learned merges in rank order, each a pair of token ids ``(left, right)``.
        Token ids are assigned by replaying them: the bytes of a merge are the
        concatenation of its parts; new bytes get the next id, known bytes
        reuse their id.
    split_pattern:
        Pre-tokenization regex (default ``BPE_SPLIT_PATTERN``); ``None`` = no split.

    Attributes
    ----------
    merges: dict[tuple[int, int], int]
        ``(left, right) -> merged id``, in rank order (rank = position).
    vocab: dict[int, bytes]
        Every token id and its bytes (ids ``0..255`` are the single bytes).
    """

    def __init__(self, merges: Iterable[tuple[int, int]] = (), split_pattern: str | None = BPE_SPLIT_PATTERN):
        self.split_pattern = split_pattern
        self._split = re.compile(split_pattern) if split_pattern is not None else None
        self.vocab: dict[int, bytes] = {i: bytes([i]) for i in range(256)}
        self._ids: dict[bytes, int] = {v: k for k, v in self.vocab.items()}
        self.merges: dict[tuple[int, int], int] = {}
        self._ranks: dict[tuple[int, int], int] = {}
        for a, b in merges:
            self._add_merge(int(a), int(b))
        self._cache: dict[str, list[int]] = {}

    def _add_merge(self, a: int, b: int) -> int:
        """Record merge ``(a, b)`` (lowest rank not yet used); return the id of its bytes."""
        if a not in self.vocab or b not in self.vocab:
            raise ValueError(f"merge ({a}, {b}) refers to unknown token ids (vocabulary has {len(self.vocab)})")
        if (a, b) in self.merges:
            raise ValueError(f"merge ({a}, {b}) is listed twice")
        data = self.vocab[a] + self.vocab[b]
        new_id = self._ids.get(data)
        if new_id is None:
            new_id = len(self.vocab)
            self.vocab[new_id] = data
            self._ids[data] = new_id
        self._ranks[(a, b)] = len(self.merges)
        self.merges[(a, b)] = new_id
        return new_id

    def __len__(self) -> int:
        return len(self.vocab)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    # ---------------------------------------------------------------- training
    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int, min_frequency: int = 1,
              split_pattern: str | None = BPE_SPLIT_PATTERN) -> "BPETokenizer":
        """Learn merges on ``texts`` until the vocabulary has ``vocab_size`` tokens.

        Each step merges the pair with the highest count (ties: smallest
        ``(left_id, right_id)``). Training stops early when the best pair occurs
        fewer than ``min_frequency`` times (or no pair is left). A pair that
        reappears after being merged (possible only through reused ids) is
        merged again in the corpus but not listed twice.
        """
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 256:
            raise ValueError(f"vocab_size must be an integer >= 256 (the byte alphabet), got {vocab_size!r}")
        if min_frequency < 1:
            raise ValueError(f"min_frequency must be >= 1, got {min_frequency}")
        tok = cls(split_pattern=split_pattern)
        word_freqs = Counter(w for text in texts for w in tok.pretokenize(text))
        state = _PairMerger([list(w.encode("utf-8")) for w in word_freqs], word_freqs.values())
        # Max-heap of (-count, pair) with lazy deletion: an entry is stale when its
        # count is no longer the pair's count; stale entries are skipped when popped.
        heap = [(-c, p) for p, c in state.pair_counts.items()]
        heapq.heapify(heap)
        while len(tok.vocab) < vocab_size:
            while heap and -heap[0][0] != state.pair_counts.get(heap[0][1], 0):
                heapq.heappop(heap)
            if not heap or -heap[0][0] < min_frequency:
                break
            _, pair = heapq.heappop(heap)       # highest count; ties: smallest (left, right)
            new_id = tok.merges[pair] if pair in tok.merges else tok._add_merge(*pair)
            for p in state.merge(pair, new_id):
                if p in state.pair_counts:
                    heapq.heappush(heap, (-state.pair_counts[p], p))
        return tok

    # ---------------------------------------------------------- encode/decode
    def pretokenize(self, text: str) -> list[str]:
        """The words of ``text`` under ``split_pattern`` (their concatenation is ``text``)."""
        if not isinstance(text, str):
            raise TypeError(f"expected str, got {type(text).__name__}")
        if self._split is None:
            return [text] if text else []
        return self._split.findall(text)

    def _encode_word(self, word: str) -> list[int]:
        ids = list(word.encode("utf-8"))
        while len(ids) > 1:
            best_rank, best_pos = None, None
            for pos, pair in enumerate(zip(ids, ids[1:])):
                rank = self._ranks.get(pair)
                if rank is not None and (best_rank is None or rank < best_rank):
                    best_rank, best_pos = rank, pos
            if best_rank is None:
                break
            ids[best_pos:best_pos + 2] = [self.merges[(ids[best_pos], ids[best_pos + 1])]]
        return ids

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (any Unicode string)."""
        ids = []
        for word in self.pretokenize(text):
            cached = self._cache.get(word)
            if cached is None:
                if len(self._cache) >= 100_000:
                    self._cache.clear()
                cached = self._cache[word] = self._encode_word(word)
            ids.extend(cached)
        return ids

    def tokenize(self, text: str) -> list[bytes]:
        """The tokens of ``text`` as byte strings (a multi-byte character may be split across tokens)."""
        return [self.vocab[i] for i in self.encode(text)]

    def decode(self, ids: Iterable[int]) -> str:
        """The text of ``ids``; byte sequences that are not valid UTF-8 decode to U+FFFD."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        ids = list(ids)
        unknown = sorted({i for i in ids if i not in self.vocab})
        if unknown:
            raise ValueError(f"unknown token ids {unknown!r} (vocabulary has {len(self.vocab)} tokens)")
        return b"".join(self.vocab[i] for i in ids)

    def hf_vocab_and_merges(self) -> tuple[dict[str, int], list[tuple[str, str]]]:
        """The vocabulary and merges as strings in the GPT-2 byte-to-unicode alphabet.

        This is the format of Hugging Face ``tokenizers.models.BPE(vocab, merges)``
        (and of GPT-2's ``vocab.json``/``merges.txt``).
        """
        b2u = bytes_to_unicode()
        as_str = {i: "".join(b2u[b] for b in data) for i, data in self.vocab.items()}
        return {s: i for i, s in as_str.items()}, [(as_str[a], as_str[b]) for a, b in self.merges]


# ========================================================================= WordPiece
def _is_punctuation(ch: str) -> bool:
    """BERT's punctuation test: ASCII punctuation (``$``, ``+``, ``^`` ... included) or Unicode category P*."""
    return ch in string.punctuation or unicodedata.category(ch).startswith("P")


class WordPieceTokenizer:
    """Greedy longest-match-first WordPiece (see the module docstring).

    Parameters
    ----------
    vocab:
        A list of tokens (id = position) or a ``{token: id}`` mapping.
    unk_token:
        The token for words that cannot be cut into vocabulary pieces; must be in ``vocab``.
    max_input_chars_per_word:
        Longer words (in characters) become ``unk_token`` without being looked at.
    continuing_subword_prefix:
        Marks pieces that continue a word (default ``"##"``).
    split_on_punctuation:
        Also isolate punctuation characters as words (BERT's pre-tokenizer).
    """

    def __init__(self, vocab: Sequence[str] | Mapping[str, int], unk_token: str = "[UNK]",
                 max_input_chars_per_word: int = 100, continuing_subword_prefix: str = "##",
                 split_on_punctuation: bool = False):
        if isinstance(vocab, Mapping):
            self.vocab = {str(t): int(i) for t, i in vocab.items()}
        else:
            vocab = list(vocab)
            if len(set(vocab)) != len(vocab):
                dup = sorted({t for t, c in Counter(vocab).items() if c > 1})
                raise ValueError(f"repeated tokens in the vocabulary: {dup!r}")
            self.vocab = {t: i for i, t in enumerate(vocab)}
        self.ids_to_tokens = {i: t for t, i in self.vocab.items()}
        if len(self.ids_to_tokens) != len(self.vocab):
            raise ValueError("two tokens share an id in the vocabulary")
        if unk_token not in self.vocab:
            raise ValueError(f"unk_token {unk_token!r} is not in the vocabulary")
        if max_input_chars_per_word < 1:
            raise ValueError(f"max_input_chars_per_word must be >= 1, got {max_input_chars_per_word}")
        self.unk_token = unk_token
        self.unk_id = self.vocab[unk_token]
        self.max_input_chars_per_word = int(max_input_chars_per_word)
        self.prefix = continuing_subword_prefix
        self.split_on_punctuation = bool(split_on_punctuation)

    def __len__(self) -> int:
        return len(self.vocab)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def pretokenize(self, text: str) -> list[str]:
        """Split on Unicode whitespace and, with ``split_on_punctuation``, isolate punctuation characters."""
        if not isinstance(text, str):
            raise TypeError(f"expected str, got {type(text).__name__}")
        words, current = [], []
        for ch in text:
            if ch in UNICODE_WHITESPACE or (self.split_on_punctuation and _is_punctuation(ch)):
                if current:
                    words.append("".join(current))
                    current = []
                if ch not in UNICODE_WHITESPACE:
                    words.append(ch)
            else:
                current.append(ch)
        if current:
            words.append("".join(current))
        return words

    def tokenize_word(self, word: str) -> list[str]:
        """Cut one word into the longest matching pieces, left to right; ``[unk_token]`` if impossible."""
        if len(word) > self.max_input_chars_per_word:
            return [self.unk_token]
        pieces, start = [], 0
        while start < len(word):
            for end in range(len(word), start, -1):       # longest candidate first
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self.vocab:
                    pieces.append(piece)
                    start = end
                    break
            else:                                         # nothing matches at `start`
                return [self.unk_token]
        return pieces

    def tokenize(self, text: str) -> list[str]:
        """The token strings of ``text``."""
        return [piece for word in self.pretokenize(text) for piece in self.tokenize_word(word)]

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``."""
        return [self.vocab[piece] for piece in self.tokenize(text)]

    def decode(self, ids: Iterable[int]) -> str:
        """Join tokens with spaces, gluing continuation pieces (``##``) to the previous token.

        As Hugging Face's WordPiece decoder (``cleanup=False``): a continuation
        piece in first position keeps its prefix.
        """
        ids = list(ids)
        unknown = sorted({i for i in ids if i not in self.ids_to_tokens})
        if unknown:
            raise ValueError(f"unknown token ids {unknown!r}")
        out = []
        for k, i in enumerate(ids):
            token = self.ids_to_tokens[i]
            if k > 0 and token.startswith(self.prefix):
                out.append(token[len(self.prefix):])
            else:
                out.append(token if k == 0 else " " + token)
        return "".join(out)

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int, special_tokens: Sequence[str] = ("[UNK]",),
              min_frequency: int = 1, **kwargs) -> "WordPieceTokenizer":
        """Learn a vocabulary with the WordPiece likelihood criterion.

        Words are split into characters, the first as is and the others with
        the continuation prefix (``"hug"`` -> ``h ##u ##g``). The vocabulary
        starts as ``special_tokens`` followed by every such symbol (sorted).
        Each step merges the adjacent pair ``(a, b)`` with the highest score
        ``count(a b) / (count(a) * count(b))`` (ties: the smallest pair of
        strings, which need not be the pair the Hugging Face course's example
        picks among its ties) into ``a + b`` without ``b``'s prefix, until the vocabulary has
        ``vocab_size`` tokens or no pair occurs ``min_frequency`` times.
        ``special_tokens[0]`` becomes the ``unk_token``; other keyword
        arguments go to the constructor.
        """
        special_tokens = list(special_tokens)
        if not special_tokens:
            raise ValueError("special_tokens must contain at least the unk token")
        probe = cls(special_tokens, unk_token=special_tokens[0], **kwargs)
        prefix = probe.prefix
        word_freqs = Counter(w for text in texts for w in probe.pretokenize(text))
        words = [[w[0]] + [prefix + c for c in w[1:]] for w in word_freqs]
        alphabet = sorted({s for w in words for s in w} - set(special_tokens))
        vocab = special_tokens + alphabet
        if vocab_size < len(vocab):
            raise ValueError(f"vocab_size {vocab_size} is smaller than the special tokens plus the "
                             f"{len(alphabet)} initial symbols ({len(vocab)})")
        known = set(vocab)
        state = _PairMerger(words, word_freqs.values(), count_symbols=True)
        while len(vocab) < vocab_size:
            counts, singles = state.pair_counts, state.symbol_counts
            candidates = [pair for pair, count in counts.items() if count >= min_frequency]
            if not candidates:
                break
            # int / int is correctly rounded in Python, so equal ratios give equal floats
            # and ties are decided by the pair order, not by rounding noise.
            a, b = min(candidates, key=lambda p: (-counts[p] / (singles[p[0]] * singles[p[1]]), p))
            new = a + b[len(prefix):]         # b is never word-initial, so it carries the prefix
            if new not in known:
                vocab.append(new)
                known.add(new)
            state.merge((a, b), new)
        return cls(vocab, unk_token=special_tokens[0], **kwargs)
