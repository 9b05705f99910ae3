"""``tinygrad-tx train seq2seq``: the encoder-decoder with cross-attention (section 8.2).

Two tasks, each judged by **exact match** on held-out examples decoded greedily (the whole
output must equal the target; ``generate_seq2seq`` with the KV cache):

* ``dates`` (default): a date spelled out in words -> ISO ``YYYY-MM-DD``, e.g.
  ``"the fourteenth of march nineteen eighty two"`` -> ``"1982-03-14"``. Dates are drawn
  uniformly from 1900-01-01 .. 2099-12-31 without repetition (``num_examples`` of them,
  seeded with ``split_seed``), each written in one of three word orders ("march
  fourteenth ...", "the fourteenth of march ...", "fourteenth march ..."); years as
  spoken: "nineteen oh five", "nineteen hundred", "two thousand", "two thousand twenty
  three". The split is by date, so every test date is unseen. Source tokens are words
  (a 60-word vocabulary), target tokens characters (``'$'``, digits, ``'-'``). The
  decoder has to reorder (day-month-year -> year-month-day) and translate, which it can
  only do by attending to the right source words.
* ``reverse``: a name -> the name backwards (``"emma"`` -> ``"amme"``), on the names
  corpus (de-duplicated, split 80/10/10): character tokens on both sides.

The decoder input is ``'$' + target`` and its labels ``target + '$'`` (padding ignored);
the source is right-padded and masked. Loss = mean NLL per target character.

Both sides are encoded by tokenizers (``task.src_tokenizer``: a ``WordPieceTokenizer`` of the
whole date words, or a character tokenizer for names; ``task.tgt_tokenizer``: a character
tokenizer), saved next to the checkpoint as ``<stem>.source.tokenizer.json`` and
``<stem>.target.tokenizer.json`` (Hugging Face ``tokenizers``' format).
"""
from __future__ import annotations

import datetime

import numpy as np

from ..data import IGNORE_INDEX, ArrayDataset, CharVocab, load_names, split_names
from ..generation import generate_seq2seq
from ..tokenizers import WordPieceTokenizer, char_tokenizer, encode_known
from .encoder import tokenizer_path
from .config import Seq2SeqConfig
from .gpt import corpus_name
from .loop import Task, eval_batches, save_and_plot, summed_loss, trailing_columns, train_and_test

