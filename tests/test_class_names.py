"""Class names tell the three kinds of class apart (issue #22): an nn Module has torch's name
(``nn.Softmax``); an engine Function the op's name, with the suffix ``Fn`` exactly when an nn
Module has that name in any case (``SoftmaxFn``, ``Mul``); an exercise's reference answer
``<Op>Solution``. ``grad_fn`` shows the op's name as torch's node does (``SoftmaxBackward0``)."""
from __future__ import annotations

import collections
import importlib
import inspect
import pkgutil

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tinygrad_tx as tg
import tinygrad_tx.nn.functional as F
from tinygrad_tx.autograd import ArrayFunction
from tinygrad_tx.core.function import op_name
from reference.testing import DEVICE
from tinygrad_tx.exercises import solutions
from tinygrad_tx.exercises.ladder import LADDER
from tinygrad_tx.nn import Module

# two engine Functions of one name, known and not yet merged: linalg.vector_norm's and the one
# behind F.normalize / cosine_similarity / pairwise_distance (functional/distance.py)
KNOWN_DUPLICATES = {"VectorNorm"}


def _classes():
    found = []
    for info in pkgutil.walk_packages(tg.__path__, "tinygrad_tx."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        found += [v for v in vars(module).values() if inspect.isclass(v) and v.__module__ == module.__name__]
    return list(dict.fromkeys(found))     # a class once, also when an alias names it again


CLASSES = _classes()
MODULES = {c.__name__.lower() for c in CLASSES if issubclass(c, Module)}
FUNCTIONS = [c for c in CLASSES if issubclass(c, ArrayFunction) and c.__module__ != solutions.__name__]


def test_a_function_carries_fn_exactly_when_a_module_has_its_name():
    assert len(FUNCTIONS) > 100 and {"softmax", "layernorm", "tanh", "relu"} <= MODULES
    for cls in FUNCTIONS:
        assert cls.__name__.lower() not in MODULES, f"{cls.__module__}.{cls.__name__} is also an nn Module's name"
        if not cls.__name__.startswith("_"):
            wants_fn = op_name(cls).lower() in MODULES
            assert cls.__name__.endswith("Fn") == wants_fn, \
                f"{cls.__module__}.{cls.__name__}: {'add' if wants_fn else 'drop'} the suffix Fn"


def test_engine_function_names_are_unique():
    counts = collections.Counter(c.__name__ for c in FUNCTIONS if not c.__name__.startswith("_"))
    assert {n for n, k in counts.items() if k > 1} <= KNOWN_DUPLICATES


def test_exercise_solutions_have_their_own_names():
    own = [c for c in vars(solutions).values() if inspect.isclass(c) and c.__module__ == solutions.__name__]
    assert len(own) == len(LADDER) and all(c.__name__.endswith("Solution") for c in own)
    engine = {c.__name__ for c in FUNCTIONS}
    assert not engine & {c.__name__ for c in own}
    assert LADDER["softmax"].class_name == "Softmax" and LADDER["tanh_backward"].class_name == "TanhBackward"


X = np.random.default_rng(0).standard_normal((2, 4, 4, 4))
CASES = {   # op: (ours or torch's functional module, tensor) -> output
    "softmax": lambda f, t: f.softmax(t, -1), "log_softmax": lambda f, t: f.log_softmax(t, -1),
    "tanh": lambda f, t: f.tanh(t), "sigmoid": lambda f, t: f.sigmoid(t), "relu": lambda f, t: f.relu(t),
    "gelu": lambda f, t: f.gelu(t), "silu": lambda f, t: f.silu(t), "softplus": lambda f, t: f.softplus(t),
    "mish": lambda f, t: f.mish(t), "elu": lambda f, t: f.elu(t), "leaky_relu": lambda f, t: f.leaky_relu(t),
    "hardtanh": lambda f, t: f.hardtanh(t), "hardsigmoid": lambda f, t: f.hardsigmoid(t),
    "hardswish": lambda f, t: f.hardswish(t), "logsigmoid": lambda f, t: f.logsigmoid(t),
    "glu": lambda f, t: f.glu(t), "unfold": lambda f, t: f.unfold(t, 2),
    "fold": lambda f, t: f.fold(t.reshape(2, 8, 8), (3, 5), 2),
    "embedding": lambda f, t: f.embedding((torch.tensor if f is TF else tg.tensor)([1, 0, 1]), t[0, 0]),
    "Tensor.unfold": lambda f, t: t.unfold(1, 2, 1),
}


@pytest.mark.parametrize("op", list(CASES))
def test_grad_fn_is_named_as_torchs(op):
    """A renamed Function's node keeps torch's name: ``SoftmaxFn`` records ``SoftmaxBackward0``."""
    ours = CASES[op](F, tg.tensor(X, requires_grad=True)).grad_fn
    theirs = CASES[op](TF, torch.tensor(X, requires_grad=True, device=DEVICE)).grad_fn
    assert ours.name() == theirs.name() and repr(ours).startswith(f"<{theirs.name()} object")
    assert ours.fn.__name__ in (op_name(ours.fn), op_name(ours.fn) + "Fn")
    seen, todo = [], [ours]             # next_functions still walks down to the leaf
    while todo:
        node = todo.pop()
        seen.append(node.name())
        todo += [n for n, _ in node.next_functions if n is not None]
    assert seen[-1] == "torch::autograd::AccumulateGrad"
