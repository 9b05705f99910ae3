"""WordPiece (see the package docstring): greedy longest-match encoding, likelihood training, files."""
from __future__ import annotations

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
              min_frequency: int = 1, unk_token: str | None = None, **kwargs) -> "WordPieceTokenizer":
        """Learn a vocabulary with the WordPiece likelihood criterion.

        Words are split into characters, the first as is and the others with
        the continuation prefix (``"hug"`` -> ``h ##u ##g``). The vocabulary
        starts as ``special_tokens`` followed by every such symbol (sorted).
        Each step merges the adjacent pair ``(a, b)`` with the highest score
        ``count(a b) / (count(a) * count(b))`` (ties: the smallest pair of
        strings, which need not be the pair the Hugging Face course's example
        picks among its ties) into ``a + b`` without ``b``'s prefix, until the vocabulary has
        ``vocab_size`` tokens or no pair occurs ``min_frequency`` times.

        This is the score of the WordPiece paper and of the Hugging Face course; Hugging
        Face's ``WordPieceTrainer`` instead merges the most *frequent* pair (it is its BPE
        trainer with a ``##`` prefix), so its vocabularies differ.

        ``unk_token`` defaults to ``"[UNK]"`` if it is among ``special_tokens``, else to
        ``special_tokens[0]``. With ``[CLS]`` and ``[SEP]`` among them the tokenizer gets
        BERT's template (``[CLS] $A [SEP]``, pairs ``[CLS] $A [SEP] $B:1 [SEP]:1``). Other
        keyword arguments go to the constructor.
        """
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
        alphabet = sorted({s for w in words for s in w} - set(special_tokens))
        vocab = special_tokens + alphabet
        if check_int(vocab_size, "vocab_size") < len(vocab):
            raise ValueError(f"vocab_size {vocab_size!r} is smaller than the special tokens plus the "
                             f"{len(alphabet)} initial symbols ({len(vocab)})")
        if check_int(min_frequency, "min_frequency") < 1:
            raise ValueError(f"min_frequency must be >= 1, got {min_frequency}")
        symbol_of = {t: k for k, t in enumerate(vocab)}        # the merger's symbols are integers
        state = _PairMerger([[symbol_of[s] for s in w] for w in words], word_freqs.values(), count_symbols=True)
        while len(vocab) < vocab_size:
            counts, singles = state.pair_counts, state.symbol_counts
            candidates = [pair for pair, count in counts.items() if count >= min_frequency]
            if not candidates:
                break
            # int / int is correctly rounded in Python, so equal ratios give equal floats
            # and ties are decided by the pair order, not by rounding noise.
            a, b = min(candidates, key=lambda p: (-counts[p] / (singles[p[0]] * singles[p[1]]),
                                                  vocab[ord(p[0])], vocab[ord(p[1])]))
            new = vocab[ord(a)] + vocab[ord(b)][len(prefix):]    # b is never word-initial: it carries the prefix
            if new not in symbol_of:
                symbol_of[new] = len(vocab)
                vocab.append(new)
            state.merge((a, b), chr(symbol_of[new]))
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
