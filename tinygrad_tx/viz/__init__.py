"""Study tools: see the graph, watch gradients flow, look at what a model learned.

All of them run on the real engine and the real modules (no separate toy path):

* :mod:`.graph` -- :func:`to_dot` (the autograd graph as Graphviz DOT), :func:`write_graph`
  (SVG/PNG: Graphviz's ``dot`` when installed, else :mod:`.render`, which draws it without any
  system program), :func:`name_activations`, and the small instances behind
  ``tinygrad-tx graph`` (:func:`example_graph`);
* :mod:`.script` -- :func:`first_backward`: a learner's PyTorch script run on the engine up to
  its first ``.backward()`` (``tinygrad-tx trace FILE.py``, ``graph FILE.py``);
* :mod:`.trace` -- :func:`trace_backward`: every backward node in execution order, with
  shapes, gradient norms and saved bytes (``tinygrad-tx trace``);
* :mod:`.explain` -- :func:`explain`: a fused op's derivation and source next to its
  composite, with a live fused/composite/PyTorch gradient check; any other op's derivation,
  source, twice differentiability and check against torch (``tinygrad-tx explain``);
* :mod:`.pictures` -- the bigram matrix, the 3-D embeddings and the attention heat-maps
  (``tinygrad-tx plot``; needs matplotlib, imported only when drawing).

Hooks themselves are the engine's: ``Tensor.register_hook`` and
``Module.register_forward_hook``, with PyTorch's semantics.
"""
from .explain import OPS as EXPLAINABLE_OPS
from .explain import explain, live_check
from .graph import (EXAMPLES, GraphvizNotFound, example_graph, graph_summary, name_activations, to_dot,
                    write_graph)
from .script import first_backward
from .pictures import (attention_maps, attention_weights, bigram_counts, plot_attention, plot_bigram,
                       plot_embeddings_3d, vowel_gathering)
from .trace import BackwardRecord, BackwardTrace, trace_backward

__all__ = [
    "EXAMPLES", "EXPLAINABLE_OPS", "BackwardRecord", "BackwardTrace", "GraphvizNotFound", "attention_maps",
    "attention_weights", "bigram_counts", "example_graph", "explain", "first_backward", "graph_summary",
    "live_check",
    "name_activations", "plot_attention", "plot_bigram", "plot_embeddings_3d", "to_dot", "trace_backward",
    "vowel_gathering", "write_graph",
]
