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

``WordPieceTokenizer.train`` builds a vocabulary as Hugging Face's
``WordPieceTrainer`` does: its BPE trainer with a ``##`` prefix, merging the
most *frequent* adjacent pair (ties: the smallest pair of ids) until
``vocab_size`` or until no pair occurs ``min_frequency`` times, so frequent
words become single tokens. ``criterion="likelihood"`` picks instead the pair
maximising ``count(ab) / (count(a) * count(b))`` (the WordPiece paper's score,
as the Hugging Face course teaches it), which favours pieces whose parts
rarely occur apart.

Special tokens, encodings, files
--------------------------------
``special_tokens`` (``[CLS] [SEP] [PAD] [MASK] [UNK]``, ``<|endoftext|>``) are
matched whole anywhere in a text before it is split into words.
``encode(text)`` returns the list of ids (as before, and as ``transformers``);
``encode_plus(text, pair=None)`` returns an ``Encoding`` (``ids``, ``tokens``,
``offsets`` in characters, ``type_ids``, ``attention_mask``,
``special_tokens_mask``) and ``encode_batch(texts, padding=..., max_length=...,
truncation=...)`` a padded list of them. ``set_template("[CLS] $A [SEP]", ...)``
adds special tokens around every text. ``save(path)`` writes Hugging Face
``tokenizers``' own ``tokenizer.json`` (atomically), which
``tokenizers.Tokenizer.from_file`` loads and encodes identically;
``from_file(path)`` reads ours or one Hugging Face wrote (the supported
components are listed in ``_files.py``; anything else is refused with a
``TokenizerFileError`` naming the file and the part).
"""
from ._text import BPE_SPLIT_PATTERN, GPT2_SPLIT_PATTERN, UNICODE_WHITESPACE, bytes_to_unicode
from .base import Encoding, SubwordTokenizer, TokenizerFileError
from .bpe import BPETokenizer, char_tokenizer, encode_known
from .wordpiece import BERT_SPECIAL_TOKENS, BERT_TEMPLATE, WordPieceTokenizer
from ._files import load_tokenizer

__all__ = ["BPETokenizer", "WordPieceTokenizer", "Encoding", "SubwordTokenizer", "TokenizerFileError",
           "load_tokenizer", "char_tokenizer", "encode_known", "BPE_SPLIT_PATTERN", "GPT2_SPLIT_PATTERN", "UNICODE_WHITESPACE", "BERT_SPECIAL_TOKENS",
           "BERT_TEMPLATE", "bytes_to_unicode"]
