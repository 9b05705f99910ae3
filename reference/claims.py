"""The PyTorch side of ``tinygrad-tx plot seq-cost --torch`` (``tinygrad_tx/training/experiments.py``,
``torch_sequence_cost``): the twins of its models, timed in this process, which the package
itself (NumPy only) starts as ``python -m reference.claims JOB``.

JOB is JSON: ``specs`` ({kind: [class name, kwargs]}, the same kwargs as ours), ``lengths``,
``batch``, ``repeats``, ``seed``, ``threads``. The token ids are the same seeded draw as ours
(``token_batch``), the calls the same (clear the gradients, forward with the full-sequence
loss, backward) and the rounds the same (``interleaved_medians``). Prints one JSON line:
``{"wall", "cpu": {kind: [median seconds per length]}, "torch": version}``.
"""
from __future__ import annotations

import json
import sys

import torch

import reference
from tinygrad_tx.training.experiments import interleaved_medians, token_batch


def measure(job: dict) -> dict:
    torch.set_num_threads(job["threads"])
    models = {k: getattr(reference, name)(**kwargs) for k, (name, kwargs) in job["specs"].items()}
    data = {T: torch.from_numpy(token_batch(T, job["batch"], job["seed"])) for T in job["lengths"]}

    def call(kind, T):
        model = models[kind]
        model.zero_grad(set_to_none=True)
        _, loss = model(data[T][:, :-1].contiguous(), data[T][:, 1:].contiguous())
        loss.backward()

    for kind in models:                        # one untimed warm-up call per model and length
        for T in job["lengths"]:
            call(kind, T)
    wall, cpu = interleaved_medians(list(models), job["lengths"], call, job["repeats"])
    return {"wall": wall, "cpu": cpu, "torch": torch.__version__}


if __name__ == "__main__":
    print(json.dumps(measure(json.loads(sys.argv[1]))))
