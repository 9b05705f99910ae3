"""The files of a training run, read and written defensively (findings of a hostile test pass).

Reading: a directory or a FIFO given as a checkpoint (a FIFO would block forever); metadata
naming something other than a model class (a submodule, a function); constructor arguments
that do not fit the arrays (``vocab_size=1e9``: a MemoryError while building, before).
Writing: ``--out`` that is a directory, below a file, or on a read-only file system is refused
before the first step; the history copy is reconciled with the checkpoint. Data: names files
that are not UTF-8, ``CharVocab.encode(None)``.
"""
from __future__ import annotations

import errno
import json
import os
import re

import numpy as np
import pytest

from tinygrad_tx import cli
from tinygrad_tx.checkpoint import load_checkpoint, save_checkpoint
from tinygrad_tx.data import CharVocab, load_names
from tinygrad_tx.models import NeuralBigram
from tinygrad_tx.training import saving, train_gpt
from tinygrad_tx.training.saving import history_path, load_history, load_run, prepare_out, save_run

NAMES = ["emma", "olivia", "ava", "isabella", "sophia", "charlotte", "mia", "amelia", "harper", "evelyn"]


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "names.txt"
    path.write_text("\n".join(NAMES) + "\n")
    return path


def bigram_checkpoint(path, **info_changes):
    model = NeuralBigram(vocab_size=27)
    info = {"task": "gpt", "model": "NeuralBigram", "model_kwargs": {"vocab_size": 27}, "dtype": "float32",
            "vocab": "".join(CharVocab.tutorial().chars), **info_changes}
    save_run(path, model, None, None, info, {"step": [1], "loss": [3.0], "lr": [0.1], "grad_norm": [1.0],
                                            "evals": []}, step=1)
    return model


def one_line(capsys):
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


# ---------------------------------------------------------------------------- reading

def test_a_directory_or_a_fifo_as_checkpoint_is_refused(tmp_path, capsys):
    with pytest.raises(ValueError, match=f"{tmp_path}: is a directory"):
        load_checkpoint(tmp_path)
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="is a FIFO"):
        load_run(fifo)                       # returns at once: nothing opens the FIFO
    assert cli.main(["sample", "--checkpoint", str(fifo)]) == 1
    assert "is a FIFO (named pipe); a checkpoint must be a regular file" in one_line(capsys)


@pytest.mark.parametrize("name", ["gpt", "generate", "inputs", "ATTN_IMPLS", "os", "__builtins__"])
def test_metadata_must_name_a_model_class(tmp_path, name):
    path = tmp_path / "m.safetensors"
    bigram_checkpoint(path, model=name)
    with pytest.raises(ValueError, match=f"names the model '{name}', which is not a model class"):
        load_run(path)


@pytest.mark.parametrize("kwargs, match", [
    ({"vocab_size": 10 ** 9}, r"model_kwargs\['vocab_size'\] = 1000000000 does not fit"),
    ({"vocab_size": 1e9}, r"model_kwargs\['vocab_size'\] = 1000000000.0 does not fit"),
    ({"vocab_size": -3}, r"= -3 does not fit"),
    ({"vocab_size": [27]}, "is not a number"),
    ({"vocab_size": 26}, "the arrays do not fit NeuralBigram"),
    ({"vocab_size": 27, "colour": 1}, "do not build a NeuralBigram"),
    ([27], "must be an object of named arguments"),
])
def test_model_kwargs_are_checked_against_the_arrays_before_building(tmp_path, kwargs, match):
    path = tmp_path / "m.safetensors"
    bigram_checkpoint(path, model_kwargs=kwargs)
    with pytest.raises(ValueError, match=match):
        load_run(path)


@pytest.mark.parametrize("vocab, match", [
    ("$abc", "vocab has 4 characters ('$abc') but the model has vocab_size 27"),
    ("abcdefghijklmnopqrstuvwxyz.", "is not a character vocabulary: the first symbol of a CharVocab must be the sentinel"),
    ("$abcdefghijklmnopqrstuvwxya", "repeated: ['a']"),
    (["$", "a"], "vocab must be a string"),
])
def test_a_vocabulary_that_does_not_fit_the_model_is_refused_at_load(tmp_path, capsys, vocab, match):
    """load_run accepted a vocabulary shorter than the model or without '$'; sample then refused it
    with messages that did not name the file."""
    path = tmp_path / "m.safetensors"
    bigram_checkpoint(path, vocab=vocab)
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))}: metadata .*{re.escape(match)}"):
        load_run(path)
    assert cli.main(["sample", "--checkpoint", str(path), "-n", "1"]) == 1
    assert str(path) in one_line(capsys)


def test_a_valid_checkpoint_still_loads(tmp_path):
    model = bigram_checkpoint(tmp_path / "m.safetensors")
    loaded, info = load_run(tmp_path / "m.safetensors")
    assert info["model"] == "NeuralBigram" and not loaded.training
    ours, saved = loaded.state_dict(), model.state_dict()
    assert list(ours) == list(saved) and all(np.array_equal(ours[k], saved[k]) for k in saved)


# ---------------------------------------------------------------------------- writing

def test_out_that_is_a_directory_is_refused_before_training(tmp_path, corpus, capsys):
    code = cli.main(["train", "gpt", "--data", str(corpus), "--steps", "2", "--d-model", "8", "--n-heads", "2",
                     "--n-layers", "1", "--no-progress", "--num-samples", "0", "--out", str(tmp_path)])
    line = one_line(capsys)
    assert code == 1 and f"--out {tmp_path} is a directory" in line and ".tmp" not in line
    assert "model.safetensors" in line


