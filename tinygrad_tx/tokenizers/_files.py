"""Reading Hugging Face ``tokenizers``' ``tokenizer.json`` (plain JSON, no pickle).

What is understood (anything else is refused with a ``TokenizerFileError`` naming the file and
the part): no normalizer; models ``BPE`` (byte-level) and ``WordPiece``; pre-tokenizers
``ByteLevel`` (with or without GPT-2's regex), ``Split`` (Isolated) followed by ``ByteLevel``,
``WhitespaceSplit`` and ``BertPreTokenizer``; post-processors ``ByteLevel``,
``TemplateProcessing``, ``BertProcessing`` and a ``Sequence`` of them; decoders ``ByteLevel`` and
``WordPiece``; added tokens without ``single_word``/``lstrip``/``rstrip``; ``truncation``
(``LongestFirst``, no stride) and ``padding``.

Reading is bounded: only a regular file (a FIFO would block, a link to ``/dev/zero`` reads
without end) of at most :data:`MAX_FILE_BYTES`; JSON nested deeper than the parser's recursion
allows is refused, not a ``RecursionError``. Ids are checked as Hugging Face reads them (an
unsigned 32-bit integer: ``-1``, ``2**63`` are refused) and against the vocabulary: the ids of
the model's vocabulary and the added tokens must run ``0 .. n-1`` without gaps (Hugging Face
accepts gaps; here ``vocab_size`` and ``decode`` need them dense), and the padding id must be
one of them.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ..files import check_regular_file
from ._text import CHAR_TO_BYTE, GPT2_SPLIT_PATTERN
from ._kinds import MODELS, TokenizerFileError


MAX_FILE_BYTES = 256 * 2**20      # a tokenizer.json larger than this is refused (the largest are ~30 MB)
MAX_ID = 2**32 - 1                # Hugging Face reads ids as u32


class _Bad(Exception):
    pass


def _read_bounded(path: Path) -> bytes:
    """The bytes of ``path``: a regular file of at most MAX_FILE_BYTES (read at most one byte more,
    so a file that grows while read is caught too)."""
    try:
        check_regular_file(path, "tokenizer")
    except ValueError as e:
        raise TokenizerFileError(str(e)) from None
    with open(path, "rb") as f:
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise TokenizerFileError(f"{path}: larger than {MAX_FILE_BYTES:,} bytes, the limit for a tokenizer file")
    return data


def _get(obj, key, kind, what, default=...):
    if not isinstance(obj, dict):
        raise _Bad(f"{what} must be a JSON object, got {type(obj).__name__}")
    if key not in obj:
        if default is ...:
            raise _Bad(f"{what} has no {key!r}")
        return default
    value = obj[key]
    if kind is not None and not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _Bad(f"{what}[{key!r}] must be {getattr(kind, '__name__', kind)}, got {value!r}")
    return value


def _type(obj, what):
    return _get(obj, "type", str, what)


def load_tokenizer(path):
    """A ``BPETokenizer`` or ``WordPieceTokenizer`` from a ``tokenizer.json``."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"from_file: path must be a str or os.PathLike, got {type(path).__name__} ({path!r})")
    path = Path(path)
    raw = _read_bounded(path)
    try:
        data = json.loads(raw.decode("utf-8"))
    except json.JSONDecodeError as e:
        raise TokenizerFileError(f"{path}: not valid JSON ({e})") from None
    except UnicodeDecodeError as e:
        raise TokenizerFileError(f"{path}: not UTF-8 text ({e})") from None
    except RecursionError:
        raise TokenizerFileError(f"{path}: JSON nested too deeply to read (a tokenizer.json nests a few levels)") \
            from None
    try:
        ids = _check_ids(data)
        tok = _build(data)
        _check_dense(data, ids)
        return tok
    except (_Bad, ValueError, TypeError) as e:
        raise TokenizerFileError(f"{path}: {e}") from None


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_id(value, what):
    if _is_int(value) and not 0 <= value <= MAX_ID:
        raise _Bad(f"{what} is {value}, not a token id (an integer in [0, {MAX_ID}], as Hugging Face reads ids)")


def _check_ids(data) -> dict:
    """Ids as Hugging Face reads them (u32); returns ``{id: what}`` of the vocabulary and the added
    tokens. Values that are not integers are left to the checks of their part."""
    ids = {}
    if not isinstance(data, dict):
        return ids
    model = data.get("model")
    vocab = model.get("vocab") if isinstance(model, dict) else None
    for token, i in (vocab.items() if isinstance(vocab, dict) else ()):
        _check_id(i, f"model vocab id of {token!r}")
        if _is_int(i):
            ids.setdefault(i, f"model vocab token {token!r}")
    added = data.get("added_tokens")
    for k, t in enumerate(added if isinstance(added, list) else ()):
        i = t.get("id") if isinstance(t, dict) else None
        _check_id(i, f"added_tokens[{k}] id")
        if _is_int(i):
            ids.setdefault(i, f"added_tokens[{k}] ({t.get('content')!r})")
    padding = data.get("padding")
    if isinstance(padding, dict):
        _check_id(padding.get("pad_type_id"), "padding pad_type_id")
        _check_id(padding.get("pad_id"), "padding pad_id")
    return ids