DEFAULT_OUT = "runs/seq2seq/model.safetensors"

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
ONES = ("", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
        "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
ORDINAL_ONES = ("", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
                "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth",
                "eighteenth", "nineteenth")
ORDINAL_TENS = {20: "twentieth", 30: "thirtieth"}
FIRST_DAY, LAST_DAY = datetime.date(1900, 1, 1), datetime.date(2099, 12, 31)
PAD_WORD = "<pad>"


def cardinal(n: int) -> list[str]:
    """1..99 in words."""
    if n < 20:
        return [ONES[n]]
    return [TENS[n // 10]] + ([ONES[n % 10]] if n % 10 else [])


def ordinal(n: int) -> list[str]:
    """1..31 as an ordinal in words."""
    if n < 20:
        return [ORDINAL_ONES[n]]
    if n % 10 == 0:
        return [ORDINAL_TENS[n]]
    return [TENS[n // 10], ORDINAL_ONES[n % 10]]


def spoken_year(year: int) -> list[str]:
    """1900..2099 as people say them."""
    century, rest = divmod(year, 100)
    if century == 19:
        if rest == 0:
            return ["nineteen", "hundred"]
        return ["nineteen"] + (["oh", ONES[rest]] if rest < 10 else cardinal(rest))
    if century == 20:
        return ["two", "thousand"] + (cardinal(rest) if rest else [])
    raise ValueError(f"years 1900..2099 only, got {year}")


def spell_date(date: datetime.date, form: int) -> list[str]:
    """The date in words, in word order ``form`` (0: month day year, 1: the day of month year,
    2: day month year)."""
    month, day, year = [MONTHS[date.month - 1]], ordinal(date.day), spoken_year(date.year)
    if form == 0:
        return month + day + year
    if form == 1:
        return ["the"] + day + ["of"] + month + year
    if form == 2:
        return day + month + year
    raise ValueError(f"form must be 0, 1 or 2, got {form}")


def date_vocabulary() -> list[str]:
    words = set(MONTHS) | set(ONES[1:]) | set(TENS[2:]) | set(ORDINAL_ONES[1:]) | set(ORDINAL_TENS.values())
    words |= {"the", "of", "oh", "hundred", "thousand"}
    return [PAD_WORD] + sorted(words)


def date_pairs(num: int, seed: int):
    """``num`` distinct random dates as (source words, ISO string) pairs."""
    span = (LAST_DAY - FIRST_DAY).days + 1
    if not 3 <= num <= span:
        raise ValueError(f"--num-examples must be in [3, {span}] (distinct dates), got {num}")
    rng = np.random.default_rng(seed)
    offsets = rng.choice(span, size=num, replace=False)
    forms = rng.integers(0, 3, size=num)
    pairs = []
    for off, form in zip(offsets, forms):
        date = FIRST_DAY + datetime.timedelta(days=int(off))
        pairs.append((spell_date(date, int(form)), date.isoformat()))
    return pairs


def pad_rows(rows, width: int, fill: int) -> np.ndarray:
    out = np.full((len(rows), width), fill, dtype=np.int64)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


class Seq2SeqTask(Task):
    unit = "tok"
    metric = "dev_exact"

    def __init__(self, config: Seq2SeqConfig):
        self.config = config
        self.tgt_vocab = None
        if config.task == "dates":
            words = date_vocabulary()
            self.src_itos = words
            # whole words only: every source word is in the vocabulary, so WordPiece takes it whole
            self.src_tokenizer = WordPieceTokenizer(words, unk_token=PAD_WORD)
            self.tgt_vocab = CharVocab(["$"] + list("0123456789-"))
            self.tgt_tokenizer = char_tokenizer(self.tgt_vocab.chars)
            pairs = date_pairs(config.num_examples, config.split_seed)
            examples = [(self.src_tokenizer.encode(" ".join(src)), tgt) for src, tgt in pairs]
            self.describe_source = "dates in words"
        elif config.task == "reverse":
            names = list(dict.fromkeys(load_names(config.data)))
            if len(names) < 3:
                raise ValueError(f"{corpus_name(config.data)} holds {len(names)} distinct name(s); "
                                 "the 80/10/10 split needs at least 3")
            self.tgt_vocab = CharVocab.tutorial()
            self.src_itos = self.tgt_vocab.chars
            self.src_tokenizer = self.tgt_tokenizer = char_tokenizer(self.tgt_vocab.chars)
            examples = [(encode_known(self.src_tokenizer, n), n[::-1]) for n in names]
            self.describe_source = f"names from {corpus_name(config.data)}"
        else:
            raise ValueError(f"--task must be 'dates' or 'reverse', got {config.task!r}")
        fractions = (0.8, 0.1, 0.1) if len(examples) >= 10 else \
            ((len(examples) - 2) / len(examples), 1 / len(examples), 1 / len(examples))
        self.splits = dict(zip(("train", "dev", "test"), split_names(examples, config.split_seed, fractions)))
        self.src_len = max(len(s) for s, _ in examples)
        self.tgt_len = max(len(t) for _, t in examples) + 1
        self.data = {k: self.encode(v) for k, v in self.splits.items()}

    def encode(self, examples) -> ArrayDataset:
        """src (padded with 0), src mask, decoder input ('$' + target), labels (target + '$', -100 padding)."""
        v = self.tgt_vocab
        src = pad_rows([s for s, _ in examples], self.src_len, 0)
        mask = pad_rows([[1] * len(s) for s, _ in examples], self.src_len, 0).astype(bool)
        tgt = [encode_known(self.tgt_tokenizer, t) for _, t in examples]
        tgt_in = pad_rows([[v.sentinel_id] + t for t in tgt], self.tgt_len, v.sentinel_id)
        tgt_out = pad_rows([t + [v.sentinel_id] for t in tgt], self.tgt_len, IGNORE_INDEX)
        return ArrayDataset(src, mask, tgt_in, tgt_out)

    def source_text(self, ids) -> str:
        """The source tokens as text (words joined by spaces, characters without)."""
        sep = " " if self.config.task == "dates" else ""
        return sep.join(self.src_itos[i] for i in ids)

    def model_spec(self):
        c = self.config
        return "EncoderDecoder", dict(src_vocab_size=len(self.src_itos), tgt_vocab_size=len(self.tgt_vocab),
                                      d_model=c.d_model, n_heads=c.n_heads, n_encoder_layers=c.n_layers,
                                      n_decoder_layers=c.n_layers, block_size=self.tgt_len,
                                      src_block_size=self.src_len, dropout=c.dropout, attn_impl=c.attn_impl)

    def train_dataset(self):
        return self.data["train"]

    def trim(self, batch):
        src, mask, tgt_in, tgt_out = batch
        s, t = trailing_columns(mask), trailing_columns(tgt_out != IGNORE_INDEX)
        return src[:, :s], mask[:, :s], tgt_in[:, :t], tgt_out[:, :t]

    def batch_call(self, batch):
        src, mask, tgt_in, tgt_out = batch
        return "__call__", (src, tgt_in), {"src_padding_mask": mask, "targets": tgt_out}

    def count(self, batch) -> int:
        return int((batch[3] != IGNORE_INDEX).sum())

    def decode(self, model, split: str, limit=None) -> tuple[list[str], list[str], list[str]]:
        """Greedy outputs, targets and source texts of a split (the first ``limit`` examples)."""
        src, mask, _, _ = self.data[split].arrays
        examples = self.splits[split][:limit]
        src, mask = src[:len(examples)], mask[:len(examples)]
        out = generate_seq2seq(model, src, max_new_tokens=self.tgt_len, greedy=True, src_padding_mask=mask,
                               start_token=self.tgt_vocab.sentinel_id, stop_token=self.tgt_vocab.sentinel_id)
        v = self.tgt_vocab
        outputs = [v.decode(row[1:]).split(v.sentinel)[0] for row in out]
        return outputs, [t for _, t in examples], [self.source_text(s) for s, _ in examples]

    def evaluate(self, model, split: str) -> dict:
        total, n = summed_loss(model, eval_batches(self.data[split]), self)
        outputs, targets, _ = self.decode(model, split)
        exact = float(np.mean([o == t for o, t in zip(outputs, targets)]))
        return {f"{split}_loss": total / n, f"{split}_exact": exact}

    def info(self) -> dict:
        name, kwargs = self.model_spec()
        return {"task": "seq2seq", "seq2seq_task": self.config.task, "model": name, "model_kwargs": kwargs,
                "dtype": self.config.dtype, "src_vocab": self.src_itos, "tgt_vocab": "".join(self.tgt_vocab.chars),
                "tokenizers": {role: tokenizer_path(self.config.out or DEFAULT_OUT, role).name
                               for role in ("source", "target")},
                "config": self.config.to_dict()}


def train_seq2seq(config: Seq2SeqConfig | None = None, log=print, **overrides) -> dict:
    """Train the encoder-decoder; returns ``{"history", "test_exact", "test_loss", "examples", ...}``."""
    config = (config or Seq2SeqConfig()).replace(**overrides)
    task = Seq2SeqTask(config)
    sizes = {k: len(v) for k, v in task.splits.items()}
    log(f"seq2seq task '{config.task}' ({task.describe_source}): train {sizes['train']}, dev {sizes['dev']}, "
        f"test {sizes['test']} (split seed {config.split_seed}); source vocabulary {len(task.src_itos)}, "
        f"target vocabulary {len(task.tgt_vocab)}")
    run = train_and_test(task, log, DEFAULT_OUT)
    test, n_test = run["test"], sizes["test"]
    log(f"done in {run['train_seconds']:.1f} s: test exact match {test['test_exact']:.2%} "
        f"({round(test['test_exact'] * n_test)}/{n_test}, greedy decoding), test loss {test['test_loss']:.4f}")
    examples = list(zip(*task.decode(run["model"], "test", limit=5)))
    for o, t, s in examples:
        log(f"  {s} -> {o}  ({'ok' if o == t else f'expected {t}'})")
    path = save_and_plot(task, run, DEFAULT_OUT, f"EncoderDecoder: {config.task}", test, log, metric="dev_exact")
    tokenizers = {role: str(tok.save(tokenizer_path(path, role))) for role, tok in
                  (("source", task.src_tokenizer), ("target", task.tgt_tokenizer))}
    log(f"tokenizers: {tokenizers['source']}, {tokenizers['target']}")
    return {"history": run["history"], **test, "examples": [(s, o, t) for o, t, s in examples], "checkpoint": str(path),
            "tokenizers": tokenizers,
            "train_seconds": run["train_seconds"], "model": run["model"], "task": task}
