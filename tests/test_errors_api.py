"""Argument errors of optim, nn, nn.init, the factories, functional dropout and the tokenizers,
against torch (and Hugging Face ``tokenizers``).

Each case of :data:`LIKE_TORCH` is one call written once for both libraries (``M`` is ``torch``
or ``tinygrad_tx``). Where torch raises, ours must raise an instance of torch's exception class
(ours may be a documented subclass of it, e.g. ``InvalidArgumentError(ValueError, RuntimeError)``),
from a frame inside ``tinygrad_tx`` (not from NumPy or Python deep inside), with a message that
contains the given words (the argument's name and its value). Where torch accepts, ours must too.
:data:`EARLIER_THAN_TORCH` lists the calls torch accepts at construction and fails on later
(or never checks), which we refuse up front; :data:`LIKE_HF` does the same against ``tokenizers``.
"""
from __future__ import annotations

import math
import traceback
import warnings

import numpy as np
import pytest
import torch

import tinygrad_tx as tg
from tinygrad_tx import nn
from tinygrad_tx.optim import SGD, Adam, AdamW
from tinygrad_tx.optim.optimizer import ReadOnlyParameterError
from tinygrad_tx.tokenizers import BPETokenizer as BPE
from tinygrad_tx.tokenizers import WordPieceTokenizer as WP
from reference.testing import DEVICE

hf = pytest.importorskip("tokenizers")


def P(M):
    """One float parameter with a gradient."""
    p = M.nn.Parameter(M.zeros(2))
    p.grad = M.ones(2)
    return [p]


def opt(M):
    return M.optim.SGD(P(M), lr=0.1)


def lin(M):
    return M.nn.Linear(2, 3)


def Fn(M):
    return M.nn.functional


def sched(M):
    return M.optim.lr_scheduler


def load(M, state, strict=True):
    return lin(M).load_state_dict({k: v(M) for k, v in state.items()}, strict=strict)


W32, B3 = (lambda M: M.zeros(3, 2)), (lambda M: M.zeros(3))