def _check_dense(data, ids: dict) -> None:
    """After the file is understood: the ids run 0 .. n-1 without gaps, the padding id is one of them."""
    if ids and max(ids) >= len(ids):
        top = max(ids)
        raise _Bad(f"token ids must run from 0 to {len(ids) - 1} without gaps ({len(ids)} distinct ids), but "
                   f"{ids[top]} has id {top}")
    pad = (data.get("padding") or {}).get("pad_id")
    if _is_int(pad) and pad not in ids:
        raise _Bad(f"padding pad_id {pad} is not a token id of the vocabulary (0 to {len(ids) - 1})")


def _build(data):
    if not isinstance(data, dict):
        raise _Bad(f"the top level must be a JSON object, got {type(data).__name__}")
    if data.get("normalizer") is not None:
        raise _Bad(f"normalizer {_type(data['normalizer'], 'normalizer')!r} is not supported (only null)")
    added = {}
    for k, t in enumerate(_get(data, "added_tokens", list, "the file", [])):
        what = f"added_tokens[{k}]"
        for flag in ("single_word", "lstrip", "rstrip"):
            if _get(t, flag, bool, what, False):
                raise _Bad(f"{what} ({t.get('content')!r}): {flag}=true is not supported")
        added[_get(t, "content", str, what)] = _get(t, "id", int, what)
    model = _get(data, "model", dict, "the file")
    kind = _get(model, "type", str, "model", "BPE" if "merges" in model else "WordPiece")
    pre = data.get("pre_tokenizer")
    steps = [] if pre is None else _get(pre, "pretokenizers", list, "pre_tokenizer") if _type(
        pre, "pre_tokenizer") == "Sequence" else [pre]
    if kind == "BPE":
        tok = _bpe(model, steps, added)
    elif kind == "WordPiece":
        tok = _wordpiece(model, steps, added, data.get("decoder"))
    else:
        raise _Bad(f"model type {kind!r} is not supported (BPE or WordPiece)")
    _post_processor(tok, data.get("post_processor"))
    tok.truncation = _truncation(data.get("truncation"))
    tok.padding = _padding(data.get("padding"))
    return tok


def _bpe(model, steps, added):
    for key, ok in (("dropout", None), ("continuing_subword_prefix", None), ("end_of_word_suffix", None),
                    ("byte_fallback", False)):
        if model.get(key, ok) not in (ok, "") and model.get(key) is not None:
            raise _Bad(f"model[{key!r}]={model[key]!r} is not supported")
    vocab_str = _get(model, "vocab", dict, "model")
    special_ids = set(added.values())
    vocab = {}
    for token, i in vocab_str.items():
        if isinstance(i, bool) or not isinstance(i, int):
            raise _Bad(f"model vocab id of {token!r} must be an integer, got {i!r}")
        if i in special_ids:
            continue
        try:
            vocab[i] = bytes(CHAR_TO_BYTE[c] for c in token)
        except KeyError as e:
            raise _Bad(f"model vocab token {token!r} is not byte-level (character {e.args[0]!r} is not one of "
                       "the 256 byte characters) and not an added token") from None
    ids = {s: i for s, i in vocab_str.items() if i not in special_ids}
    merges = []
    for k, m in enumerate(_get(model, "merges", list, "model")):
        pair = m.split(" ") if isinstance(m, str) else m
        if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(x, str) for x in pair):
            raise _Bad(f"model merges[{k}] must be two tokens, got {m!r}")
        missing = [x for x in pair if x not in ids]
        if missing:
            raise _Bad(f"model merges[{k}] {pair!r}: {missing[0]!r} is not in the vocabulary")
        merges.append((ids[pair[0]], ids[pair[1]]))
    # pre-tokenization: [ByteLevel] or [Split, ByteLevel]
    types = [_type(s, "pre_tokenizer") for s in steps]
    split_pattern, regex_in_byte_level = None, False
    if types == ["ByteLevel"]:
        regex_in_byte_level = steps[0].get("use_regex", True)
        split_pattern = GPT2_SPLIT_PATTERN if regex_in_byte_level else None
    elif types == ["Split", "ByteLevel"] and not steps[1].get("use_regex", True):
        split_pattern = _split_pattern(steps[0])
    else:
        raise _Bad(f"pre_tokenizer {types!r} is not supported for byte-level BPE (ByteLevel, or Split then "
                   "ByteLevel with use_regex=false)")
    byte_level = steps[-1]
    tok = MODELS["BPE"](merges, split_pattern, vocab=vocab, unk_token=model.get("unk_token"),
                       fuse_unk=model.get("fuse_unk", False), ignore_merges=model.get("ignore_merges", False),
                       add_prefix_space=_get(byte_level, "add_prefix_space", bool, "pre_tokenizer ByteLevel", False))
    tok._regex_in_byte_level = regex_in_byte_level
    tok._register_specials(added)
    return tok


