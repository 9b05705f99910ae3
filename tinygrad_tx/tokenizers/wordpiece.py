"""WordPiece (see the package docstring): greedy longest-match encoding, training (Hugging Face's
count-based merges, or the likelihood score), files."""
from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from ._merger import _PairMerger
from ._text import check_ids, check_int, check_texts, check_token_list, split_whitespace
from .base import SubwordTokenizer

BERT_SPECIAL_TOKENS = ("[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]")
BERT_TEMPLATE = ("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1")

# Hugging Face's WordPiece decoder with cleanup=True: these replacements, on each token.
_CLEANUP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
            (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


def _most_frequent_pairs(state: _PairMerger):
    """Yield the most frequent pair of ``state`` (ties: the smallest pair of ids), again after
    each merge, whose grown pairs are sent back in (``gen.send(grown)``). As Hugging Face's
    trainer: a heap of ``(-count, pair)``, where an entry whose count has since changed is
    put back with its current count when it comes up."""
    heap = [(-c, p) for p, c in state.pair_counts.items()]
    heapq.heapify(heap)
    while heap:
        negative, pair = heapq.heappop(heap)
        count = state.pair_counts.get(pair, 0)
        if count != -negative:                   # stale: changed since it was pushed
            if count > 0:
                heapq.heappush(heap, (-count, pair))
            continue
        grown = yield pair
        yield None                               # the value of send()
        for p, c in grown.items():
            heapq.heappush(heap, (-c, p))


def _most_likely_pairs(state: _PairMerger, vocab: list, min_frequency: int):
    """Yield the pair occurring at least ``min_frequency`` times with the highest
    ``count(a b) / (count(a) * count(b))`` (ties: the smallest pair of strings) until there is
    none; ``state`` is read afresh for each."""
    while True:
        counts, singles = state.pair_counts, state.symbol_counts
        candidates = [pair for pair, count in counts.items() if count >= min_frequency]
        if not candidates:
            return
        # int / int is correctly rounded in Python, so equal ratios give equal floats
        # and ties are decided by the pair order, not by rounding noise.
        yield min(candidates, key=lambda p: (-counts[p] / (singles[p[0]] * singles[p[1]]),
                                             vocab[ord(p[0])], vocab[ord(p[1])]))


class WordPieceTokenizer(SubwordTokenizer):
    """Greedy longest-match-first WordPiece (see the package docstring).

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
    special_tokens:
        Tokens matched whole in any text (``[CLS]``, ``[SEP]``, ``[PAD]``, ``[MASK]``); one
        that is not in ``vocab`` gets the next id.
    cleanup:
        ``decode`` glues punctuation and contractions back (``" ,"`` -> ``","``), as Hugging
        Face's WordPiece decoder with ``cleanup=True``.
    """

    model_type = "WordPiece"

    def __init__(self, vocab: Sequence[str] | Mapping[str, int], unk_token: str = "[UNK]",
                 max_input_chars_per_word: int = 100, continuing_subword_prefix: str = "##",
                 split_on_punctuation: bool = False, special_tokens: Iterable[str] = (), cleanup: bool = False):
        if isinstance(vocab, (str, bytes)) or not isinstance(vocab, (Mapping, Iterable)):
            raise TypeError(f"vocab must be a list of token strings or a dict token -> id, got "
                            f"{type(vocab).__name__} ({vocab!r})")
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
        if isinstance(max_input_chars_per_word, bool) or not isinstance(max_input_chars_per_word, int) \
                or max_input_chars_per_word < 1:
            raise ValueError(f"max_input_chars_per_word must be an integer >= 1, got {max_input_chars_per_word!r}")
        if not isinstance(continuing_subword_prefix, str) or not continuing_subword_prefix:
            raise ValueError(f"continuing_subword_prefix must be a non-empty str, got {continuing_subword_prefix!r}")
        self.unk_token = unk_token
        self.unk_id = self.vocab[unk_token]
        self.max_input_chars_per_word = int(max_input_chars_per_word)
        self.prefix = continuing_subword_prefix
        self.split_on_punctuation = bool(split_on_punctuation)
        self.cleanup = bool(cleanup)
        self._init_specials(special_tokens)

    def _token_to_id(self, token: str):
        return self.vocab.get(token)

    def _max_model_id(self) -> int:
        return max(self.vocab.values(), default=-1)

    def id_to_token(self, i: int) -> str | None:
        i = check_int(i, "id")
        return self._special_ids.get(i, self.ids_to_tokens.get(i))

    def _model_size(self) -> int:
        return len(self.vocab)

    def _words(self, text: str, start: int = 0) -> list[tuple[str, int]]:
        return split_whitespace([(text, start)], self.split_on_punctuation)

    def pretokenize(self, text: str) -> list[str]:
        """Split on Unicode whitespace and, with ``split_on_punctuation``, isolate punctuation characters."""
        from ._text import check_text
        return [w for w, _ in self._words(check_text(text))]

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
        """The token strings of ``text`` (special tokens included, no template)."""
        return self.encode_plus(text, add_special_tokens=False).tokens

    def _encode_words(self, text, offset, ids, tokens, offsets):
        for word, start in self._words(text, offset):
            pieces = self.tokenize_word(word)
            if pieces == [self.unk_token]:
                spans = [(start, start + len(word))]
            else:
                spans, pos = [], start
                for k, piece in enumerate(pieces):
                    n = len(piece) - (len(self.prefix) if k else 0)
                    spans.append((pos, pos + n))
                    pos += n
            ids.extend(self.vocab[p] for p in pieces)
            tokens.extend(pieces)
            offsets.extend(spans)

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = False) -> str:
        """Join tokens with spaces, gluing continuation pieces (``##``) to the previous token.

        As Hugging Face's WordPiece decoder: a continuation piece in first position keeps
        its prefix; with ``cleanup``, its punctuation replacements on each token.
        """
        ids = check_ids(ids)
        unknown = sorted({i for i in ids if self.id_to_token(i) is None})
        if unknown:
            raise ValueError(f"unknown token ids {unknown!r}")
        if skip_special_tokens:
            ids = [i for i in ids if i not in self._special_ids]
        out = []
        for k, i in enumerate(ids):
            token = self.id_to_token(i)
            if k > 0 and token.startswith(self.prefix):
                token = token[len(self.prefix):]
            elif k > 0:
                token = " " + token
            if self.cleanup:
                for old, new in _CLEANUP:
                    token = token.replace(old, new)
            out.append(token)
        return "".join(out)

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int, special_tokens: Sequence[str] = ("[UNK]",),
              min_frequency: int = 1, unk_token: str | None = None, criterion: str = "count",
              **kwargs) -> "WordPieceTokenizer":
        """Learn a vocabulary as Hugging Face's ``WordPieceTrainer`` does (``criterion="count"``),
        or with the WordPiece likelihood score (``criterion="likelihood"``).

        Words are split into characters, the first as is and the others with the
        continuation prefix (``"hug"`` -> ``h ##u ##g``). Each step merges one adjacent pair
        ``(a, b)`` everywhere into ``a + b`` without ``b``'s prefix, until the vocabulary has
        ``vocab_size`` tokens or no pair occurs ``min_frequency`` times. Which pair:

        * ``"count"`` (default): the most frequent pair, ties to the smallest pair of ids.
          This is Hugging Face's trainer (its BPE trainer with a ``##`` prefix): the
          vocabulary starts as ``special_tokens``, then every character of the corpus as a
          word-initial token (sorted), then the continuation symbols (sorted here; Hugging
          Face adds them in its hash map's order, so its ids, and its choice among pairs of
          equal count, change from run to run). Frequent words end up whole (``the``,
          ``attention``).
        * ``"likelihood"``: the highest ``count(a b) / (count(a) * count(b))`` (the
          WordPiece paper's score, as the Hugging Face course teaches it; ties: the smallest
          pair of strings). The vocabulary starts as ``special_tokens`` and the symbols that
          occur (sorted). It favours pieces whose parts rarely occur apart, so rare strings
          (``##94560``) win over common words.

        ``unk_token`` defaults to ``"[UNK]"`` if it is among ``special_tokens``, else to
        ``special_tokens[0]``. With ``[CLS]`` and ``[SEP]`` among them the tokenizer gets
        BERT's template (``[CLS] $A [SEP]``, pairs ``[CLS] $A [SEP] $B:1 [SEP]:1``). Other
        keyword arguments go to the constructor.
        """
        if criterion not in ("count", "likelihood"):
            raise ValueError(f"criterion must be 'count' or 'likelihood', got {criterion!r}")
        texts = check_texts(texts)
        special_tokens = check_token_list(special_tokens, "special_tokens")
        if not special_tokens:
            raise ValueError("special_tokens must contain at least the unk token")
        unk_token = unk_token or ("[UNK]" if "[UNK]" in special_tokens else special_tokens[0])
        probe = cls(special_tokens, unk_token=unk_token, special_tokens=special_tokens, **kwargs)
        prefix = probe.prefix
        word_freqs = Counter()
        for text in texts:
            enc_words = []
            for segment in probe._special_split.split(text):    # special tokens are never merged
                enc_words.extend(probe.pretokenize(segment))
            word_freqs.update(enc_words)
        words = [[w[0]] + [prefix + c for c in w[1:]] for w in word_freqs]
        symbols = {s for w in words for s in w}
        if criterion == "count":    # every character word-initial, then the continuation symbols
            alphabet = sorted({c for w in word_freqs for c in w} - set(special_tokens))
            alphabet += sorted(symbols - set(alphabet) - set(special_tokens))
        else:
            alphabet = sorted(symbols - set(special_tokens))
        vocab = special_tokens + alphabet
        if check_int(vocab_size, "vocab_size") < len(vocab):
            raise ValueError(f"vocab_size {vocab_size!r} is smaller than the special tokens plus the "
                             f"{len(alphabet)} initial symbols ({len(vocab)})")
        if check_int(min_frequency, "min_frequency") < 1:
            raise ValueError(f"min_frequency must be >= 1, got {min_frequency}")
        symbol_of = {t: k for k, t in enumerate(vocab)}        # the merger's symbols are integers
        state = _PairMerger([[symbol_of[s] for s in w] for w in words], word_freqs.values(),
                            count_symbols=criterion == "likelihood")
        pick = _most_frequent_pairs(state) if criterion == "count" else _most_likely_pairs(state, vocab, min_frequency)
        while len(vocab) < vocab_size:
            a, b = next(pick, (None, None))
            if a is None or state.pair_counts[(a, b)] < min_frequency:
                break
            new = vocab[ord(a)] + vocab[ord(b)][len(prefix):]    # b is never word-initial: it carries the prefix
            if new not in symbol_of:
                symbol_of[new] = len(vocab)
                vocab.append(new)
            grown = state.merge((a, b), chr(symbol_of[new]))
            if criterion == "count":
                pick.send(grown)
        tok = cls(vocab, unk_token=unk_token, special_tokens=special_tokens, **kwargs)
        if "[CLS]" in special_tokens and "[SEP]" in special_tokens:
            tok.set_template(*BERT_TEMPLATE)
        return tok

    # ---------------------------------------------------------- tokenizer.json
    def _model_json(self) -> dict:
        return {"type": "WordPiece", "unk_token": self.unk_token, "continuing_subword_prefix": self.prefix,
                "max_input_chars_per_word": self.max_input_chars_per_word,
                "vocab": dict(sorted(self.vocab.items(), key=lambda kv: kv[1]))}

    def _pre_tokenizer_json(self) -> dict:
        return {"type": "BertPreTokenizer" if self.split_on_punctuation else "WhitespaceSplit"}

    def _post_processor_json(self) -> list[dict]:
        return self._template_json()

    def _decoder_json(self) -> dict:
        return {"type": "WordPiece", "prefix": self.prefix, "cleanup": self.cleanup}