def test_out_below_a_file_names_the_file(tmp_path, corpus, capsys):
    (tmp_path / "afile").write_text("x")
    code = cli.main(["train", "gpt", "--data", str(corpus), "--steps", "2", "--no-progress", "--num-samples", "0",
                     "--out", str(tmp_path / "afile" / "x")])
    line = one_line(capsys)
    assert code == 1 and f"{tmp_path / 'afile'} is a file, not a directory" in line and "Errno 17" not in line


def test_unwritable_out_fails_before_the_first_step(tmp_path, corpus, monkeypatch):
    """A read-only file system, simulated (tests may run as root, whom chmod does not stop)."""
    def read_only(path, *a, **kw):
        raise OSError(errno.EROFS, "Read-only file system", str(path))
    monkeypatch.setattr(saving, "open", read_only, raising=False)
    lines = []
    with pytest.raises(OSError, match=f"--out {tmp_path / 'ro' / 'm.safetensors'}: cannot write to .*Read-only"):
        train_gpt(data=str(corpus), steps=2, d_model=8, n_heads=2, n_layers=1, progress=False, num_samples=0,
                  out=str(tmp_path / "ro" / "m.safetensors"), log=lines.append)
    assert not any(line.startswith(("model:", "step")) for line in lines)   # nothing was built or trained


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through a read-only mode")
def test_read_only_directory_fails_before_training(tmp_path, corpus):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(PermissionError, match="cannot write to"):
            prepare_out(ro / "m.safetensors")
    finally:
        ro.chmod(0o755)


def test_prepare_out_leaves_no_probe(tmp_path):
    prepare_out(tmp_path / "new" / "deeper" / "m.safetensors")
    assert os.listdir(tmp_path / "new" / "deeper") == []


def test_stale_history_copy_is_rewritten_from_the_checkpoint(tmp_path):
    path = tmp_path / "m.safetensors"
    bigram_checkpoint(path)
    stored = json.loads(load_checkpoint(path)[2]["history"])
    history_path(path).write_text(json.dumps({"step": [], "loss": []}))     # as if killed between the writes
    assert load_history(path) == stored
    assert json.loads(history_path(path).read_text()) == stored
    history_path(path).unlink()
    assert load_history(path) == stored and history_path(path).exists()


def test_history_copy_and_checkpoint_are_renamed_back_to_back(tmp_path, monkeypatch):
    """history.json disagreed with the checkpoint's step after 2 of 25 SIGKILLs: it was serialised and
    fsynced only after the checkpoint's rename. Now both are on disk under their temporary names before
    the first rename, and nothing runs between the two renames."""
    from tinygrad_tx import files
    path = tmp_path / "m.safetensors"
    bigram_checkpoint(path)
    events, real_replace, real_fsync = [], os.replace, os.fsync

    def replace(src, dst):
        events.append(("rename", os.path.basename(dst), sorted(os.listdir(tmp_path))))
        real_replace(src, dst)

    def fsync(fd):
        events.append(("fsync",))
        real_fsync(fd)
    monkeypatch.setattr(files.os, "replace", replace)
    monkeypatch.setattr(files.os, "fsync", fsync)
    bigram_checkpoint(path)
    renames = [i for i, e in enumerate(events) if e[0] == "rename"]
    assert [events[i][1] for i in renames] == ["m.safetensors", "m.history.json"]
    assert renames[1] == renames[0] + 1                      # no fsync (nor anything else) in between
    pid = os.getpid()
    assert f".m.history.json.tmp-{pid}" in events[renames[0]][2]    # the copy's bytes are already written
    assert json.loads(history_path(path).read_text()) == json.loads(load_checkpoint(path)[2]["history"])


def test_every_run_file_is_written_atomically_with_the_umask(tmp_path, corpus):
    old = os.umask(0o027)
    try:
        run = train_gpt(data=str(corpus), steps=3, d_model=8, n_heads=2, n_layers=1, progress=False,
                        num_samples=0, eval_every=2, out=str(tmp_path / "r" / "m.safetensors"), log=lambda *_: None)
    finally:
        os.umask(old)
    files = sorted(os.listdir(tmp_path / "r"))
    assert files == ["m.best.safetensors", "m.history.json", "m.loss.png", "m.safetensors"]
    assert all(os.stat(tmp_path / "r" / f).st_mode & 0o777 == 0o640 for f in files)
    assert json.loads((tmp_path / "r" / "m.history.json").read_text()) == run["history"]


# ---------------------------------------------------------------------------- data

def test_encode_of_a_non_string_is_a_type_error():
    vocab = CharVocab.tutorial()
    for bad in (None, 3, b"ab", ["a", "b"]):
        with pytest.raises(TypeError, match=f"encode expects a str, got {type(bad).__name__}"):
            vocab.encode(bad)


def test_names_file_that_is_not_utf8_names_file_and_line(tmp_path):
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("anna\nbob\nrenée\n".encode("latin-1"))
    with pytest.raises(ValueError, match=f"{latin}: line 3, column 4: byte 0xe9 is not UTF-8"):
        load_names(latin)
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"ab\n\x00\x01\xff\xfe\n")
    with pytest.raises(ValueError, match=f"{binary}: line 2, column 3: byte 0xff is not UTF-8"):
        load_names(binary)
    bom = tmp_path / "bom.txt"
    bom.write_bytes("\ufeffanna\nbob\n".encode("utf-8"))
    assert load_names(bom) == ["anna", "bob"]