def _split_pattern(step) -> str:
    what = "pre_tokenizer Split"
    if _get(step, "behavior", str, what) != "Isolated" or _get(step, "invert", bool, what, False):
        raise _Bad(f"{what}: only behavior 'Isolated' without invert is supported, got {step.get('behavior')!r}"
                   f"{' inverted' if step.get('invert') else ''}")
    pattern = _get(step, "pattern", dict, what)
    if "Regex" in pattern:
        return _get(pattern, "Regex", str, f"{what} pattern")
    return re.escape(_get(pattern, "String", str, f"{what} pattern"))


def _wordpiece(model, steps, added, decoder):
    types = [_type(s, "pre_tokenizer") for s in steps]
    if types not in (["WhitespaceSplit"], ["BertPreTokenizer"]):
        raise _Bad(f"pre_tokenizer {types!r} is not supported for WordPiece (WhitespaceSplit or BertPreTokenizer)")
    prefix = _get(model, "continuing_subword_prefix", str, "model", "##")
    cleanup = False
    if decoder is not None:
        if _type(decoder, "decoder") != "WordPiece":
            raise _Bad(f"decoder {decoder['type']!r} is not supported for WordPiece (WordPiece)")
        cleanup = _get(decoder, "cleanup", bool, "decoder", True)
        if _get(decoder, "prefix", str, "decoder", "##") != prefix:
            raise _Bad(f"decoder prefix {decoder['prefix']!r} differs from the model's {prefix!r}")
    tok = MODELS["WordPiece"](_get(model, "vocab", dict, "model"), unk_token=_get(model, "unk_token", str, "model"),
                             max_input_chars_per_word=_get(model, "max_input_chars_per_word", int, "model", 100),
                             continuing_subword_prefix=prefix, split_on_punctuation=types == ["BertPreTokenizer"],
                             cleanup=cleanup)
    tok._register_specials(added)
    return tok


def _post_processor(tok, post):
    if post is None:
        return
    steps = _get(post, "processors", list, "post_processor") if _type(post, "post_processor") == "Sequence" else [post]
    for step in steps:
        kind = _type(step, "post_processor")
        if kind == "ByteLevel" and tok.model_type == "BPE":
            tok.trim_offsets = _get(step, "trim_offsets", bool, "post_processor ByteLevel", True)
            tok._post_prefix_space = _get(step, "add_prefix_space", bool, "post_processor ByteLevel", True)
        elif kind == "BertProcessing":
            (sep, _), (cls, _) = _get(step, "sep", list, kind), _get(step, "cls", list, kind)
            tok.set_template(f"{cls} $A {sep}", f"{cls} $A {sep} $B:1 {sep}:1")
        elif kind == "TemplateProcessing":
            tok.set_template(_template(tok, step, "single"), _template(tok, step, "pair"))
        else:
            raise _Bad(f"post_processor {kind!r} is not supported")


def _template(tok, step, key) -> str:
    parts = []
    for item in _get(step, key, list, "TemplateProcessing"):
        (what, body), = item.items() if isinstance(item, dict) and len(item) == 1 else [(None, None)]
        if what not in ("Sequence", "SpecialToken"):
            raise _Bad(f"TemplateProcessing {key}: bad item {item!r}")
        name, type_id = _get(body, "id", str, what), _get(body, "type_id", int, what, 0)
        if what == "SpecialToken":
            ids = _get(_get(_get(step, "special_tokens", dict, "TemplateProcessing"), name, dict,
                            "TemplateProcessing special_tokens"), "ids", list, name)
            if ids != [tok.token_to_id(name)]:
                raise _Bad(f"TemplateProcessing: special token {name!r} has ids {ids}, not [its id]")
        parts.append(f"{name}:{type_id}" if what == "SpecialToken" else f"${name}:{type_id}")
    return " ".join(parts)


def _truncation(t):
    if t is None:
        return None
    what = "truncation"
    if _get(t, "strategy", str, what, "LongestFirst") != "LongestFirst" or _get(t, "stride", int, what, 0):
        raise _Bad(f"{what}: only strategy LongestFirst with stride 0 is supported, got {t!r}")
    return {"direction": _get(t, "direction", str, what, "Right"), "max_length": _get(t, "max_length", int, what),
            "strategy": "LongestFirst", "stride": 0}


def _padding(p):
    if p is None:
        return None
    what = "padding"
    strategy = _get(p, "strategy", None, what, "BatchLongest")
    if strategy != "BatchLongest" and not (isinstance(strategy, dict) and isinstance(strategy.get("Fixed"), int)):
        raise _Bad(f"{what}: strategy must be BatchLongest or {{'Fixed': n}}, got {strategy!r}")
    return {"strategy": strategy, "direction": _get(p, "direction", str, what, "Right"),
            "pad_to_multiple_of": _get(p, "pad_to_multiple_of", None, what, None),
            "pad_id": _get(p, "pad_id", int, what, 0), "pad_type_id": _get(p, "pad_type_id", int, what, 0),
            "pad_token": _get(p, "pad_token", str, what, "[PAD]")}
