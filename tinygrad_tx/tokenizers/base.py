"""What both tokenizers share: special tokens, ``Encoding``, templates, padding, truncation, files.

The pipeline of ``encode_plus`` (Hugging Face ``tokenizers``' order):

1. the text is cut around **special tokens** (``[CLS]``, ``<|endoftext|>``, ...): each
   occurrence becomes its token, whole (the longest one wins where two start at the same
   place; leftmost first);
2. every other stretch is split into words and each word into subword tokens (the model);
3. **truncation** to ``max_length`` (counting the special tokens the template will add);
4. the **template** adds special tokens (``[CLS] $A [SEP]``, pairs ``... $B:1 [SEP]:1``) and
   type ids;
5. ``encode_batch`` **pads** to the longest (or to ``max_length``), with ``attention_mask``
   0 on the padding.

``offsets[k]`` is the ``(start, end)`` of token ``k`` in its own text, in characters (Python
string indices), ``(0, 0)`` for tokens the template or padding added.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ._kinds import MODELS, TokenizerFileError
from ._text import check_int, check_text


@dataclass
class Encoding:
    """One encoded text (or pair): what Hugging Face's ``Encoding`` holds, as plain lists."""
    ids: list[int]
    tokens: list[str]
    offsets: list[tuple[int, int]]
    type_ids: list[int] = field(default_factory=list)
    attention_mask: list[int] = field(default_factory=list)
    special_tokens_mask: list[int] = field(default_factory=list)

    def __post_init__(self):
        n = len(self.ids)
        self.type_ids = self.type_ids or [0] * n
        self.attention_mask = self.attention_mask or [1] * n
        self.special_tokens_mask = self.special_tokens_mask or [0] * n

    def __len__(self) -> int:
        return len(self.ids)

    def _cut(self, n: int, left: bool) -> None:
        sl = slice(len(self.ids) - n, None) if left else slice(0, n)
        for name in ("ids", "tokens", "offsets", "type_ids", "attention_mask", "special_tokens_mask"):
            setattr(self, name, getattr(self, name)[sl])

    @staticmethod
    def concat(parts: list["Encoding"]) -> "Encoding":
        return Encoding(*([x for p in parts for x in getattr(p, name)] for name in
                          ("ids", "tokens", "offsets", "type_ids", "attention_mask", "special_tokens_mask")))


def parse_template(template: str) -> list[tuple[str, str | None, int]]:
    """``"[CLS] $A [SEP] $B:1 [SEP]:1"`` -> ``[("special", "[CLS]", 0), ("seq", "A", 0), ...]``."""
    items = []
    for part in template.split():
        name, _, type_id = part.rpartition(":") if re.fullmatch(r".+:\d+", part) else (part, "", "0")
        if name in ("$A", "$B", "$"):
            items.append(("seq", "A" if name == "$" else name[1], int(type_id)))
        elif name.startswith("$") and name[1:].isdigit():
            items.append(("seq", "A", int(name[1:])))
        else:
            items.append(("special", name, int(type_id)))
    return items


