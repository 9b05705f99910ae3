"""``tinygrad-tx train gpt`` / ``sample``: the tutorial's GPT on a names corpus.

The loss
--------
Every number called *loss* here is the **mean negative log-likelihood per character, in
nats, of every character of** ``'$' + name + '$'`` **after the first, each predicted from
the characters before it**: a name of n letters contributes n + 1 terms (its letters and
the closing '$'), and the mean runs over all terms of all names of the split. This is the
quantity of the tutorial's "bigram ~ 2.45" and of makemore's numbers, so they compare
directly. Both training layouts score exactly these terms:

* ``full`` (default, :class:`~tinygrad_tx.data.FullSequenceDataset`): one row per name,
  ``x = '$' + name`` and ``y = name + '$'`` right-padded, every real position scored in one
  forward pass (the causal mask makes position t see exactly the prefix of y[t]);
* ``prefix`` (the tutorial's :class:`~tinygrad_tx.data.CharAutoregressiveDataset`): one
  row per term, the prefix left-padded with '$' to ``block_size``, the last position
  scored. About seven times fewer terms per forward pass on names.txt.

A model is evaluated in the layout it was trained in (a prefix-trained model has never seen
a name start at position 0). With ``full``, a name longer than ``block_size - 1`` letters
is truncated to its first ``block_size`` terms (the count is reported; none for names.txt
and block 16); ``prefix`` crops long prefixes to their last ``block_size`` characters.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..data import IGNORE_INDEX, CharAutoregressiveDataset, CharVocab, FullSequenceDataset, load_names, split_names
from ..generation import generate
from ..models import BigramCountModel
from .config import GPTConfig
from .names_baselines import NAME_BASELINES, TITLES, baseline_spec
from .loop import Task, eval_batches, save_and_plot, summed_loss, train_and_test, trailing_columns
from .saving import load_run

DEFAULT_OUT = "runs/gpt/model.safetensors"
LOSS_NOTE = ("loss = mean negative log-likelihood per character (nats) of every character of "
             "'$' + name + '$' after the first, each predicted from the characters before it")


def corpus_name(data) -> str:
    return "the offline US Census first names" if data is None else str(data)


def load_split(data, split_seed: int):
    """``(all names, train, dev, test)`` of a names file (or the offline census names)."""
    names = load_names(data)
    if len(names) < 3:
        raise ValueError(f"{corpus_name(data)} holds {len(names)} name(s); the 80/10/10 split needs at least 3")
    fractions = (0.8, 0.1, 0.1)
    if len(names) < 10:  # every part must get at least one name
        fractions = ((len(names) - 2) / len(names), 1 / len(names), 1 / len(names))
    train, dev, test = split_names(names, seed=split_seed, fractions=fractions)
    return names, train, dev, test


def lm_dataset(names, vocab: CharVocab, block_size: int, layout: str):
    if layout == "full":
        return FullSequenceDataset(names, vocab, block_size)
    if layout == "prefix":
        return CharAutoregressiveDataset(names, vocab, block_size)
    raise ValueError(f"dataset layout must be 'full' or 'prefix', got {layout!r}")


class GPTTask(Task):
    """Next-character prediction on names (see the module docstring for the loss)."""

    unit = "tok"
    metric = "dev_loss"

    def __init__(self, config: GPTConfig, names=None):
        self.config = config
        if names is None:
            names = load_split(config.data, config.split_seed)
        self.names, self.train_names, self.dev_names, self.test_names = names
        self.vocab = CharVocab.tutorial()
        self.layout = "prefix" if config.type == "mlp" else config.dataset   # the MLP reads a fixed window
        self._train = lm_dataset(self.train_names, self.vocab, config.block_size, self.layout)
        self._eval = {"dev": lm_dataset(self.dev_names, self.vocab, config.block_size, self.layout),
                      "test": lm_dataset(self.test_names, self.vocab, config.block_size, self.layout)}

    @property
    def num_truncated(self) -> int:
        return getattr(self._train, "num_truncated", 0)

    def model_spec(self):
        c = self.config
        if c.type == "bigram":
            return "NeuralBigram", dict(vocab_size=len(self.vocab))
        if c.type == "mlp":
            return "FlattenMLP", dict(vocab_size=len(self.vocab), block_size=c.block_size, d_model=c.d_model,
                                      hidden=4 * c.d_model)
        if c.type in NAME_BASELINES:
            return baseline_spec(c, len(self.vocab))
        return "GPTLanguageModel", dict(vocab_size=len(self.vocab), d_model=c.d_model, n_heads=c.n_heads,
                                        n_layers=c.n_layers, block_size=c.block_size, dropout=c.dropout,
                                        attn_impl=c.attn_impl)

    def train_dataset(self):
        return self._train

    def trim(self, batch):
        x, y = batch
        if self.layout != "full":
            return batch
        n = trailing_columns(y != IGNORE_INDEX)
        return x[:, :n], y[:, :n]

    def batch_call(self, batch):
        x, y = batch
        return "__call__", (x, y), {}

    def count(self, batch) -> int:
        y = batch[1]
        return int((y != IGNORE_INDEX).sum()) if y.ndim == 2 else len(y)

    def evaluate(self, model, split: str) -> dict:
        total, n = summed_loss(model, eval_batches(self._eval[split]), self)
        return {f"{split}_loss": total / n}

    def info(self) -> dict:
        name, kwargs = self.model_spec()
        return {"task": "gpt", "model": name, "model_kwargs": kwargs, "dtype": self.config.dtype,
                "vocab": "".join(self.vocab.chars), "layout": self.layout, "data": self.config.data,
                "split_seed": self.config.split_seed, "config": self.config.to_dict()}


# --------------------------------------------------------------------------- sampling

def name_letters(text: str, vocab: CharVocab, what: str = "--prefix") -> str:
    """The one rule for names typed on the command line (``sample --prefix``, ``plot attention
    --name``): lower-cased, as :func:`~tinygrad_tx.data.load_names` lower-cases the corpus, and
    then only the vocabulary's letters; the sentinel '$' (it starts and ends every name) and
    anything else is a ``ValueError`` naming ``what``."""
    text = str(text).strip().lower()
    letters = set(vocab.chars) - {vocab.sentinel}
    bad = sorted(set(c for c in text if c not in letters))
    if bad:
        sentinel = "; '$' marks the start and end of every name and is added for you" \
            if vocab.sentinel in bad else ""
        raise ValueError(f"{what} {text!r}: characters not in the vocabulary: {''.join(bad)!r} (names use "
                         f"{''.join(sorted(letters))!r}; upper case is lower-cased{sentinel})")
    return text


class LastPosition:
    """A fixed-window model (``FlattenMLP``: logits (B, V) for the token after the window) seen as
    a language model whose logits are (B, 1, V), the shape ``generate`` reads the last position of."""

    def __init__(self, model):
        self.model, self.vocab_size, self.block_size = model, model.vocab_size, model.block_size

    def modules(self):
        return self.model.modules()

    def eval(self):
        self.model.eval()
        return self

    def __call__(self, idx, targets=None):
        logits, loss = self.model(idx)
        return logits.view(logits.shape[0], 1, logits.shape[1]), loss


def sample_names(model, vocab: CharVocab, num: int = 10, *, layout: str = "full", prefix: str = "",
                 temperature: float = 1.0, top_k=None, top_p=None, greedy: bool = False, seed=None,
                 max_len=None) -> list[str]:
    """Generate ``num`` names, each starting with ``prefix``, with any sampling strategy.

    The prompt is '$' + prefix (``layout='full'``) or ``block_size`` '$'s + prefix (``'prefix'``:
    the left-padded context the tutorial's dataset trains on). A name ends at the first '$'
    or after ``max_len`` letters (default ``block_size - 1``: the longest name a ``full``
    row holds).
    """
    if num < 0:
        raise ValueError(f"the number of names must be >= 0, got {num}")
    if num == 0:
        return []
    prefix = name_letters(prefix, vocab)
    cache = type(model).__name__ == "GPTLanguageModel"        # the KV cache follows a GPT's blocks
    if type(model).__name__ == "FlattenMLP":
        model, layout = LastPosition(model), "prefix"
    block = getattr(model, "block_size", None) or 32          # NeuralBigram reads one character
    max_len = block - 1 if max_len is None else int(max_len)
    if len(prefix) > max_len:
        raise ValueError(f"prefix {prefix!r} has {len(prefix)} letters, more than max_len={max_len}")
    pad = block if layout == "prefix" else 1
    prompt_ids = [vocab.sentinel_id] * pad + vocab.encode(prefix)
    if layout == "full" and len(prompt_ids) > block:
        raise ValueError(f"prefix {prefix!r} is longer than the model's context allows "
                         f"({block - 1} letters after '$')")
    prompt = np.tile(np.array(prompt_ids, dtype=np.int64), (num, 1))
    out = generate(model, prompt, max_new_tokens=max_len - len(prefix) + 1, temperature=temperature,
                   top_k=top_k, top_p=top_p, greedy=greedy, seed=seed, stop_token=vocab.sentinel_id,
                   use_cache=cache)
    return [(prefix + vocab.decode(row[len(prompt_ids):]).split(vocab.sentinel)[0])[:max_len] for row in out]


def mark_novel(names, train_names, all_names) -> list[str]:
    """Each name with '(new)', '(in training set)' or '(in the corpus, held out)'."""
    train, everything = set(train_names), set(all_names)
    out = []
    for n in names:
        if not n:
            out.append("(empty: the model ended the name at once)")
            continue
        tag = "in training set" if n in train else "in the corpus, held out" if n in everything else "new"
        out.append(f"{n}  ({tag})")
    return out


# --------------------------------------------------------------------------- training

def bigram_nll(task: GPTTask, alpha: float = 1.0) -> float:
    """Dev NLL of the alpha-smoothed bigram count model fitted on the same train split (the baseline)."""
    v = task.vocab
    model = BigramCountModel(len(v), alpha=alpha).fit(task.train_names, v.stoi, v.sentinel)
    return model.nll(task.dev_names, v.stoi, v.sentinel)


def train_gpt(config: GPTConfig | None = None, log=print, **overrides) -> dict:
    """Train the GPT; returns ``{"history", "dev_loss", "test_loss", "samples", "checkpoint",
    "train_seconds", "tokens_per_second", "model", "task"}``. ``overrides`` replace config fields."""
    config = (config or GPTConfig()).replace(**overrides)
    task = GPTTask(config)
    log(f"corpus: {corpus_name(config.data)}: {len(task.names)} names -> train {len(task.train_names)}, "
        f"dev {len(task.dev_names)}, test {len(task.test_names)} (split seed {config.split_seed}); "
        f"{config.dataset} layout, {len(task.train_dataset())} training rows")
    log(LOSS_NOTE)
    if task.num_truncated:
        log(f"note: {task.num_truncated} training names are longer than block_size - 1 = "
            f"{config.block_size - 1} letters and were truncated")
    run = train_and_test(task, log, DEFAULT_OUT)
    model, dev, test = run["model"], run["history"]["evals"][-1]["dev_loss"], run["test"]["test_loss"]
    log(f"done in {run['train_seconds']:.1f} s wall, {run['cpu_seconds']:.1f} s CPU "
        f"({run['units_per_second']:,.0f} tok/s): dev loss {dev:.4f}, test loss {test:.4f} (nats per character)")
    bigram = bigram_nll(task)
    path = save_and_plot(task, run, DEFAULT_OUT,
                         f"{model_title(task.model_spec())} on "
                         f"{corpus_name(None if config.data is None else Path(config.data).name)}",
                         {"dev_loss": dev, "test_loss": test, "bigram_dev_nll": bigram}, log,
                         reference={f"bigram count model, dev ({bigram:.3f})": bigram})
    samples = []
    if config.num_samples:
        samples = sample_names(model, task.vocab, config.num_samples, layout=task.layout,
                               temperature=config.temperature, top_k=config.top_k, top_p=config.top_p,
                               seed=config.seed)
        log("generated names:")
        for line in mark_novel(samples, task.train_names, task.names):
            log(f"  {line}")
    return {"history": run["history"], "dev_loss": dev, "test_loss": test, "samples": samples,
            "checkpoint": str(path), "train_seconds": run["train_seconds"], "cpu_seconds": run["cpu_seconds"],
            "tokens_per_second": run["units_per_second"], "model": model, "task": task}


def load_gpt(path):
    """``(model, vocab, info)`` from a ``train gpt`` checkpoint."""
    model, info = load_run(path)
    if info.get("task") != "gpt":
        raise ValueError(f"{path}: a {info.get('task')!r} checkpoint; sample needs one written by 'train gpt'")
    return model, CharVocab(list(info["vocab"])), info


def model_title(spec) -> str:
    """'GPT (d_model 64, 4 layers)', 'NeuralBigram (27 x 27 table)' or 'FlattenMLP (...)' of a model spec."""
    name, kw = spec
    if name == "NeuralBigram":
        return f"NeuralBigram ({kw['vocab_size']} x {kw['vocab_size']} table)"
    if name == "FlattenMLP":
        return f"FlattenMLP (window {kw['block_size']}, d_model {kw['d_model']}, hidden {kw['hidden']})"
    if name in TITLES:
        return TITLES[name](kw)
    return f"GPT (d_model {kw['d_model']}, {kw['n_layers']} layers)"


def describe(info: dict) -> str:
    kw = info["model_kwargs"]
    metrics = info.get("metrics", {})
    extra = f", dev loss {metrics['dev_loss']:.4f}" if "dev_loss" in metrics else ""
    layout = f"{info.get('layout', 'full')} layout{extra}"
    if info.get("model", "GPTLanguageModel") != "GPTLanguageModel":
        return f"{model_title((info['model'], kw))} ({layout})"
    return (f"GPTLanguageModel d_model {kw['d_model']}, {kw['n_heads']} heads, {kw['n_layers']} layers, "
            f"block {kw['block_size']} ({layout})")