# name: (call, words that our message must contain; () where torch accepts)
LIKE_TORCH = {
    # ------------------------------------------------------------------ dropout
    "F.dropout p str": (lambda M: Fn(M).dropout(M.ones(3), "0.5"), ("'p'", "'0.5'")),
    "F.dropout p None": (lambda M: Fn(M).dropout(M.ones(3), None), ("'p'", "None")),
    "F.dropout p > 1": (lambda M: Fn(M).dropout(M.ones(3), 1.5), ("p", "1.5")),
    "F.dropout p < 0": (lambda M: Fn(M).dropout(M.ones(3), -0.1), ("p", "-0.1")),
    "F.dropout p nan": (lambda M: Fn(M).dropout(M.ones(3), math.nan), ("p", "nan")),
    "F.dropout p bool": (lambda M: Fn(M).dropout(M.ones(3), True), ()),
    "F.dropout training str": (lambda M: Fn(M).dropout(M.ones(3), 0.5, training="yes"), ("training", "'yes'")),
    "nn.Dropout p str": (lambda M: M.nn.Dropout("0.5"), ("'p'", "'0.5'")),
    "nn.Dropout p None": (lambda M: M.nn.Dropout(None), ("'p'", "None")),
    "nn.Dropout p > 1": (lambda M: M.nn.Dropout(1.5), ("p", "1.5")),
    "nn.Dropout p bool": (lambda M: M.nn.Dropout(True), ()),
    # ------------------------------------------------------------------ other functional arguments
    "smooth_l1 beta < 0": (lambda M: Fn(M).smooth_l1_loss(M.ones(2), M.ones(2), beta=-1.0), ("beta", "-1.0")),
    "smooth_l1 beta str": (lambda M: Fn(M).smooth_l1_loss(M.ones(2), M.ones(2), beta="a"), ("beta", "'a'")),
    "huber delta 0": (lambda M: Fn(M).huber_loss(M.ones(2), M.ones(2), delta=0.0), ("delta", "0.0")),
    "huber delta str": (lambda M: Fn(M).huber_loss(M.ones(2), M.ones(2), delta="a"), ("delta", "'a'")),
    "nll_loss float target": (lambda M: Fn(M).nll_loss(M.ones(2, 3), M.tensor([0.0, 1.0])), ("target", "float32")),
    "nll_loss weight shape": (lambda M: Fn(M).nll_loss(M.ones(2, 3), M.tensor([0, 1]), weight=M.ones(2)),
                              ("weight", "(2,)")),
    "bce input > 1": (lambda M: Fn(M).binary_cross_entropy(M.ones(2) * 2, M.ones(2)), ("input", "between 0 and 1")),
    "celu alpha 0": (lambda M: Fn(M).celu(M.ones(2), 0.0), ("alpha", "0")),
    "gelu approximate str": (lambda M: Fn(M).gelu(M.ones(2), approximate="x"), ("approximate", "'x'")),
    "gelu approximate None": (lambda M: Fn(M).gelu(M.ones(2), approximate=None), ("approximate", "None")),
    "glu odd": (lambda M: Fn(M).glu(M.ones(2, 3)), ("halving dimension", "3")),
    "pad odd length": (lambda M: Fn(M).pad(M.ones(2, 3), (1, 2, 3)), ("padding length", "(1, 2, 3)")),
    "pad value str": (lambda M: Fn(M).pad(M.ones(2, 3), (1, 1), value="a"), ("value", "'a'")),
    "pad crops too much": (lambda M: Fn(M).pad(M.ones(2, 3), (-5, 0)), ("(-5, 0)",)),
    "pad reflect too wide": (lambda M: Fn(M).pad(M.ones(2, 3), (5, 5), mode="reflect"), ("reflect", "(5, 5)")),
    "pad too long": (lambda M: Fn(M).pad(M.ones(2, 3), (1,) * 6), ("padding length", "6")),
    "pairwise_distance eps str": (lambda M: Fn(M).pairwise_distance(M.ones(2, 3), M.ones(2, 3), eps="a"),
                                  ("eps", "'a'")),
    "pairwise_distance shapes": (lambda M: Fn(M).pairwise_distance(M.ones(2, 3), M.ones(2, 4)), ("(2, 3)", "(2, 4)")),
    "cosine_similarity eps str": (lambda M: Fn(M).cosine_similarity(M.ones(2, 3), M.ones(2, 3), eps="a"),
                                  ("eps", "'a'")),
    "normalize eps str": (lambda M: Fn(M).normalize(M.ones(2, 3), eps="a"), ("eps", "'a'")),
    "one_hot too large": (lambda M: Fn(M).one_hot(M.tensor([0, 3]), 2), ("num_classes=2", "3")),
    "one_hot negative": (lambda M: Fn(M).one_hot(M.tensor([-1]), 2), ("non-negative", "-1")),
    "one_hot float": (lambda M: Fn(M).one_hot(M.tensor([0.0]), 2), ("float32",)),
    # ------------------------------------------------------------------ utils.data
    "TensorDataset sizes": (lambda M: M.utils.data.TensorDataset(M.arange(10.0), M.arange(9)), ("[10, 9]",)),
    "ConcatDataset empty": (lambda M: M.utils.data.ConcatDataset([]), ("empty",)),
    "random_split str": (lambda M: M.utils.data.random_split(M.utils.data.TensorDataset(M.arange(4.0)), "a"),
                         ("lengths", "'a'")),
    "random_split sum": (lambda M: M.utils.data.random_split(M.utils.data.TensorDataset(M.arange(4.0)), [1, 1]),
                         ("[1, 1]",)),
    "DataLoader batch_size 0": (lambda M: M.utils.data.DataLoader(M.utils.data.TensorDataset(M.arange(4.0)),
                                                                  batch_size=0), ("batch_size=0",)),
    "DataLoader batch_size str": (lambda M: M.utils.data.DataLoader(M.utils.data.TensorDataset(M.arange(4.0)),
                                                                    batch_size="a"), ("batch_size='a'",)),
    "BatchSampler drop_last str": (lambda M: M.utils.data.BatchSampler(range(3), 2, "x"), ("drop_last='x'",)),
    # ------------------------------------------------------------------ optimizers
    **{f"{O} {arg}={v!r}": (lambda M, O=O, arg=arg, v=v: getattr(M.optim, O)(P(M), **{arg: v}), (arg, repr(v)))
       for O in ("SGD", "Adam", "AdamW") for arg in ("lr", "weight_decay") for v in ("0.1", None)},
    **{f"{O} {arg}=-1": (lambda M, O=O, arg=arg: getattr(M.optim, O)(P(M), **{arg: -1.0}), (arg, "-1.0"))
       for O in ("SGD", "Adam", "AdamW") for arg in ("lr", "weight_decay")},
    "SGD lr Tensor": (lambda M: M.optim.SGD(P(M), lr=M.tensor(0.1)), ()),
    "SGD lr 2-element Tensor": (lambda M: M.optim.SGD(P(M), lr=M.ones(2)), ("lr", "1-element")),
    "SGD lr nan": (lambda M: M.optim.SGD(P(M), lr=math.nan), ()),
    "Adam lr nan": (lambda M: M.optim.Adam(P(M), lr=math.nan), ("lr", "nan")),
    "SGD momentum str": (lambda M: M.optim.SGD(P(M), lr=0.1, momentum="a"), ("momentum", "'a'")),
    "SGD momentum None": (lambda M: M.optim.SGD(P(M), lr=0.1, momentum=None), ("momentum", "None")),
    "SGD momentum -1": (lambda M: M.optim.SGD(P(M), lr=0.1, momentum=-1.0), ("momentum", "-1.0")),
    "SGD nesterov no momentum": (lambda M: M.optim.SGD(P(M), lr=0.1, nesterov=True), ("momentum=0",)),
    "SGD nesterov dampening": (lambda M: M.optim.SGD(P(M), lr=0.1, momentum=0.9, dampening=0.1, nesterov=True),
                               ("dampening=0.1",)),
    **{f"{O} betas={b!r}": (lambda M, O=O, b=b: getattr(M.optim, O)(P(M), betas=b), ("betas", w))
       for O in ("Adam", "AdamW") for b, w in ((0.9, "0.9"), (None, "None"), ((0.9,), "(0.9,)"),
                                                (("a", 0.9), "'a'"), ((1.0, 0.999), "1.0"), ((0.9, 1.0), "1.0"),
                                                ((-0.1, 0.9), "-0.1"))},
    **{f"{O} eps={v!r}": (lambda M, O=O, v=v: getattr(M.optim, O)(P(M), eps=v), ("eps", repr(v)))
       for O in ("Adam", "AdamW") for v in ("a", None, -1.0)},
    "Adam amsgrad None": (lambda M: M.optim.Adam(P(M), amsgrad=None), ()),
    **{f"{O} params {name}": (lambda M, O=O, make=make: getattr(M.optim, O)(make(M), lr=0.1), words)
       for O in ("SGD", "Adam", "AdamW") for name, make, words in (
           ("Tensor", lambda M: M.zeros(2, requires_grad=True), ("params", "Tensor")),
           ("[]", lambda M: [], ("empty parameter list",)),
           ("iter([])", lambda M: iter([]), ("empty parameter list",)),
           ("None", lambda M: None, ("params", "None")),
           ("int", lambda M: 5, ("params", "5")),
           ("[float]", lambda M: [1.0], ("float",)),
           ("str", lambda M: "ab", ("str",)),
           ("non-leaf", lambda M: [M.zeros(2, requires_grad=True) * 2], ("non-leaf",)),
           ("int tensor", lambda M: [M.zeros(2, dtype=M.int64)], ()),
           ("group without params", lambda M: [{"lr": 0.1}], ("'params'",)),
           ("group not a dict", lambda M: [{"params": P(M)}, 3], ("dict", "int")))},
    # ------------------------------------------------------------------ schedulers
    "LambdaLR int": (lambda M: sched(M).LambdaLR(opt(M), 3), ("lr_lambda", "3")),
    "LambdaLR None": (lambda M: sched(M).LambdaLR(opt(M), None), ("lr_lambda", "None")),
    "LambdaLR too many": (lambda M: sched(M).LambdaLR(opt(M), [lambda e: 1, lambda e: 1]), ("1", "2")),
    "LambdaLR not an optimizer": (lambda M: sched(M).LambdaLR(5, lambda e: 1), ("int", "Optimizer")),
    "StepLR not an optimizer": (lambda M: sched(M).StepLR(5, 2), ("int", "Optimizer")),
    "MultiStepLR int": (lambda M: sched(M).MultiStepLR(opt(M), 3), ("milestones", "3")),
    "LinearLR start 0": (lambda M: sched(M).LinearLR(opt(M), start_factor=0), ("start_factor",)),
    "LinearLR start str": (lambda M: sched(M).LinearLR(opt(M), start_factor="a"), ("start_factor", "'a'")),
    "LinearLR end 2": (lambda M: sched(M).LinearLR(opt(M), end_factor=2), ("end_factor", "2")),
    "ConstantLR factor 2": (lambda M: sched(M).ConstantLR(opt(M), factor=2), ("factor", "2")),
    "ConstantLR factor str": (lambda M: sched(M).ConstantLR(opt(M), factor="a"), ("factor", "'a'")),
    "OneCycleLR no steps": (lambda M: sched(M).OneCycleLR(opt(M), 0.1), ("total_steps",)),
    "OneCycleLR 0 steps": (lambda M: sched(M).OneCycleLR(opt(M), 0.1, total_steps=0), ("total_steps", "0")),
    "OneCycleLR max_lr str": (lambda M: sched(M).OneCycleLR(opt(M), "a", total_steps=10), ("max_lr", "'a'")),
    "OneCycleLR pct_start": (lambda M: sched(M).OneCycleLR(opt(M), 0.1, total_steps=10, pct_start=2),
                             ("pct_start", "2")),
    "WarmRestarts T_0 0": (lambda M: sched(M).CosineAnnealingWarmRestarts(opt(M), 0), ("T_0", "0")),
    "WarmRestarts T_mult 0": (lambda M: sched(M).CosineAnnealingWarmRestarts(opt(M), 2, T_mult=0),
                              ("T_mult", "0")),
    "ReduceLROnPlateau factor 1": (lambda M: sched(M).ReduceLROnPlateau(opt(M), factor=1.0), ("factor", "1.0")),
    "ReduceLROnPlateau factor str": (lambda M: sched(M).ReduceLROnPlateau(opt(M), factor="a"), ("factor", "'a'")),
    "ReduceLROnPlateau mode": (lambda M: sched(M).ReduceLROnPlateau(opt(M), mode="x"), ("mode", "x")),
    "StepLR resume without initial_lr": (lambda M: sched(M).StepLR(opt(M), 2, last_epoch=3), ("initial_lr",)),
    # ------------------------------------------------------------------ gradient clipping
    "clip norm_type fro": (lambda M: M.nn.utils.clip_grad_norm_(P(M), 1.0, norm_type="fro"),
                           ("norm_type", "'fro'")),
    "clip norm_type None": (lambda M: M.nn.utils.clip_grad_norm_(P(M), 1.0, norm_type=None), ("norm_type", "None")),
    "clip norm_type 'inf'": (lambda M: M.nn.utils.clip_grad_norm_(P(M), 1.0, norm_type="inf"), ()),
    "clip max_norm str": (lambda M: M.nn.utils.clip_grad_norm_(P(M), "a"), ("max_norm", "'a'")),
    "clip max_norm None": (lambda M: M.nn.utils.clip_grad_norm_(P(M), None), ("max_norm", "None")),
    "clip parameters int": (lambda M: M.nn.utils.clip_grad_norm_(5, 1.0), ("parameters", "5")),
    "clip_value str": (lambda M: M.nn.utils.clip_grad_value_(P(M), "a"), ("clip_value", "'a'")),
    "clip_value None": (lambda M: M.nn.utils.clip_grad_value_(P(M), None), ("clip_value", "None")),
    # ------------------------------------------------------------------ nn constructors
    "Linear negative": (lambda M: M.nn.Linear(-1, 3), ("in_features", "-1")),
    "Linear float": (lambda M: M.nn.Linear(2.5, 3), ("in_features", "2.5")),
    "Linear None": (lambda M: M.nn.Linear(None, 3), ("in_features", "None")),
    "Embedding negative": (lambda M: M.nn.Embedding(-1, 3), ("num_embeddings", "-1")),
    "Embedding negative dim": (lambda M: M.nn.Embedding(10, -3), ("embedding_dim", "-3")),
    "Embedding float": (lambda M: M.nn.Embedding(10.0, 3), ("num_embeddings", "10.0")),
    "Embedding padding_idx high": (lambda M: M.nn.Embedding(10, 3, padding_idx=10), ("padding_idx", "10")),
    "Embedding padding_idx low": (lambda M: M.nn.Embedding(10, 3, padding_idx=-11), ("padding_idx", "-11")),
    "Embedding padding_idx float": (lambda M: M.nn.Embedding(10, 3, padding_idx=2.5), ("padding_idx", "2.5")),
    "Embedding _weight shape": (lambda M: M.nn.Embedding(10, 3, _weight=M.zeros(3, 3)), ("_weight", "(3, 3)")),
    "LayerNorm negative": (lambda M: M.nn.LayerNorm(-1), ("normalized_shape", "-1")),
    "LayerNorm negative in list": (lambda M: M.nn.LayerNorm([2, -1]), ("normalized_shape", "-1")),
    "LayerNorm str": (lambda M: M.nn.LayerNorm("a"), ("normalized_shape", "'a'")),
    "LayerNorm float": (lambda M: M.nn.LayerNorm(2.5), ("normalized_shape", "2.5")),
    "LayerNorm None": (lambda M: M.nn.LayerNorm(None), ("normalized_shape", "None")),
    "RMSNorm negative": (lambda M: M.nn.RMSNorm(-1), ("normalized_shape", "-1")),
    "RMSNorm float": (lambda M: M.nn.RMSNorm(2.5), ("normalized_shape", "2.5")),
    "MHA not divisible": (lambda M: M.nn.MultiheadAttention(5, 2), ("embed_dim", "num_heads", "5", "2")),
    "MHA 0 heads": (lambda M: M.nn.MultiheadAttention(4, 0), ("num_heads=0",)),
    "MHA negative": (lambda M: M.nn.MultiheadAttention(-4, 2), ("embed_dim=-4",)),
    "MHA float": (lambda M: M.nn.MultiheadAttention(4.0, 2), ("embed_dim", "4.0")),
    **{f"{R} {name}": (lambda M, R=R, kw=kw: getattr(M.nn, R)(**kw), words)
       for R in ("RNN", "GRU", "LSTM") for name, kw, words in (
           ("hidden 0", dict(input_size=4, hidden_size=0), ("hidden_size",)),
           ("input float", dict(input_size=4.0, hidden_size=3), ("input_size",)),
           ("hidden float", dict(input_size=4, hidden_size=3.0), ("hidden_size",)),
           ("input negative", dict(input_size=-1, hidden_size=3), ("input_size",)),
           ("0 layers", dict(input_size=4, hidden_size=3, num_layers=0), ("num_layers",)),
           ("float layers", dict(input_size=4, hidden_size=3, num_layers=2.0), ("num_layers",)),
           ("dropout 2", dict(input_size=4, hidden_size=3, dropout=2), ("dropout", "2")),
           ("dropout str", dict(input_size=4, hidden_size=3, dropout="a"), ("dropout",)))},
    "RNN nonlinearity": (lambda M: M.nn.RNN(4, 3, nonlinearity="x"), ("nonlinearity", "'x'")),
    "LSTM proj_size negative": (lambda M: M.nn.LSTM(4, 3, proj_size=-1), ("proj_size", "-1")),
    "LSTM proj_size too large": (lambda M: M.nn.LSTM(4, 3, proj_size=3), ("proj_size", "hidden_size")),
    "LSTMCell negative": (lambda M: M.nn.LSTMCell(-1, 3), ("input_size", "-1")),
    "GRUCell float": (lambda M: M.nn.GRUCell(4.0, 3), ("input_size", "4.0")),
    "Sequential int": (lambda M: M.nn.Sequential(M.nn.ReLU(), 5), ("int", "Module")),
    "ModuleList int": (lambda M: M.nn.ModuleList(5), ("ModuleList", "int")),
    "ModuleList [int]": (lambda M: M.nn.ModuleList([5]), ("int", "Module")),
    "ModuleDict int": (lambda M: M.nn.ModuleDict(5), ("ModuleDict", "int")),
    "ModuleDict dotted": (lambda M: M.nn.ModuleDict({"a.b": M.nn.ReLU()}), ("a.b",)),
    "ModuleDict empty name": (lambda M: M.nn.ModuleDict({"": M.nn.ReLU()}), ("empty",)),
    # ------------------------------------------------------------------ Module
    "load_state_dict missing": (lambda M: load(M, {"weight": W32}), ("Missing", "bias")),
    "load_state_dict unexpected": (lambda M: load(M, {"weight": W32, "bias": B3, "x": B3}), ("Unexpected", '"x"')),
    "load_state_dict shape": (lambda M: load(M, {"weight": lambda M: M.zeros(2, 2), "bias": B3}),
                              ("size mismatch", "weight")),
    "load_state_dict non-strict shape": (lambda M: load(M, {"weight": lambda M: M.zeros(2, 2)}, strict=False),
                                         ("size mismatch", "weight")),
    "load_state_dict non-strict extra": (lambda M: load(M, {"weight": W32, "x": B3}, strict=False), ()),
    "load_state_dict int": (lambda M: lin(M).load_state_dict(5), ("state_dict", "int")),
    "register_buffer dotted": (lambda M: lin(M).register_buffer("a.b", M.zeros(1)), ("buffer", "a.b")),
    "register_buffer empty": (lambda M: lin(M).register_buffer("", M.zeros(1)), ("buffer", "empty")),
    "register_buffer int name": (lambda M: lin(M).register_buffer(5, M.zeros(1)), ("buffer name", "int")),
    "register_buffer int value": (lambda M: lin(M).register_buffer("x", 5), ("'int'", "'x'")),
    "register_buffer existing": (lambda M: lin(M).register_buffer("weight", M.zeros(1)), ("'weight'",)),
    "register_parameter dotted": (lambda M: lin(M).register_parameter("a.b", M.nn.Parameter(M.zeros(1))),
                                  ("parameter", "a.b")),
    "register_parameter empty": (lambda M: lin(M).register_parameter("", M.nn.Parameter(M.zeros(1))),
                                 ("parameter", "empty")),
    "register_parameter int name": (lambda M: lin(M).register_parameter(5, M.nn.Parameter(M.zeros(1))),
                                    ("parameter name", "int")),
    "register_parameter Tensor": (lambda M: lin(M).register_parameter("w", M.zeros(1)), ("'w'", "Parameter")),
    "register_parameter int": (lambda M: lin(M).register_parameter("w", 5), ("'int'", "'w'")),
    "register_parameter existing": (lambda M: lin(M).register_parameter("training", M.nn.Parameter(M.zeros(1))),
                                    ("'training'",)),
    "add_module dotted": (lambda M: lin(M).add_module("a.b", M.nn.ReLU()), ("module", "a.b")),
    "add_module int": (lambda M: lin(M).add_module("x", 5), ("int", "Module")),
    "get_parameter missing": (lambda M: lin(M).get_parameter("nope"), ("nope",)),
    "train str": (lambda M: lin(M).train("x"), ("mode", "'x'")),
    "requires_grad_ str": (lambda M: lin(M).requires_grad_("x"), ("requires_grad", "'x'")),
    "apply int": (lambda M: lin(M).apply(5), ("int", "callable")),
    # ------------------------------------------------------------------ nn.init
    **{f"init {f} 1-D": (lambda M, f=f: getattr(M.nn.init, f)(M.zeros(3)), ("fewer than 2 dimensions",))
       for f in ("kaiming_uniform_", "kaiming_normal_", "xavier_uniform_", "xavier_normal_")},
    "init kaiming mode": (lambda M: M.nn.init.kaiming_uniform_(M.zeros(3, 3), mode="x"), ("mode", "'x'")),
    "init kaiming nonlinearity": (lambda M: M.nn.init.kaiming_uniform_(M.zeros(3, 3), nonlinearity="x"),
                                  ("nonlinearity", "x")),
    "init kaiming a str": (lambda M: M.nn.init.kaiming_uniform_(M.zeros(3, 3), a="x"), ("negative_slope", "x")),
    "init kaiming empty": (lambda M: M.nn.init.kaiming_uniform_(M.zeros(3, 0)), ()),
    "init calculate_gain": (lambda M: M.nn.init.calculate_gain("x"), ("nonlinearity", "x")),
    "init calculate_gain tanh param": (lambda M: M.nn.init.calculate_gain("tanh", 1), ()),
    "init xavier gain str": (lambda M: M.nn.init.xavier_uniform_(M.zeros(3, 3), gain="x"), ("gain", "'x'")),
    "init orthogonal 1-D": (lambda M: M.nn.init.orthogonal_(M.zeros(3)), ("2 or more dimensions", "(3,)")),
    "init eye_ 1-D": (lambda M: M.nn.init.eye_(M.zeros(3)), ("2 dimensions", "(3,)")),
    "init dirac_ 2-D": (lambda M: M.nn.init.dirac_(M.zeros(3, 3)), ("3, 4, or 5 dimensions", "(3, 3)")),
    "init normal_ std < 0": (lambda M: M.nn.init.normal_(M.zeros(3), std=-1.0), ("std", "-1.0")),
    "init normal_ mean str": (lambda M: M.nn.init.normal_(M.zeros(3), mean="a"), ("mean", "'a'")),
    "init normal_ int tensor": (lambda M: M.nn.init.normal_(M.zeros(3, dtype=M.int64)), ("normal_", "int64")),
    "init uniform_ a str": (lambda M: M.nn.init.uniform_(M.zeros(3), "a"), ("'a'",)),
    "init uniform_ a > b": (lambda M: M.nn.init.uniform_(M.zeros(3), 1.0, 0.0), ("a=1.0", "b=0.0")),
    "init uniform_ int tensor": (lambda M: M.nn.init.uniform_(M.zeros(3, dtype=M.int64)), ("uniform_", "int64")),
    "init trunc_normal_ a > b": (lambda M: M.nn.init.trunc_normal_(M.zeros(3), a=2, b=1), ("a=2", "b=1")),
    "init constant_ str": (lambda M: M.nn.init.constant_(M.zeros(3), "a"), ("val", "'a'")),
    "init zeros_ int": (lambda M: M.nn.init.zeros_(5), ("tensor", "int")),
    "init ones_ ndarray": (lambda M: M.nn.init.ones_(np.zeros(3)), ("tensor", "ndarray")),
    "init normal_ list": (lambda M: M.nn.init.normal_([1.0]), ("tensor", "list")),
    # ------------------------------------------------------------------ factories
    **{f"{f} negative": (lambda M, f=f: getattr(M, f)(-1), ("-1",)) for f in ("zeros", "ones", "empty", "rand",
                                                                              "randn", "randperm", "eye")},
    **{f"{f} float size": (lambda M, f=f: getattr(M, f)(2.5), ("size", "2.5")) for f in ("zeros", "ones", "empty",
                                                                                          "rand", "randn")},
    **{f"{f} None size": (lambda M, f=f: getattr(M, f)(None), ("size", "None")) for f in ("zeros", "ones", "randn")},
    "zeros str size": (lambda M: M.zeros("a"), ("size", "'a'")),
    "zeros requires_grad str": (lambda M: M.zeros(2, requires_grad="x"), ("requires_grad", "'x'")),
    "ones nested size": (lambda M: M.ones([2, [3]]), ("size", "[3]")),
    "full int size": (lambda M: M.full(3, 1.0), ("size", "3")),
    "full None value": (lambda M: M.full((2,), None), ("fill_value", "None")),
    "full negative": (lambda M: M.full((-1,), 1.0), ("-1",)),
    "arange step 0": (lambda M: M.arange(0, 1, 0), ("step", "0")),
    "arange str": (lambda M: M.arange("a"), ("end", "'a'")),
    "arange None": (lambda M: M.arange(None), ("end", "None")),
    "linspace negative steps": (lambda M: M.linspace(0, 1, -1), ("steps", "-1")),
    "linspace float steps": (lambda M: M.linspace(0, 1, 2.5), ("steps", "2.5")),
    "linspace str start": (lambda M: M.linspace("a", 1, 3), ("start", "'a'")),
    "logspace negative steps": (lambda M: M.logspace(0, 1, -1), ("steps", "-1")),
    "logspace str base": (lambda M: M.logspace(0, 1, 3, base="a"), ("base", "'a'")),
    "randint int size": (lambda M: M.randint(5, 3), ("size", "3")),
    "randint empty range": (lambda M: M.randint(3, 1, (2,)), ("from=3", "to=1")),
    "randint float in size": (lambda M: M.randint(5, (2.5,)), ("size", "2.5")),
    "randint str high": (lambda M: M.randint("a", (3,)), ("high", "'a'")),
    "randint negative size": (lambda M: M.randint(5, (-1,)), ("-1",)),
    "randperm float": (lambda M: M.randperm(2.5), ("n", "2.5")),
    "randperm None": (lambda M: M.randperm(None), ("n", "None")),
    "normal negative size": (lambda M: M.normal(0.0, 1.0, (-1,)), ("-1",)),
    "normal str mean": (lambda M: M.normal("a", 1.0, (3,)), ("mean", "'a'")),
    "normal str std": (lambda M: M.normal(0.0, "a", (3,)), ("std", "'a'")),
    "eye float": (lambda M: M.eye(2.5), ("n", "2.5")),
    "eye float m": (lambda M: M.eye(2, 2.5), ("m", "2.5")),
    "eye negative m": (lambda M: M.eye(2, -1), ("m", "-1")),
    "tensor str element": (lambda M: M.tensor([1, "a"]), ("str", "'a'")),
    "tensor dict": (lambda M: M.tensor({1: 2}), ("dict",)),
    "zeros_like int": (lambda M: M.zeros_like(5), ("input", "int")),
    "full_like str": (lambda M: M.full_like(M.zeros(2), "a"), ("fill_value", "'a'")),
    "manual_seed str": (lambda M: M.manual_seed("a"), ("seed", "'a'")),
    "manual_seed None": (lambda M: M.manual_seed(None), ("seed", "None")),
    "multinomial str samples": (lambda M: M.multinomial(M.ones(3), "a"), ("num_samples", "'a'")),
}