class SubwordTokenizer:
    """Special tokens, ``encode_plus``/``encode_batch``, ``save``/``from_file`` for a subword model.

    A subclass provides ``_encode_words(text, offset)`` (ids, tokens, offsets of a stretch without
    special tokens), ``_token_to_id``/``id_to_token`` and the model's JSON parts, and names its
    ``model_type`` (the ``"type"`` of a ``tokenizer.json``'s model), by which ``from_file`` finds it.
    """

    model_type = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("model_type"):
            MODELS[cls.model_type] = cls

    def _init_specials(self, special_tokens=()):
        self.special_tokens: dict[str, int] = {}    # content -> id, in the order they were added
        self.template: dict | None = None            # {"single": items, "pair": items}
        self.padding: dict | None = None             # Hugging Face's "padding" object of tokenizer.json
        self.truncation: dict | None = None          # and its "truncation" object
        self._special_split = None
        self._special_ids: dict[int, str] = {}
        self.add_special_tokens(special_tokens)

    # ------------------------------------------------------------------ specials
    def add_special_tokens(self, tokens) -> int:
        """Make each token special (matched whole in any text); a new one gets the next free id.

        A token already in the model's vocabulary keeps its id (as Hugging Face). Returns
        how many got a new id.
        """
        if isinstance(tokens, str):
            raise TypeError(f"special tokens must be a list of str, got the str {tokens!r}")
        added, new = {}, 0
        for t in tokens:
            if not isinstance(t, str) or not t:
                raise ValueError(f"a special token must be a non-empty str, got {t!r}")
            if t in self.special_tokens or t in added:
                continue
            i = self._token_to_id(t)
            added[t] = self._next_id() + new if i is None else i
            new += i is None
        self._register_specials(added)
        return new

    def _register_specials(self, specials: dict[str, int]) -> None:
        """Make each ``content -> id`` special (ids as given: a file's)."""
        self.special_tokens.update(specials)
        self._special_ids = {i: t for t, i in self.special_tokens.items()}
        if len(self._special_ids) != len(self.special_tokens):
            raise ValueError("two special tokens share an id")
        by_length = sorted(self.special_tokens, key=len, reverse=True)
        self._special_split = re.compile("|".join(map(re.escape, by_length))) if by_length else None

    def _next_id(self) -> int:
        return max([self._max_model_id() + 1, *(i + 1 for i in self._special_ids)])

    def __len__(self) -> int:
        """The number of tokens: the model's plus the special tokens outside it (Hugging Face's
        ``get_vocab_size()``; ids run ``0 .. len - 1`` unless a file left gaps)."""
        return self._model_size() + sum(1 for t in self.special_tokens if self._token_to_id(t) is None)

    @property
    def vocab_size(self) -> int:
        return len(self)

    def token_to_id(self, token: str) -> int | None:
        return self.special_tokens.get(check_text(token, "token"), self._token_to_id(token))

    def set_template(self, single: str | None, pair: str | None = None) -> None:
        """Special tokens to add around every text: Hugging Face's ``TemplateProcessing`` syntax.

        ``single="[CLS] $A [SEP]"``, ``pair="[CLS] $A [SEP] $B:1 [SEP]:1"`` (``:1`` is the type id).
        Each special token must be one of ``special_tokens``. ``None`` removes the template.
        """
        if single is None:
            self.template = None
            return
        template = {"single": parse_template(single),
                    "pair": parse_template(pair) if pair is not None else None}
        for kind, items in template.items():
            for what, name, _ in items or ():
                if what == "special" and name not in self.special_tokens:
                    raise ValueError(f"template token {name!r} is not a special token (add it with "
                                     "add_special_tokens first)")
            if items is not None and [n for w, n, _ in items if w == "seq"] != (["A"] if kind == "single" else ["A", "B"]):
                raise ValueError(f"{kind} template must contain {'$A' if kind == 'single' else '$A and $B'} once each")
        self.template = template

    def num_special_tokens_to_add(self, is_pair: bool = False) -> int:
        items = self._template_items(is_pair)
        return 0 if items is None else sum(1 for what, _, _ in items if what == "special")

    def _template_items(self, is_pair):
        if self.template is None:
            return None
        if is_pair and self.template["pair"] is None:
            raise ValueError("this tokenizer's template has no pair form; set_template(single, pair) first")
        return self.template["pair" if is_pair else "single"]

    # ------------------------------------------------------------------ encoding
    def _encode_text(self, text: str) -> Encoding:
        ids, tokens, offsets = [], [], []
        pos = 0
        if self._special_split is not None:
            for m in self._special_split.finditer(text):
                if m.start() > pos:
                    self._encode_words(text[pos:m.start()], pos, ids, tokens, offsets)
                ids.append(self.special_tokens[m.group()])
                tokens.append(m.group())
                offsets.append(m.span())
                pos = m.end()
        if pos < len(text):
            self._encode_words(text[pos:], pos, ids, tokens, offsets)
        return Encoding(ids, tokens, offsets)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """Token ids of ``text`` (with the template's special tokens, if a template is set)."""
        return self.encode_plus(text, add_special_tokens=add_special_tokens).ids

    def encode_plus(self, text: str, pair: str | None = None, add_special_tokens: bool = True,
                    max_length: int | None = None, truncation: bool | None = None) -> Encoding:
        """The ``Encoding`` of ``text`` (and of a second text ``pair``): ids, tokens, offsets, masks.

        ``truncation=True`` cuts it to ``max_length`` tokens, the template's special tokens
        included (a pair: the longer text first, Hugging Face's ``longest_first``);
        ``truncation=None`` uses the tokenizer's ``truncation`` settings (from its file or
        ``enable_truncation``), if any.
        """
        encodings = [self._encode_text(check_text(text))]
        if pair is not None:
            encodings.append(self._encode_text(check_text(pair, "pair")))
        trunc = self._truncation_settings(max_length, truncation)
        if trunc is not None:
            limit, left = trunc
            limit -= self.num_special_tokens_to_add(pair is not None) if add_special_tokens else 0
            if limit < 0:
                raise ValueError(f"max_length {trunc[0]} is smaller than the {trunc[0] - limit} special tokens "
                                 "the template adds")
            self._truncate(encodings, limit, left)
        return self._post_process(encodings, add_special_tokens)

    def encode_batch(self, texts, add_special_tokens: bool = True, padding: bool | str | None = None,
                     max_length: int | None = None, truncation: bool | None = None,
                     pad_to_multiple_of: int | None = None, pad_token: str | None = None) -> list[Encoding]:
        """``encode_plus`` of every text (a str or a ``(text, pair)`` tuple), padded.

        ``padding``: ``"longest"`` (or True) pads to the longest encoding of the batch,
        ``"max_length"`` to ``max_length``; False: no padding; None: the tokenizer's
        ``padding`` settings, if any. Padding uses ``pad_token`` (default: the settings', else
        ``"[PAD]"`` / ``"<pad>"`` if special), ``attention_mask`` 0 and offsets ``(0, 0)``.
        """
        if isinstance(texts, str):
            raise TypeError("encode_batch takes a list of texts, got a single str; use encode_plus")
        if not hasattr(texts, "__iter__"):
            raise TypeError(f"encode_batch: texts must be a list of str or (str, str) pairs, got "
                            f"{type(texts).__name__} ({texts!r})")
        out = []
        for t in texts:
            a, b = (t if isinstance(t, (tuple, list)) else (t, None))
            out.append(self.encode_plus(a, b, add_special_tokens, max_length, truncation))
        self._pad(out, padding, max_length, pad_to_multiple_of, pad_token)
        return out

    def _truncation_settings(self, max_length, truncation):
        if truncation is None:
            truncation = self.truncation is not None
            if truncation and max_length is None:
                max_length = self.truncation["max_length"]
        if not truncation:
            return None
        if max_length is None:
            raise ValueError("truncation=True needs max_length")
        _check_length(max_length, "max_length")
        left = (self.truncation or {}).get("direction", "Right") == "Left"
        return max_length, left

    @staticmethod
    def _truncate(encodings, limit, left):
        """Hugging Face's ``longest_first``: the shorter text keeps its length if it can, else both get half."""
        if len(encodings) == 1:
            if len(encodings[0]) > limit:
                encodings[0]._cut(limit, left)
            return
        n1, n2 = len(encodings[0]), len(encodings[1])
        if n1 + n2 <= limit:
            return
        swap = n1 > n2
        short = min(n1, n2)
        n_short, n_long = short, (short if short > limit else max(short, limit - short))
        if n_short + n_long > limit:
            n_short = limit // 2
            n_long = n_short + limit % 2
        targets = (n_long, n_short) if swap else (n_short, n_long)
        for enc, n in zip(encodings, targets):
            if len(enc) > n:
                enc._cut(n, left)

    def _post_process(self, encodings, add_special_tokens) -> Encoding:
        """Offsets hook, then the template: its type ids always, its special tokens if asked for."""
        for k, enc in enumerate(encodings):
            self._finish_offsets(enc, first=(k == 0))
        items = self._template_items(len(encodings) == 2)
        if items is None:
            return Encoding.concat(encodings)
        parts = []
        for what, name, type_id in items:
            if what == "seq":
                enc = encodings[0 if name == "A" else 1]
                enc.type_ids = [type_id] * len(enc)
                parts.append(enc)
            elif add_special_tokens:
                parts.append(Encoding([self.special_tokens[name]], [name], [(0, 0)], [type_id], [1], [1]))
        return Encoding.concat(parts)

    def _finish_offsets(self, enc: Encoding, first: bool) -> None:
        """Hook for post-processing of offsets (byte-level ``trim_offsets``)."""

    def _pad(self, encodings, padding, max_length, multiple, pad_token):
        settings = self.padding
        if padding is None:
            if settings is None:
                return
            fixed = settings["strategy"] if isinstance(settings["strategy"], dict) else None
            padding, max_length = ("max_length", fixed["Fixed"]) if fixed else ("longest", None)
            multiple = settings.get("pad_to_multiple_of") if multiple is None else multiple
        if padding is False or not encodings:
            return
        if padding is True or padding == "longest":
            length = max(len(e) for e in encodings)
        elif padding == "max_length":
            if max_length is None:
                raise ValueError("padding='max_length' needs max_length")
            length = _check_length(max_length, "max_length")
        else:
            raise ValueError(f"padding must be 'longest', 'max_length', True, False or None, got {padding!r}")
        if multiple:
            _check_length(multiple, "pad_to_multiple_of", minimum=1)
            length = -(-length // multiple) * multiple
        if pad_token is None:
            pad_token = (settings or {}).get("pad_token") or next(
                (t for t in ("[PAD]", "<pad>") if t in self.special_tokens), None)
            if pad_token is None:
                raise ValueError("padding needs a pad token: pass pad_token= (a special token of this tokenizer)")
        pad_id = self.token_to_id(pad_token)
        if pad_id is None:
            raise ValueError(f"pad_token {pad_token!r} is not in the vocabulary")
        pad_type = (settings or {}).get("pad_type_id", 0)
        left = (settings or {}).get("direction", "Right") == "Left"
        for e in encodings:
            n = length - len(e)
            if n <= 0:
                continue
            pad = Encoding([pad_id] * n, [pad_token] * n, [(0, 0)] * n, [pad_type] * n, [0] * n, [1] * n)
            padded = Encoding.concat([pad, e] if left else [e, pad])
            e.__dict__.update(padded.__dict__)

    def enable_padding(self, pad_token: str = "[PAD]", length: int | None = None, direction: str = "right",
                       pad_to_multiple_of: int | None = None, pad_type_id: int = 0) -> None:
        """Pad every ``encode_batch`` (saved with the tokenizer): to ``length``, or to the longest."""
        if self.token_to_id(pad_token) is None:
            raise ValueError(f"pad_token {pad_token!r} is not in the vocabulary")
        if direction not in ("right", "left"):
            raise ValueError(f"direction must be 'right' or 'left', got {direction!r}")
        self.padding = {"strategy": {"Fixed": _check_length(length, "length")} if length is not None else
                        "BatchLongest", "direction": direction.capitalize(), "pad_to_multiple_of": pad_to_multiple_of,
                        "pad_id": self.token_to_id(pad_token), "pad_type_id": int(pad_type_id), "pad_token": pad_token}

    def enable_truncation(self, max_length: int, direction: str = "right") -> None:
        """Truncate every encoding to ``max_length`` tokens (saved with the tokenizer)."""
        if direction not in ("right", "left"):
            raise ValueError(f"direction must be 'right' or 'left', got {direction!r}")
        self.truncation = {"direction": direction.capitalize(), "max_length": _check_length(max_length, "max_length"),
                           "strategy": "LongestFirst", "stride": 0}

    # ------------------------------------------------------------------ files
    def to_json(self) -> dict:
        """This tokenizer as Hugging Face ``tokenizers``' ``tokenizer.json`` object."""
        model = self._model_json()
        added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                  "normalized": False, "special": True} for t, i in sorted(self.special_tokens.items(),
                                                                           key=lambda kv: kv[1])]
        posts = self._post_processor_json()
        post = None if not posts else posts[0] if len(posts) == 1 else {"type": "Sequence", "processors": posts}
        return {"version": "1.0", "truncation": self.truncation, "padding": self.padding, "added_tokens": added,
                "normalizer": None, "pre_tokenizer": self._pre_tokenizer_json(), "post_processor": post,
                "decoder": self._decoder_json(), "model": model}

    def _template_json(self) -> list[dict]:
        if self.template is None:
            return []

        def items(template):
            return [{"Sequence": {"id": name, "type_id": t}} if what == "seq" else
                    {"SpecialToken": {"id": name, "type_id": t}} for what, name, t in template]
        names = sorted({n for tpl in self.template.values() if tpl for w, n, _ in tpl if w == "special"})
        pair = self.template["pair"] or self.template["single"] + [("seq", "B", 1)]
        return [{"type": "TemplateProcessing", "single": items(self.template["single"]), "pair": items(pair),
                 "special_tokens": {n: {"id": n, "ids": [self.special_tokens[n]], "tokens": [n]} for n in names}}]

    def save(self, path) -> Path:
        """Write ``tokenizer.json`` (Hugging Face ``tokenizers``' format) atomically; returns the path.

        ``tokenizers.Tokenizer.from_file(path)`` loads it and encodes the same.
        """
        path = Path(path)
        text = json.dumps(self.to_json(), ensure_ascii=False, indent=2)
        fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return path

    @classmethod
    def from_file(cls, path):
        """Load a ``tokenizer.json`` written by ``save`` or by Hugging Face ``tokenizers``."""
        from ._files import load_tokenizer
        tok = load_tokenizer(path)
        if not isinstance(tok, cls):
            raise TokenizerFileError(f"{path}: holds a {type(tok).__name__} model, not a {cls.__name__}")
        return tok


def _check_length(n, name, minimum=0):
    check_int(n, name, minimum)
    return n
