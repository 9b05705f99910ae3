"""``tinygrad-tx train encoder``: first-name gender with the BERT-style encoder (section 8.1).

Data: the 1990 US Census first-name lists (offline, ``load_census_first_names``): 1,219
male and 4,275 female names. 331 names are on both lists (``james``, ``mary``, ...), so
their label is not a property of the spelling; rather than invent a label for them they
are **left out of training and evaluation** (their count is reported). The remaining
4,832 names (888 male, 3,944 female) are split 80/10/10 with ``split_seed``. Held-out
names are therefore names the model has never seen.

Input: ``'$' + name``, right-padded; the leading '$' plays [CLS] (the encoder's
``classify`` pools position 0) and a padding mask hides the padding from attention.
Labels: 0 = male, 1 = female. The names are encoded by ``task.tokenizer``, one token per
character (``char_tokenizer``: the ids of ``CharVocab.tutorial()``), which is saved next to
the checkpoint as ``<stem>.tokenizer.json`` (Hugging Face ``tokenizers``' format;
``BPETokenizer.from_file`` or ``tokenizers.Tokenizer.from_file`` loads it).

Reported on the test split: accuracy, balanced accuracy (the mean of the per-class
recalls; the classes are 18% / 82%), and two baselines fitted on the train split: the
majority class, and the majority label of the name's last letter (``-a`` -> female...).
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from ..data import ArrayDataset, CharVocab, load_census_first_names, split_names
from ..tokenizers import char_tokenizer, encode_known
from .config import EncoderConfig
from .loop import Task, balanced_accuracy, classification_metrics, save_and_plot, trailing_columns, train_and_test

DEFAULT_OUT = "runs/encoder/model.safetensors"
GENDERS = ("male", "female")


def gender_data(split_seed: int):
    """``(train, dev, test)`` lists of (name, label) with ambiguous names removed, and the number removed."""
    pairs = load_census_first_names()
    genders: dict[str, set] = {}
    for name, gender in pairs:
        genders.setdefault(name, set()).add(gender)
    ambiguous = {n for n, g in genders.items() if len(g) > 1}
    items = [(n, GENDERS.index(next(iter(g)))) for n, g in genders.items() if n not in ambiguous]
    return split_names(items, seed=split_seed), len(ambiguous)


def tokenizer_path(checkpoint, role: str = "") -> Path:
    """``<stem>[.role].tokenizer.json`` beside the checkpoint: the tokenizer its task encoded with."""
    checkpoint = Path(checkpoint)
    return checkpoint.with_name(f"{checkpoint.stem}{'.' + role if role else ''}.tokenizer.json")


def encode_names(items, vocab: CharVocab, length: int, tokenizer=None) -> ArrayDataset:
    """ids ('$' + name, right-padded with '$'), padding mask (True = real), labels.

    ``tokenizer`` (default: ``char_tokenizer(vocab.chars)``) encodes each name; a character
    it does not know is an error."""
    tokenizer = tokenizer or char_tokenizer(vocab.chars)
    ids = np.full((len(items), length), vocab.sentinel_id, dtype=np.int64)
    mask = np.zeros((len(items), length), dtype=bool)
    for i, (name, _) in enumerate(items):
        row = [vocab.sentinel_id] + encode_known(tokenizer, name)
        ids[i, :len(row)] = row
        mask[i, :len(row)] = True
    labels = np.array([label for _, label in items], dtype=np.int64)
    return ArrayDataset(ids, mask, labels)


def baselines(train, test) -> dict:
    """Majority class and majority-by-last-letter accuracy on ``test``, fitted on ``train``."""
    labels = np.array([y for _, y in test])
    majority = Counter(y for _, y in train).most_common(1)[0][0]
    by_letter: dict[str, Counter] = {}
    for name, y in train:
        by_letter.setdefault(name[-1], Counter())[y] += 1
    pred = np.array([by_letter[n[-1]].most_common(1)[0][0] if n[-1] in by_letter else majority for n, _ in test])
    return {"majority_acc": float((labels == majority).mean()),
            "last_letter_acc": float((pred == labels).mean()),
            "last_letter_balanced_acc": balanced_accuracy(pred, labels)}


class EncoderTask(Task):
    unit = "name"
    metric = "dev_acc"

    def __init__(self, config: EncoderConfig):
        self.config = config
        (self.train_items, self.dev_items, self.test_items), self.num_ambiguous = gender_data(config.split_seed)
        self.vocab = CharVocab.tutorial()
        self.tokenizer = char_tokenizer(self.vocab.chars)
        self.length = 1 + max(len(n) for n, _ in self.train_items + self.dev_items + self.test_items)
        self.data = {k: encode_names(v, self.vocab, self.length, self.tokenizer) for k, v in
                     (("train", self.train_items), ("dev", self.dev_items), ("test", self.test_items))}

    def model_spec(self):
        c = self.config
        return "Encoder", dict(vocab_size=len(self.vocab), d_model=c.d_model, n_heads=c.n_heads,
                               n_layers=c.n_layers, block_size=self.length, num_classes=2, dropout=c.dropout,
                               attn_impl=c.attn_impl)

    def train_dataset(self):
        return self.data["train"]

    def trim(self, batch):
        ids, mask, labels = batch
        n = trailing_columns(mask)
        return ids[:, :n], mask[:, :n], labels

    def batch_call(self, batch):
        ids, mask, labels = batch
        return "classify", (ids,), {"padding_mask": mask, "labels": labels}

    def evaluate(self, model, split: str) -> dict:
        return classification_metrics(model, self.data[split], self, split)

    def info(self) -> dict:
        name, kwargs = self.model_spec()
        return {"task": "encoder", "model": name, "model_kwargs": kwargs, "dtype": self.config.dtype,
                "vocab": "".join(self.vocab.chars),
                "tokenizer": tokenizer_path(self.config.out or DEFAULT_OUT).name, "labels": list(GENDERS),
                "config": self.config.to_dict()}


def train_encoder(config: EncoderConfig | None = None, log=print, **overrides) -> dict:
    """Train the gender classifier; returns ``{"history", "test_acc", "test_balanced_acc", "baselines", ...}``."""
    config = (config or EncoderConfig()).replace(**overrides)
    task = EncoderTask(config)
    n_female = sum(y for _, y in task.train_items)
    log(f"census first names: {task.num_ambiguous} names on both the male and female lists left out; "
        f"train {len(task.train_items)} ({len(task.train_items) - n_female} male, {n_female} female), "
        f"dev {len(task.dev_items)}, test {len(task.test_items)} (split seed {config.split_seed})")
    run = train_and_test(task, log, DEFAULT_OUT)
    test = run["test"]
    base = baselines(task.train_items, task.test_items)
    log(f"done in {run['train_seconds']:.1f} s: test accuracy {test['test_acc']:.2%} "
        f"(balanced {test['test_balanced_acc']:.2%}); baselines: majority class {base['majority_acc']:.2%}, "
        f"last letter {base['last_letter_acc']:.2%} (balanced {base['last_letter_balanced_acc']:.2%})")
    path = save_and_plot(task, run, DEFAULT_OUT, "Encoder: first-name gender (US Census)", {**test, **base}, log,
                         metric="dev_acc")
    tok_path = task.tokenizer.save(tokenizer_path(path))
    log(f"tokenizer: {tok_path}")
    return {"history": run["history"], **test, "baselines": base, "checkpoint": str(path), "tokenizer": str(tok_path),
            "train_seconds": run["train_seconds"], "model": run["model"], "task": task}
