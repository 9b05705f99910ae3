"""Tests of tinygrad_tx.tokenizers: byte-level BPE and WordPiece.

The peer is Hugging Face ``tokenizers``: given our vocabulary (and merges), its
``models.BPE`` / ``models.WordPiece`` with the same pre-tokenization must
produce the same ids, on names and on arbitrary Unicode text. The BPE trainer
is checked against a naive re-implementation that recounts every pair at every
step; the WordPiece trainer against the worked example of the Hugging Face
course.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

from tinygrad_tx.data import load_names
from tinygrad_tx.tokenizers import (BPE_SPLIT_PATTERN, UNICODE_WHITESPACE, BPETokenizer, WordPieceTokenizer,
                                    bytes_to_unicode)

NAMES_TXT = Path(__file__).resolve().parents[2] / "shared" / "data" / "names.txt"
needs_names_txt = pytest.mark.skipif(not NAMES_TXT.exists(), reason=f"{NAMES_TXT} not present")

CENSUS = load_names()                      # offline: 5,163 US Census first names
# A small text corpus with spaces, newlines, punctuation and non-ASCII, so merges
# learn space-prefixed and multi-byte tokens.
TEXT_CORPUS = [
    " ".join(CENSUS[i:i + 12]) + ("\n" if i % 3 else "  \t") for i in range(0, 2400, 12)
] + ["Zoë and Chloé met Jürgen, Ægir and 李小龍 — twice!  Émile's café 😀😀 costs 3.50€."] * 5

any_text = st.text(max_size=60)
name_texts = st.lists(st.sampled_from(CENSUS), min_size=1, max_size=6).map(" ".join)
mixed_text = st.lists(st.one_of(st.sampled_from(CENSUS), st.text(max_size=4),
                                st.sampled_from([" ", "  ", "\n", "\t ", "é", "李", "😀"])),
                      max_size=12).map("".join)


# ================================================================ Hugging Face peers
def hf_bpe(tok: BPETokenizer) -> Tokenizer:
    """HF BPE with our vocab+merges, our word split (Split regex) and byte-level alphabet."""
    vocab, merges = tok.hf_vocab_and_merges()
    hf = Tokenizer(models.BPE(vocab, merges))
    steps = [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
    if tok.split_pattern is not None:
        steps.insert(0, pre_tokenizers.Split(Regex(tok.split_pattern), behavior="isolated"))
    hf.pre_tokenizer = pre_tokenizers.Sequence(steps)
    hf.decoder = decoders.ByteLevel()
    return hf


def hf_wordpiece(tok: WordPieceTokenizer) -> Tokenizer:
    hf = Tokenizer(models.WordPiece(tok.vocab, unk_token=tok.unk_token,
                                    max_input_chars_per_word=tok.max_input_chars_per_word))
    hf.pre_tokenizer = (pre_tokenizers.BertPreTokenizer() if tok.split_on_punctuation
                        else pre_tokenizers.WhitespaceSplit())
    hf.decoder = decoders.WordPiece(prefix=tok.prefix, cleanup=False)
    return hf


def hf_ids(hf: Tokenizer, text: str) -> list[int]:
    return hf.encode(text, add_special_tokens=False).ids


@pytest.fixture(scope="module")
def bpe_names():
    return BPETokenizer.train(CENSUS, vocab_size=600)


@pytest.fixture(scope="module")
def bpe_text():
    return BPETokenizer.train(TEXT_CORPUS, vocab_size=700)


@pytest.fixture(scope="module")
def bpe_nosplit():
    return BPETokenizer.train(TEXT_CORPUS, vocab_size=500, split_pattern=None)


@pytest.fixture(scope="module")
def wp_names():
    return WordPieceTokenizer.train(CENSUS, vocab_size=400)


# ======================================================================== BPE
def naive_bpe_train(texts, vocab_size, split_pattern=BPE_SPLIT_PATTERN):
    """Textbook BPE: recount all pairs every step, merge the most frequent (ties: smallest pair)."""
    import re
    words = Counter(w for t in texts for w in (re.findall(split_pattern, t) if split_pattern else [t] if t else []))
    seqs = {w: list(w.encode("utf-8")) for w in words}
    vocab = {i: bytes([i]) for i in range(256)}
    merges = []
    while len(vocab) < vocab_size:
        counts = Counter()
        for w, f in words.items():
            for pair in zip(seqs[w], seqs[w][1:]):
                counts[pair] += f
        if not counts:
            break
        pair = min(counts, key=lambda p: (-counts[p], p))
        data = vocab[pair[0]] + vocab[pair[1]]
        new = next((i for i, d in vocab.items() if d == data), len(vocab))
        vocab[new] = data
        merges.append(pair)
        for w in words:
            s, out, j = seqs[w], [], 0
            while j < len(s):
                if j + 1 < len(s) and (s[j], s[j + 1]) == pair:
                    out.append(new)
                    j += 2
                else:
                    out.append(s[j])
                    j += 1
            seqs[w] = out
    return merges


@given(st.lists(st.text(alphabet="ab c\u00e9", max_size=12), min_size=1, max_size=8), st.integers(256, 290),
       st.sampled_from([BPE_SPLIT_PATTERN, None]))
def test_bpe_trainer_matches_naive_recount(texts, vocab_size, pattern):
    tok = BPETokenizer.train(texts, vocab_size, split_pattern=pattern)
    assert list(tok.merges) == naive_bpe_train(texts, vocab_size, pattern)


def test_bpe_trainer_on_names(bpe_names):
    assert len(bpe_names) == bpe_names.vocab_size == 600 and len(bpe_names.merges) == 344
    assert list(bpe_names.merges)[:5] == naive_bpe_train(CENSUS, 261)
    assert bpe_names.vocab[256] == b"an"                                              # the commonest pair
    assert list(bpe_names.merges) == list(BPETokenizer.train(CENSUS, 600).merges)     # deterministic
    assert len(set(bpe_names.vocab.values())) == len(bpe_names.vocab)                  # one id per string
    lengths = [len(bpe_names.encode(n)) for n in CENSUS]
    assert sum(lengths) < 0.5 * sum(len(n) for n in CENSUS)     # subwords shorten sequences


def test_bpe_stops_early_and_validates():
    tok = BPETokenizer.train(["abab"], vocab_size=1000)
    assert [tok.vocab[i] for i in tok.merges.values()] == [b"ab", b"abab"]
    assert len(BPETokenizer.train(["ab", "cd", "cd"], 1000, min_frequency=2).merges) == 1
    with pytest.raises(ValueError, match="vocab_size"):
        BPETokenizer.train(["ab"], 255)
    with pytest.raises(ValueError, match="min_frequency"):
        BPETokenizer.train(["ab"], 300, min_frequency=0)
    with pytest.raises(TypeError, match="text must be a str, got"):
        BPETokenizer().encode(b"ab")
    with pytest.raises(ValueError, match=r"unknown token ids \[256, 999\]"):
        BPETokenizer().decode([97, 999, 256])
    with pytest.raises(ValueError, match="unknown token ids"):
        BPETokenizer([(97, 300)])
    with pytest.raises(ValueError, match="listed twice"):
        BPETokenizer([(97, 98), (97, 98)])


@given(any_text)
def test_bpe_round_trip_arbitrary_unicode(bpe_text, s):
    ids = bpe_text.encode(s)
    assert bpe_text.decode(ids) == s
    assert bpe_text.decode_bytes(ids) == s.encode("utf-8")
    assert all(0 <= i < len(bpe_text) for i in ids)


@given(any_text)
def test_bpe_round_trip_without_split(bpe_nosplit, s):
    assert bpe_nosplit.decode(bpe_nosplit.encode(s)) == s


def test_bpe_decode_invalid_utf8_uses_replacement():
    assert BPETokenizer().decode([0xE6, 0x9D]) == "\ufffd"          # a truncated 3-byte sequence


def test_byte_alphabet_is_huggingface_byte_level():
    b2u = bytes_to_unicode()
    assert len(set(b2u.values())) == 256
    assert set(b2u.values()) == set(pre_tokenizers.ByteLevel.alphabet())
    assert b2u[ord(" ")] == "\u0120" and b2u[ord("a")] == "a"


def test_bpe_same_ids_as_huggingface_on_names(bpe_names):
    hf = hf_bpe(bpe_names)
    for name in CENSUS:
        assert bpe_names.encode(name) == hf_ids(hf, name), name
    text = " ".join(CENSUS[:500])
    assert bpe_names.encode(text) == hf_ids(hf, text)


@given(st.one_of(any_text, name_texts, mixed_text))
def test_bpe_same_ids_as_huggingface_random_text(bpe_names, bpe_text, bpe_nosplit, s):
    for tok in (bpe_names, bpe_text, bpe_nosplit):
        hf = hf_bpe(tok)
        ids = tok.encode(s)
        assert ids == hf_ids(hf, s)
        assert tok.decode(ids) == hf.decode(ids)


def test_bpe_reused_id_matches_huggingface():
    """'abc' reached as ab+c and as a+bc: one id, two merges, same encoding as HF."""
    tok = BPETokenizer([(97, 98), (256, 99), (98, 99), (97, 258), (257, 257)])
    assert tok.merges == {(97, 98): 256, (256, 99): 257, (98, 99): 258, (97, 258): 257, (257, 257): 259}
    assert len(tok) == 260 and tok.vocab[257] == b"abc"
    hf = hf_bpe(tok)
    for s in ["abc", "abcabc", "bcabc", "aabcc", "a bc abcabcbc", "cababcbcabc"]:
        assert tok.encode(s) == hf_ids(hf, s), s


@given(st.text(alphabet="abc ", max_size=30))
def test_bpe_reused_id_matches_huggingface_random(s):
    tok = BPETokenizer([(97, 98), (256, 99), (98, 99), (97, 258), (257, 257), (258, 97), (99, 97)])
    assert tok.encode(s) == hf_ids(hf_bpe(tok), s)


def test_bpe_overlapping_pairs_merge_leftmost_first():
    """In 'aaa' the pair (a, a) occurs twice, overlapping: the leftmost is merged -> [aa, a]."""
    tok = BPETokenizer([(97, 97)])
    assert tok.tokenize("aaa") == [b"aa", b"a"]
    assert tok.encode("aaaaa") == [256, 256, 97]
    assert tok.encode("aaa") == hf_ids(hf_bpe(tok), "aaa")


@given(st.text(alphabet="aab ", max_size=30))
def test_bpe_runs_match_huggingface(s):
    tok = BPETokenizer([(97, 97), (97, 98), (256, 256), (256, 97), (97, 256), (258, 97)])
    assert tok.vocab[259] == b"aaa" and tok.merges[(97, 256)] == 259      # "aaa" reached two ways
    assert tok.encode(s) == hf_ids(hf_bpe(tok), s)


def test_bpe_split_pattern_words():
    tok = BPETokenizer()
    assert tok.pretokenize("hello  world\n\nfoo \t bar  ") == [
        "hello", " ", " world", "\n", "\n", "foo", " \t", " bar", "  "]
    assert BPETokenizer(split_pattern=None).pretokenize("a b") == ["a b"]
    assert BPETokenizer(split_pattern=None).pretokenize("") == []
    assert BPETokenizer([(97, 98), (32, 256)]).tokenize("ab abé") == [b"ab", b" ab", b"\xc3", b"\xa9"]


@needs_names_txt
def test_bpe_on_names_txt_matches_huggingface():
    names = load_names(NAMES_TXT)
    tok = BPETokenizer.train(names[::4], vocab_size=512)
    hf = hf_bpe(tok)
    sample = names[1::40]
    assert [tok.encode(n) for n in sample] == [e.ids for e in hf.encode_batch(sample, add_special_tokens=False)]
    assert all(tok.decode(tok.encode(n)) == n for n in sample)


# ================================================================== WordPiece
def test_wordpiece_greedy_longest_match():
    tok = WordPieceTokenizer(["[UNK]", "un", "una", "##aff", "##able", "##a", "##ff", "##ab", "##le", "u"])
    assert tok.tokenize("unaffable") == ["una", "##ff", "##able"]
    assert tok.tokenize("unable") == ["[UNK]"]          # 'una' then nothing matches 'ble': whole word unknown
    assert tok.tokenize("u unaff  xyz") == ["u", "una", "##ff", "[UNK]"]
    assert tok.encode("unaffable") == [2, 6, 4]
    assert tok.decode([2, 6, 4, 9, 1]) == "unaffable u un"
    assert tok.decode([3, 1]) == "##aff un"            # a leading continuation keeps its prefix (as HF)


def test_wordpiece_max_input_chars_and_validation():
    tok = WordPieceTokenizer({"[UNK]": 5, "a": 0, "##a": 1}, max_input_chars_per_word=3)
    assert tok.encode("aaa aaaa a") == [0, 1, 1, 5, 0]
    assert tok.unk_id == 5 and len(tok) == 3
    with pytest.raises(ValueError, match="unk_token"):
        WordPieceTokenizer(["a"])
    with pytest.raises(ValueError, match=r"repeated tokens.*\['a'\]"):
        WordPieceTokenizer(["[UNK]", "a", "a"])
    with pytest.raises(ValueError, match="share an id"):
        WordPieceTokenizer({"[UNK]": 0, "a": 0})
    with pytest.raises(ValueError, match=r"unknown token ids \[7\]"):
        tok.decode([0, 7])
    with pytest.raises(TypeError, match="text must be a str, got"):
        tok.encode(None)


def test_wordpiece_pretokenize_whitespace_and_punctuation():
    ws = "".join(sorted(UNICODE_WHITESPACE))
    assert len(UNICODE_WHITESPACE) == 25
    tok = WordPieceTokenizer(["[UNK]"])
    assert tok.pretokenize(f"a{ws}b\x1cc  ") == ["a", "b\x1cc"]      # U+001C is not White_Space
    punct = WordPieceTokenizer(["[UNK]"], split_on_punctuation=True)
    assert punct.pretokenize("hi,there! a¡b·c—d $5^") == [
        "hi", ",", "there", "!", "a", "¡", "b", "·", "c", "—", "d", "$", "5", "^"]


def test_wordpiece_trainer_hf_course_example():
    """Hugging Face course, WordPiece chapter: the first merge is ('##g', '##s') with score 1/20.

    After it every pair scores exactly 1/36 (e.g. ('h', '##u'): 15 / (15 * 36)); our
    tie-break takes the smallest pair of strings, ('##u', '##g').
    """
    corpus = ["hug"] * 10 + ["pug"] * 5 + ["pun"] * 12 + ["bun"] * 4 + ["hugs"] * 5
    tok = WordPieceTokenizer.train(corpus, vocab_size=10)
    assert list(tok.vocab) == ["[UNK]", "##g", "##n", "##s", "##u", "b", "h", "p", "##gs", "##ug"]
    assert tok.tokenize("hugs bun pugs") == ["h", "##ug", "##s", "b", "##u", "##n", "p", "##ug", "##s"]
    assert tok.tokenize("gush") == ["[UNK]"]                # no word-initial 'g'


def test_wordpiece_trainer_on_names(wp_names):
    assert len(wp_names) == 400
    assert all(wp_names.unk_token not in wp_names.tokenize(n) for n in CENSUS)
    assert list(WordPieceTokenizer.train(CENSUS, 400).vocab) == list(wp_names.vocab)
    with pytest.raises(ValueError, match="smaller than the special tokens"):
        WordPieceTokenizer.train(CENSUS, 10)
    assert len(WordPieceTokenizer.train(["ab ab", "cd"], 100, min_frequency=2)) == 6   # [UNK] ##b ##d a c + ab


@given(name_texts)
def test_wordpiece_round_trip_names(wp_names, s):
    assert wp_names.decode(wp_names.encode(s)) == s


words_st = st.text(st.characters(exclude_categories=("Zs", "Zl", "Zp", "Cc", "Cs")), min_size=1,
                   max_size=8).filter(lambda w: not w.startswith("##"))
whitespace_st = st.text(alphabet=sorted(UNICODE_WHITESPACE), min_size=1, max_size=3)


def test_wordpiece_round_trip_exceptions():
    tok = WordPieceTokenizer(["[UNK]", "a", "##a", "##b", "#", "##"])
    assert tok.decode(tok.encode("aa  ab\tb")) == "aa ab [UNK]"          # unknown words are lost
    assert tok.tokenize("a ##") == ["a", "##"]
    assert tok.decode(tok.encode("a ##")) == "a"           # a word starting with '##' glues on


@given(st.lists(words_st, min_size=1, max_size=6), st.lists(whitespace_st, min_size=7, max_size=7),
       st.data())
def test_wordpiece_round_trip_arbitrary_unicode(words, seps, data):
    """Every word tokenizable (vocab holds its characters) -> decode(encode(s)) is the words joined by ' '."""
    s = seps[0] + "".join(w + sep for w, sep in zip(words, seps[1:]))
    chars = sorted(set("".join(words)))
    extra = data.draw(st.lists(st.sampled_from([w[i:j] for w in words for i in range(len(w))
                                                for j in range(i + 1, len(w) + 1)]), max_size=6))
    vocab = list(dict.fromkeys(["[UNK]"] + chars + ["##" + c for c in chars] + extra + ["##" + e for e in extra]))
    tok = WordPieceTokenizer(vocab)
    ids = tok.encode(s)
    assert tok.unk_id not in ids
    assert tok.decode(ids) == " ".join(words)
    assert ids == hf_ids(hf_wordpiece(tok), s)


@given(st.one_of(name_texts, any_text, mixed_text))
def test_wordpiece_same_ids_as_huggingface(wp_names, s):
    hf = hf_wordpiece(wp_names)
    ids = wp_names.encode(s)
    assert ids == hf_ids(hf, s)
    assert wp_names.decode(ids) == hf.decode(ids, skip_special_tokens=False)


def test_wordpiece_same_ids_as_huggingface_on_names(wp_names):
    hf = hf_wordpiece(wp_names)
    assert [wp_names.encode(n) for n in CENSUS] == [e.ids for e in hf.encode_batch(CENSUS, add_special_tokens=False)]


# Characters whose Unicode category (punctuation or not) is the same in every Unicode
# version since 6.0, so Python's unicodedata and the Rust crate HF uses agree on them.
PUNCT_ALPHABET = "abcdefghij XYZ\t\n,.;:!?'\"()[]{}-_/\\@#$%^&*+=<>|~`¡¿«»·—–…‘’“”§¶€£©®°±éüñ李"


@given(st.text(alphabet=PUNCT_ALPHABET, max_size=40), st.integers(3, 100))
def test_wordpiece_bert_punctuation_same_as_huggingface(s, max_chars):
    vocab = ["[UNK]"] + list(dict.fromkeys(PUNCT_ALPHABET.replace(" ", "").replace("\t", "").replace("\n", "")))
    vocab += ["##" + c for c in "abcdefghijXYZéüñ"] + ["ab", "##ab", "abc", "##cd", "X", "##YZ"]
    vocab = list(dict.fromkeys(vocab))
    tok = WordPieceTokenizer(vocab, split_on_punctuation=True, max_input_chars_per_word=max_chars)
    assert tok.encode(s) == hf_ids(hf_wordpiece(tok), s)


@given(st.lists(st.integers(0, 399), max_size=15))
def test_wordpiece_decode_same_as_huggingface(wp_names, ids):
    assert wp_names.decode(ids) == hf_wordpiece(wp_names).decode(ids, skip_special_tokens=False)
