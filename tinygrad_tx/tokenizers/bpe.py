"""Byte-level BPE (see the package docstring): training, encoding with offsets, the file format."""
from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Mapping

from ._merger import _PairMerger
from ._text import (BPE_SPLIT_PATTERN, CHAR_TO_BYTE, GPT2_SPLIT_PATTERN, check_ids, check_int, check_text, check_texts,
                    check_token_list, compile_split_pattern, split_isolated, to_byte_level)
from .base import SubwordTokenizer

_CACHE_SIZE = 100_000


class BPETokenizer(SubwordTokenizer):
    """Byte-level BPE: the 256 bytes plus learned merges, plus special tokens.

    Parameters
    ----------
    merges:
        Learned merges in rank order, each a pair of token ids ``(left, right)``.
        Token ids are assigned by replaying them: the bytes of a merge are the
        concatenation of its parts; new bytes get the next id, known bytes
        reuse their id.
    split_pattern:
        Pre-tokenization regex (default ``BPE_SPLIT_PATTERN``; ``GPT2_SPLIT_PATTERN`` is
        GPT-2's); ``None`` = no split.
    special_tokens:
        Tokens matched whole in any text (``"<|endoftext|>"``), with ids after the merges'.
    vocab:
        Instead of the 256 bytes: ``{id: bytes}`` of every token (what a file holds); the
        merges must then produce tokens of this vocabulary.
    unk_token, fuse_unk, ignore_merges, add_prefix_space, trim_offsets:
        Hugging Face's ``BPE``/``ByteLevel`` options, for files it wrote: the token for a
        byte missing from ``vocab`` (default: such bytes are dropped), consecutive unknowns
        as one, a word that is a token taken whole, a space put before each text
        (``add_prefix_space``), token offsets without their leading/trailing spaces
        (``trim_offsets``: the ``ByteLevel`` post-processor; None = none).

    Attributes
    ----------
    merges: dict[tuple[int, int], int]
        ``(left, right) -> merged id``, in rank order (rank = position).
    vocab: dict[int, bytes]
        Every model token id and its bytes (ids ``0..255`` are the single bytes unless
        ``vocab`` was given); special tokens are in ``special_tokens``.
    """

    model_type = "BPE"

    def __init__(self, merges: Iterable[tuple[int, int]] = (), split_pattern: str | None = BPE_SPLIT_PATTERN,
                 special_tokens: Iterable[str] = (), *, vocab: Mapping[int, bytes] | None = None,
                 unk_token: str | None = None, fuse_unk: bool = False, ignore_merges: bool = False,
                 add_prefix_space: bool = False, trim_offsets: bool | None = None):
        self.split_pattern = split_pattern
        self._split = compile_split_pattern(split_pattern)
        self._regex_in_byte_level = split_pattern == GPT2_SPLIT_PATTERN
        self.fixed_vocab = vocab is not None
        self.vocab: dict[int, bytes] = ({int(i): bytes(b) for i, b in vocab.items()} if vocab is not None
                                        else {i: bytes([i]) for i in range(256)})
        self._ids: dict[bytes, int] = {v: k for k, v in self.vocab.items()}
        if len(self._ids) != len(self.vocab):
            raise ValueError("two token ids share the same bytes in the vocabulary")
        self._byte_ids = {b[0]: i for b, i in self._ids.items() if len(b) == 1}
        self.merges: dict[tuple[int, int], int] = {}
        self._ranks: dict[tuple[int, int], int] = {}
        if isinstance(merges, (str, bytes)) or not hasattr(merges, "__iter__"):
            raise TypeError(f"merges must be a list of (id, id) pairs, got {type(merges).__name__} ({merges!r})")
        for k, pair in enumerate(merges):
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise TypeError(f"merges[{k}] must be a pair of token ids, got {pair!r}")
            a, b = check_ids(pair, f"merges[{k}]")
            self._add_merge(a, b)
        self.unk_token, self.fuse_unk, self.ignore_merges = unk_token, bool(fuse_unk), bool(ignore_merges)
        self.unk_id = None if unk_token is None else self._ids.get(unk_token.encode("utf-8"))
        if unk_token is not None and self.unk_id is None:
            raise ValueError(f"unk_token {unk_token!r} is not in the vocabulary")
        self.add_prefix_space, self.trim_offsets = bool(add_prefix_space), trim_offsets
        self._post_prefix_space = self.add_prefix_space     # the ByteLevel post-processor's own flag
        self._cache: dict[str, list[tuple[int, int, int]]] = {}
        self._token_strs: dict[int, str] = {}
        self._init_specials(special_tokens)

    def _add_merge(self, a: int, b: int) -> int:
        """Record merge ``(a, b)`` (lowest rank not yet used); return the id of its bytes."""
        if a not in self.vocab or b not in self.vocab:
            raise ValueError(f"merge ({a}, {b}) refers to unknown token ids (vocabulary has {len(self.vocab)})")
        if (a, b) in self.merges:
            raise ValueError(f"merge ({a}, {b}) is listed twice")
        data = self.vocab[a] + self.vocab[b]
        new_id = self._ids.get(data)
        if new_id is None:
            if self.fixed_vocab:
                raise ValueError(f"merge ({a}, {b}) makes {to_byte_level(data)!r}, which is not in the vocabulary")
            new_id = len(self.vocab)
            self.vocab[new_id] = data
            self._ids[data] = new_id
        self._ranks[(a, b)] = len(self.merges)
        self.merges[(a, b)] = new_id
        return new_id

    def _token_to_id(self, token: str):
        try:
            data = bytes(CHAR_TO_BYTE[c] for c in token)
        except KeyError:
            return None
        return self._ids.get(data)

    def _max_model_id(self) -> int:
        return max(self.vocab, default=-1)

    def id_to_token(self, i: int) -> str | None:
        """The token string of id ``i`` (byte-level characters, as in ``tokenizer.json``)."""
        i = check_int(i, "id")
        if i in self._special_ids:
            return self._special_ids[i]
        s = self._token_strs.get(i)
        if s is None and i in self.vocab:
            s = self._token_strs[i] = to_byte_level(self.vocab[i])
        return s

    def _model_size(self) -> int:
        return len(self.vocab)

    # ---------------------------------------------------------------- training
    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int, min_frequency: int = 1,
              split_pattern: str | None = BPE_SPLIT_PATTERN, special_tokens: Iterable[str] = ()) -> "BPETokenizer":
        """Learn merges on ``texts`` until the vocabulary (special tokens included) has ``vocab_size`` tokens.

        Each step merges the pair with the highest count (ties: smallest
        ``(left_id, right_id)``). Training stops early when the best pair occurs
        fewer than ``min_frequency`` times (or no pair is left). A pair that
        reappears after being merged (possible only through reused ids) is
        merged again in the corpus but not listed twice. Special tokens are cut
        out of the texts (they are never merged) and get the last ids.
        """
        texts = check_texts(texts)
        special_tokens = check_token_list(special_tokens, "special_tokens")
        if check_int(vocab_size, "vocab_size") < 256 + len(special_tokens):
            raise ValueError(f"vocab_size must be an integer >= 256 (the byte alphabet) + {len(special_tokens)} "
                             f"special tokens, got {vocab_size!r}")
        if check_int(min_frequency, "min_frequency") < 1:
            raise ValueError(f"min_frequency must be >= 1, got {min_frequency}")
        cut = cls(split_pattern=None, special_tokens=special_tokens)._special_split
        tok = cls(split_pattern=split_pattern)
        n_merged = vocab_size - len(special_tokens)
        word_freqs = Counter()
        for text in texts:
            for segment in (cut.split(text) if cut is not None else (text,)):
                word_freqs.update(p for p, _, _ in tok._pieces(segment))
        state = _PairMerger([list(w.encode("utf-8")) for w in word_freqs], word_freqs.values())
        # Max-heap of (-count, pair), lazily updated: a merge pushes the pairs whose count grew;
        # an entry whose pair's count has since shrunk is re-pushed with the true count when it
        # reaches the top. Every pair's newest entry is >= its true count, so an accurate top is
        # the most frequent pair (ties: smallest (left, right)).
        heap = [(-c, p) for p, c in state.pair_counts.items()]
        heapq.heapify(heap)
        counts = state.pair_counts
        while len(tok.vocab) < n_merged and heap:
            stored, pair = heap[0]
            count = counts.get(pair, 0)
            if -stored != count:
                if count:
                    heapq.heapreplace(heap, (-count, pair))
                else:
                    heapq.heappop(heap)
                continue
            if count < min_frequency:
                break
            heapq.heappop(heap)
            ids = (ord(pair[0]), ord(pair[1]))
            new_id = tok.merges[ids] if ids in tok.merges else tok._add_merge(*ids)
            for p, c in state.merge(pair, chr(new_id)).items():
                heapq.heappush(heap, (-c, p))
        tok.add_special_tokens(special_tokens)      # ids after the merges'
        return tok

    # ---------------------------------------------------------- encode/decode
    def _pieces(self, text: str, start: int = 0) -> list[tuple[str, int, int]]:
        """``(piece, start, floor)``: a prefix space sits at ``start - 1`` and is aligned with the
        character at ``floor`` (its offsets are that character's, as in Hugging Face)."""
        if not text:
            return []
        floor = start
        prefix = self.add_prefix_space and not text.startswith(" ")
        if prefix and self._regex_in_byte_level:      # ByteLevel(use_regex=True): prefix, then GPT-2's split
            text, start = " " + text, start - 1
        pieces = [(text, start)] if self._split is None else split_isolated(self._split, [(text, start)])
        if self.add_prefix_space and not self._regex_in_byte_level:     # Split, then ByteLevel's prefix
            return [(p, s, s) if p.startswith(" ") else (" " + p, s - 1, s) for p, s in pieces]
        return [(p, s, floor) for p, s in pieces]

    def pretokenize(self, text: str) -> list[str]:
        """The words of ``text`` under ``split_pattern`` (their concatenation is ``text``)."""
        return [p for p, _, _ in self._pieces(check_text(text))]

    def _encode_word(self, word: str) -> list[tuple[int, int, int]]:
        """``(id, first byte, end byte)`` of each token of ``word``: its bytes, then merges by rank.

        A byte missing from the vocabulary becomes ``unk_token`` or is dropped (then its
        neighbours may merge across it, as in Hugging Face's BPE). After a drop, positions
        are Hugging Face's: it counts the kept symbols' lengths in its byte-level string
        (UTF-8 bytes of the byte characters: 1 for ``!``..``~``, else 2) and maps that back.
        """
        data = word.encode("utf-8")
        if self.ignore_merges and data in self._ids:
            return [(self._ids[data], 0, len(data))]
        syms, dropped, pos = [], False, 0
        for k, byte in enumerate(data):
            i = self._byte_ids.get(byte)
            if i is None and self.unk_id is None:
                dropped = True
                continue
            n = 1 if 0x21 <= byte <= 0x7E else 2
            if i is None and self.fuse_unk and syms and syms[-1][0] == self.unk_id:
                syms[-1] = (self.unk_id, syms[-1][1], k + 1, syms[-1][3], pos + n)
            else:
                syms.append((self.unk_id if i is None else i, k, k + 1, pos, pos + n))
            pos += n
        if dropped:         # byte of each position of the byte-level string
            byte_of = [k for k, b in enumerate(data) for _ in range(1 if 0x21 <= b <= 0x7E else 2)]
            syms = [(i, byte_of[ns], byte_of[ne - 1] + 1) for i, _, _, ns, ne in syms]
        else:
            syms = [sym[:3] for sym in syms]
        ranks, merges = self._ranks, self.merges
        while len(syms) > 1:
            best_rank, best_pos = None, None
            for pos in range(len(syms) - 1):
                rank = ranks.get((syms[pos][0], syms[pos + 1][0]))
                if rank is not None and (best_rank is None or rank < best_rank):
                    best_rank, best_pos = rank, pos
            if best_rank is None:
                break
            (a, s, _), (b, _, e) = syms[best_pos], syms[best_pos + 1]
            syms[best_pos:best_pos + 2] = [(merges[(a, b)], s, e)]
        return syms

    def _word_tokens(self, word: str):
        cached = self._cache.get(word)
        if cached is None:
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            cached = self._cache[word] = self._encode_word(word)
        return cached

    def _encode_words(self, text, offset, ids, tokens, offsets):
        for piece, start, floor in self._pieces(text, offset):
            syms = self._word_tokens(piece)
            if piece.isascii():
                char_of = None
            else:                               # byte index -> index of its character in the piece
                char_of = [k for k, ch in enumerate(piece) for _ in range(len(ch.encode("utf-8")))]
            for i, s, e in syms:
                ids.append(i)
                tokens.append(self.id_to_token(i))
                if char_of is not None:
                    s, e = char_of[s], char_of[e - 1] + 1
                offsets.append((max(start + s, floor), max(start + e, floor + 1)))

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """Token ids of ``text`` (any Unicode string without lone surrogates)."""
        if self._special_split is None and self.template is None and self.truncation is None:
            check_text(text)
            return [i for piece, _, _ in self._pieces(text) for i, _, _ in self._word_tokens(piece)]
        return self.encode_plus(text, add_special_tokens=add_special_tokens).ids

    def _finish_offsets(self, enc, first):
        """Hugging Face's ``ByteLevel`` post-processor with ``trim_offsets``: leading and trailing
        spaces ('Ġ') of a token leave its offsets (a prefix space it added itself stays)."""
        if not self.trim_offsets:
            return
        for k, (token, (s, e)) in enumerate(zip(enc.tokens, enc.offsets)):
            lead = len(token) - len(token.lstrip("Ġ"))
            trail = len(token) - len(token.rstrip("Ġ"))
            if lead and (k == 0 or s == 0) and self._post_prefix_space and lead == 1:
                lead = 0
            if lead:
                s = min(s + lead, e)
            if trail and e >= trail:
                e = max(e - trail, s)
            enc.offsets[k] = (s, e)

    def tokenize(self, text: str) -> list[bytes]:
        """The tokens of ``text`` as byte strings (a multi-byte character may be split across tokens)."""
        return [self.vocab[i] if i in self.vocab else self._special_ids[i].encode("utf-8") for i in self.encode(text)]

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = False) -> str:
        """The text of ``ids``; byte sequences that are not valid UTF-8 decode to U+FFFD."""
        return self.decode_bytes(ids, skip_special_tokens).decode("utf-8", errors="replace")

    def decode_bytes(self, ids: Iterable[int], skip_special_tokens: bool = False) -> bytes:
        ids = check_ids(ids)
        unknown = sorted({i for i in ids if i not in self.vocab and i not in self._special_ids})
        if unknown:
            raise ValueError(f"unknown token ids {unknown!r} (vocabulary has {len(self)} tokens)")
        specials = self._special_ids
        return b"".join(self._special_ids[i].encode("utf-8") if i in specials and not skip_special_tokens
                        else b"" if i in specials else self.vocab[i] for i in ids)

    def hf_vocab_and_merges(self) -> tuple[dict[str, int], list[tuple[str, str]]]:
        """The vocabulary and merges as strings in the GPT-2 byte-to-unicode alphabet.

        This is the format of Hugging Face ``tokenizers.models.BPE(vocab, merges)``
        (and of GPT-2's ``vocab.json``/``merges.txt``).
        """
        as_str = {i: to_byte_level(data) for i, data in self.vocab.items()}
        return {s: i for i, s in as_str.items()}, [(as_str[a], as_str[b]) for a, b in self.merges]

    # ---------------------------------------------------------- tokenizer.json
    def _model_json(self) -> dict:
        vocab, merges = self.hf_vocab_and_merges()
        return {"type": "BPE", "dropout": None, "unk_token": self.unk_token, "continuing_subword_prefix": None,
                "end_of_word_suffix": None, "fuse_unk": self.fuse_unk, "byte_fallback": False,
                "ignore_merges": self.ignore_merges, "vocab": vocab, "merges": [list(m) for m in merges]}

    def _byte_level_json(self, use_regex: bool) -> dict:
        return {"type": "ByteLevel", "add_prefix_space": self.add_prefix_space, "trim_offsets": True,
                "use_regex": use_regex}

    def _pre_tokenizer_json(self):
        if self._regex_in_byte_level or self.split_pattern is None:
            return self._byte_level_json(self._regex_in_byte_level)
        return {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": self.split_pattern}, "behavior": "Isolated", "invert": False},
            self._byte_level_json(False)]}

    def _post_processor_json(self) -> list[dict]:
        posts = [] if self.trim_offsets is None else [
            {"type": "ByteLevel", "add_prefix_space": self._post_prefix_space, "trim_offsets": self.trim_offsets,
             "use_regex": True}]
        return posts + self._template_json()

    def _decoder_json(self) -> dict:
        return {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}


