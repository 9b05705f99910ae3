"""Learn backprop by writing it: a ladder of backward exercises with a checker that diagnoses.

    tinygrad-tx exercise list                   the ladder (mul ... a whole GPT block) and your progress
    tinygrad-tx exercise start softmax          exercise_softmax.py: forward done, backward to write, hints
    tinygrad-tx exercise check softmax FILE     hypothesis shapes, random cotangents, float64, finite
                                                differences: the smallest failing case, the largest error
                                                and where, and the mistake when it is a known one
    tinygrad-tx exercise solution softmax       the library's composite, closed-form and fused versions

Modules: ``ladder`` (the rungs: what each draws, calls, compares with and suspects), ``solutions``
(the reference Functions, hand-written backwards with derivations), ``checker`` (the check and the
diagnosis), ``templates`` (the learner's file, the solution listing), ``commands`` (the CLI and the
progress file). NumPy only; hypothesis is imported by ``check`` alone.
"""
from .checker import Report, check, load_function
from .commands import main, register_exercise_commands
from .ladder import LADDER

__all__ = ["LADDER", "Report", "check", "load_function", "main", "register_exercise_commands"]