def _outcome(call, M):
    try:
        call(M)
    except Exception as e:   # noqa: BLE001 - the exception is what is compared
        return e
    return None


@pytest.fixture
def keep_rng():
    state = tg.get_rng_state()
    yield
    tg.set_rng_state(state)


def assert_ours(err, cls, words, what):
    """``err`` is a ``cls`` raised by tinygrad_tx code whose message contains ``words``."""
    assert err is not None, f"{what}: we accept it"
    assert isinstance(err, cls), f"{what}: we raise {type(err).__name__}: {err}"
    last = traceback.extract_tb(err.__traceback__)[-1].filename.replace("\\", "/")
    assert "/tinygrad_tx/" in last, f"{what}: our {type(err).__name__} comes from {last}: {err}"
    for w in words:
        assert w in str(err), f"{what}: our message does not name {w!r}: {err}"


@pytest.mark.parametrize("name", list(LIKE_TORCH))
def test_raises_like_torch(name, keep_rng):
    call, words = LIKE_TORCH[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs, ours = _outcome(call, torch), _outcome(call, tg)
    if theirs is None:
        assert not words, f"torch accepts {name}: the case should list no words"
        assert ours is None, f"torch accepts {name}, we raise {type(ours).__name__}: {ours}"
        return
    assert words, f"{name}: a case where torch raises must name the words our message needs"
    assert_ours(ours, type(theirs), words, f"{name} (torch: {type(theirs).__name__}: {theirs})")


# Calls torch accepts when they are made (and fails on at the first step or forward, or never
# checks), which we refuse at once: (call, our class, words).
EARLIER_THAN_TORCH = {
    "SGD dampening str": (lambda M: M.optim.SGD(P(M), lr=0.1, dampening="a"), TypeError, ("dampening", "'a'")),
    "Adam three betas": (lambda M: M.optim.Adam(P(M), betas=(0.9, 0.99, 0.9)), ValueError, ("betas", "3 values")),
    "Adam fused str": (lambda M: M.optim.Adam(P(M), fused="x"), ValueError, ("fused", "'x'")),
    "StepLR step_size str": (lambda M: sched(M).StepLR(opt(M), "a"), TypeError, ("step_size", "'a'")),
    "StepLR gamma str": (lambda M: sched(M).StepLR(opt(M), 2, gamma="a"), TypeError, ("gamma", "'a'")),
    "MultiStepLR str milestone": (lambda M: sched(M).MultiStepLR(opt(M), [3, "a"]), TypeError,
                                  ("milestones[1]", "'a'")),
    "ExponentialLR gamma None": (lambda M: sched(M).ExponentialLR(opt(M), None), TypeError, ("gamma", "None")),
    "CosineAnnealingLR T_max str": (lambda M: sched(M).CosineAnnealingLR(opt(M), "a"), TypeError, ("T_max", "'a'")),
    "CosineAnnealingLR T_max 0": (lambda M: sched(M).CosineAnnealingLR(opt(M), 0), ValueError, ("T_max", "0")),
    "CosineAnnealingLR eta_min str": (lambda M: sched(M).CosineAnnealingLR(opt(M), 10, eta_min="a"), TypeError,
                                      ("eta_min", "'a'")),
    "LinearLR total_iters str": (lambda M: sched(M).LinearLR(opt(M), total_iters="a"), TypeError,
                                 ("total_iters", "'a'")),
    "ReduceLROnPlateau patience str": (lambda M: sched(M).ReduceLROnPlateau(opt(M), patience="a"), TypeError,
                                       ("patience", "'a'")),
    "nn.Dropout p nan": (lambda M: M.nn.Dropout(math.nan), ValueError, ("p", "nan")),
    "MHA dropout 2": (lambda M: M.nn.MultiheadAttention(4, 2, dropout=2), ValueError, ("dropout", "2")),
    "MHA dropout str": (lambda M: M.nn.MultiheadAttention(4, 2, dropout="a"), TypeError, ("dropout", "'a'")),
    "Embedding max_norm": (lambda M: M.nn.Embedding(10, 3, max_norm=1.0), NotImplementedError, ("max_norm", "1.0")),
    "ParameterList int": (lambda M: M.nn.ParameterList([5]), TypeError, ("ParameterList", "int")),
    "ParameterDict int": (lambda M: M.nn.ParameterDict({"a": 5}), TypeError, ("ParameterDict", "int")),
    "init trunc_normal_ std < 0": (lambda M: M.nn.init.trunc_normal_(M.zeros(3), std=-1), ValueError, ("std", "-1")),
}


@pytest.mark.parametrize("name", list(EARLIER_THAN_TORCH))
def test_refused_earlier_than_torch(name, keep_rng):
    call, cls, words = EARLIER_THAN_TORCH[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _outcome(call, torch) is None, f"torch now refuses {name}: move it to LIKE_TORCH"
        assert_ours(_outcome(call, tg), cls, words, name)


# ---------------------------------------------------------------------------------- tokenizers

def _hf_tokenizer():
    tok = hf.Tokenizer(hf.models.BPE())
    tok.pre_tokenizer = hf.pre_tokenizers.ByteLevel()
    tok.train_from_iterator(TEXTS, hf.trainers.BpeTrainer(vocab_size=300, show_progress=False))
    return tok


TEXTS = ["hello world", "hello there"]
OURS = BPE.train(TEXTS, 260)

# name: (Hugging Face call, our call, words); both must raise the same class
LIKE_HF = {
    "BPE vocab_size str": (lambda: hf.trainers.BpeTrainer(vocab_size="300"), lambda: BPE.train(TEXTS, "300"),
                           ("vocab_size", "'300'")),
    "BPE vocab_size float": (lambda: hf.trainers.BpeTrainer(vocab_size=300.0), lambda: BPE.train(TEXTS, 300.0),
                             ("vocab_size", "300.0")),
    "BPE min_frequency str": (lambda: hf.trainers.BpeTrainer(min_frequency="a"),
                              lambda: BPE.train(TEXTS, 300, min_frequency="a"), ("min_frequency", "'a'")),
    "WordPiece vocab_size str": (lambda: hf.trainers.WordPieceTrainer(vocab_size="30"),
                                 lambda: WP.train(TEXTS, "30"), ("vocab_size", "'30'")),
    "encode int": (lambda: _hf_tokenizer().encode(5), lambda: OURS.encode(5), ("text", "int")),
    "encode None": (lambda: _hf_tokenizer().encode(None), lambda: OURS.encode(None), ("text", "NoneType")),
    "decode float id": (lambda: _hf_tokenizer().decode([1.5]), lambda: OURS.decode([1.5]), ("ids[0]", "1.5")),
    "decode str": (lambda: _hf_tokenizer().decode("abc"), lambda: OURS.decode("abc"), ("ids", "'abc'")),
    "decode int": (lambda: _hf_tokenizer().decode(5), lambda: OURS.decode(5), ("ids", "5")),
    "id_to_token str": (lambda: _hf_tokenizer().id_to_token("a"), lambda: OURS.id_to_token("a"), ("id", "'a'")),
    "token_to_id int": (lambda: _hf_tokenizer().token_to_id(5), lambda: OURS.token_to_id(5), ("token", "int")),
    "encode_batch None": (lambda: _hf_tokenizer().encode_batch(None), lambda: OURS.encode_batch(None),
                          ("texts", "None")),
    "encode_batch [int]": (lambda: _hf_tokenizer().encode_batch([5]), lambda: OURS.encode_batch([5]),
                           ("text", "int")),
    "add_special_tokens str": (lambda: _hf_tokenizer().add_special_tokens("ab"),
                               lambda: OURS.add_special_tokens("ab"), ("special tokens", "'ab'")),
    "from_file int": (lambda: hf.Tokenizer.from_file(5), lambda: BPE.from_file(5), ("path", "5")),
}


@pytest.mark.parametrize("name", list(LIKE_HF))
def test_tokenizer_errors_like_hugging_face(name):
    theirs_call, ours_call, words = LIKE_HF[name]
    with pytest.raises(Exception) as theirs:
        theirs_call()
    assert_ours(_outcome(lambda M: ours_call(), None), type(theirs.value), words, name)


TOKENIZER_ERRORS = {   # ours only (no Hugging Face call takes these arguments): (call, class, words)
    "BPE vocab_size too small": (lambda: BPE.train(TEXTS, 10), ValueError, ("vocab_size", "10")),
    "BPE special_tokens str": (lambda: BPE.train(TEXTS, 300, special_tokens="ab"), TypeError,
                               ("special_tokens", "'ab'")),
    "BPE merges str": (lambda: BPE(merges="ab"), TypeError, ("merges", "'ab'")),
    "BPE merges not pairs": (lambda: BPE(merges=[(1,)]), TypeError, ("merges[0]", "(1,)")),
    "WordPiece vocab int": (lambda: WP(5), TypeError, ("vocab", "5")),
    "WordPiece min_frequency str": (lambda: WP.train(TEXTS, 30, min_frequency="a"), TypeError,
                                    ("min_frequency", "'a'")),
    "max_length str": (lambda: OURS.encode_plus("a", max_length="a", truncation=True), TypeError,
                       ("max_length", "'a'")),
    "max_length negative": (lambda: OURS.encode_plus("a", max_length=-1, truncation=True), ValueError,
                            ("max_length", "-1")),
    "pad_to_multiple_of str": (lambda: OURS.encode_batch(["a"], padding=True, pad_to_multiple_of="a"), TypeError,
                               ("pad_to_multiple_of", "'a'")),
}


@pytest.mark.parametrize("name", list(TOKENIZER_ERRORS))
def test_tokenizer_argument_errors(name):
    call, cls, words = TOKENIZER_ERRORS[name]
    assert_ours(_outcome(lambda M: call(), None), cls, words, name)


def test_decode_takes_integer_arrays_and_tensors():
    ids = OURS.encode("hello")
    text = OURS.decode(ids)
    assert OURS.decode(np.array(ids)) == text == OURS.decode(tg.tensor(ids)) == OURS.decode(tuple(ids))
    assert OURS.decode([np.int64(i) for i in ids]) == text


# ---------------------------------------------------------------------------------- read-only arrays

READ_ONLY = {
    "read-only": lambda: _read_only(np.arange(3.0)),
    "broadcast": lambda: np.broadcast_to(np.array([1.5]), (3,)),
}


def _read_only(a):
    a.setflags(write=False)
    return a


@pytest.mark.parametrize("make", list(READ_ONLY))
@pytest.mark.parametrize("Opt", [SGD, Adam, AdamW], ids=lambda c: c.__name__)
def test_parameter_of_a_read_only_array_owns_writable_memory(make, Opt):
    """``Parameter`` copies read-only memory, so the step works; the update is torch's on a copy."""
    arr = READ_ONLY[make]()
    g = np.array([0.5, -1.0, 2.0])
    p = nn.Parameter(arr)
    assert p._data.flags.writeable and not np.shares_memory(p._data, arr)
    p.grad = tg.tensor(g)
    Opt([p], lr=0.1).step()
    t = torch.nn.Parameter(torch.tensor(np.array(arr), device=DEVICE))
    t.grad = torch.tensor(g, device=DEVICE)
    getattr(torch.optim, Opt.__name__)([t], lr=0.1).step()
    np.testing.assert_allclose(p._data, t.detach().cpu().numpy(), rtol=1e-12, atol=0)


@pytest.mark.parametrize("make", list(READ_ONLY))
@pytest.mark.parametrize("Opt", [SGD, Adam, AdamW], ids=lambda c: c.__name__)
def test_step_on_read_only_memory_raises_our_error(make, Opt):
    """``from_numpy`` shares the read-only array: the step refuses it, naming the parameter,
    before writing into it (instead of NumPy's "output array is read-only")."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # from_numpy warns about the read-only array
        t = tg.from_numpy(READ_ONLY[make]()).requires_grad_()
    before = t._data.copy()
    t.grad = tg.ones(3, dtype=tg.float64)
    q = nn.Parameter(tg.zeros(2, dtype=tg.float64))   # a writable parameter listed first
    q.grad = tg.ones(2, dtype=tg.float64)
    optimizer = Opt([q, t], lr=0.1)
    err = _outcome(lambda M: optimizer.step(), None)
    assert_ours(err, ReadOnlyParameterError, ("parameter 1", "(3,)", "read-only"), f"{Opt.__name__} {make}")
    assert isinstance(err, RuntimeError) and isinstance(err, ValueError)
    np.testing.assert_array_equal(t._data, before)