def char_tokenizer(chars) -> BPETokenizer:
    """A tokenizer with one token per character, character ``chars[k]`` having id ``k``.

    A byte-level BPE without merges over just these characters (each must be one byte:
    ASCII), with no word split: the ids of a character vocabulary (``CharVocab``), in a
    ``tokenizer.json`` Hugging Face loads. ``encode`` of an unknown character drops it,
    as Hugging Face's BPE without ``unk_token``; use :func:`encode_known` to refuse it.
    """
    chars = list(chars)
    bad = [c for c in chars if not isinstance(c, str) or len(c) != 1 or not c.isascii()]
    if bad or len(set(chars)) != len(chars):
        raise ValueError(f"char_tokenizer needs distinct single ASCII characters, got {bad or chars!r}")
    return BPETokenizer(split_pattern=None, vocab={k: c.encode("ascii") for k, c in enumerate(chars)})


def encode_known(tokenizer, text: str) -> list[int]:
    """``tokenizer.encode(text)``, but a ValueError if a character has no token (it would be dropped)."""
    ids = tokenizer.encode(text)
    if sum(len(tokenizer.vocab[i]) for i in ids) != len(text.encode("utf-8")):
        missing = sorted({c for c in text if tokenizer.token_to_id(c) is None})
        raise ValueError(f"{text!r}: characters {missing!r} are not in the tokenizer's vocabulary")
    return ids
