"""Draw an autograd graph without Graphviz: the DOT text of :func:`~tinygrad_tx.viz.to_dot` as a
self-contained SVG (written directly) or a PNG (matplotlib), for machines without ``dot``.

It reads the small part of DOT that ``to_dot`` writes (nodes with ``label``, ``shape``,
``fillcolor``; ``a -> b`` edges; the graph's ``label``; the ``legend*`` key nodes) and lays the
graph out in layers, as Graphviz's ``dot`` does in spirit:

1. **ranks**: an op's rank is one more than its highest input's (ops on leaves only: 1), a
   leaf's one less than its first consumer's: every arrow points down, the output (backward's
   start) at the bottom;
2. **order** within a rank: discovery order, then four sweeps that move every node to the
   mean position of its neighbours in the rank above (then below): fewer crossing arrows;
3. **x**: each node as close as it can get to the mean x of its inputs without overlapping
   its left neighbour; then every rank is centred.

Arrows are cubic curves from the bottom of an input to the top of its consumer.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape

CHAR_W, LINE_H, PAD_X, PAD_Y, GAP_X, GAP_Y, MARGIN = 6.6, 14.0, 10.0, 7.0, 18.0, 42.0, 16.0
FONT = "Helvetica, Arial, sans-serif"

_NODE = re.compile(r'^\s*(\w+) \[label="((?:[^"\\]|\\.)*)"(.*)\];\s*$')
_EDGE = re.compile(r"^\s*(\w+) -> (\w+);\s*$")
_GRAPH_LABEL = re.compile(r'label="((?:[^"\\]|\\.)*)";')
_ATTR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[\w.#]+)')


@dataclass
class Node:
    """One box, ellipse or note of the picture (sizes and position in pixels)."""

    id: str
    label: str
    shape: str = "box"
    fill: str = "#ffffff"
    bold: bool = False
    faint: bool = False
    rank: int = 0
    x: float = 0.0
    y: float = 0.0
    w: float = 0.0
    h: float = 0.0
    inputs: list = field(default_factory=list)

    @property
    def lines(self) -> list[str]:
        return self.label.split("\n")


@dataclass
class Layout:
    nodes: dict
    edges: list
    legend: list
    title: str | None
    width: float
    height: float


def _unquote(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), text)


def parse_dot(text: str):
    """``(nodes, edges, legend, title)`` from DOT text written by ``to_dot``."""
    nodes, edges, legend, title = {}, [], [], None
    for line in text.splitlines():
        m = _NODE.match(line)
        if m:
            attrs = {k: v.strip('"') for k, v in _ATTR.findall(m.group(3))}
            node = Node(m.group(1), _unquote(m.group(2)), shape=attrs.get("shape", "box"),
                        fill=attrs.get("fillcolor", "#ffffff"), bold="bold" in attrs.get("style", ""),
                        faint="fontcolor" in attrs)
            (legend.append(node) if node.id.startswith("legend") else nodes.__setitem__(node.id, node))
            continue
        m = _EDGE.match(line)
        if m:
            edges.append((m.group(1), m.group(2)))
            continue
        if line.strip().startswith("labelloc"):
            m = _GRAPH_LABEL.search(line)
            title = _unquote(m.group(1)) if m else None
    if not nodes:
        raise ValueError("the DOT text has no nodes to draw (was it written by to_dot?)")
    legend.sort(key=lambda n: n.id)
    return nodes, edges, legend, title


def _size(node: Node) -> None:
    node.w = max(len(s) for s in node.lines) * CHAR_W + 2 * PAD_X + (16 if node.shape == "ellipse" else 0)
    node.h = len(node.lines) * LINE_H + 2 * PAD_Y


def layout(text: str) -> Layout:
    """Ranks, order and positions of every node of the DOT text (see the module docstring)."""
    nodes, edges, legend, title = parse_dot(text)
    consumers: dict = {k: [] for k in nodes}
    for a, b in edges:
        if a in nodes and b in nodes:
            nodes[b].inputs.append(a)
            consumers[a].append(b)
    order = list(nodes)                       # to_dot lists the root first, then depth first
    done: dict = {}

    def rank(key):                            # iterative longest path from the sources
        stack = [key]
        while stack:
            k = stack[-1]
            pending = [i for i in nodes[k].inputs if i not in done]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            done[k] = 1 + max((done[i] for i in nodes[k].inputs), default=-1)
        return done[key]

    for key in order:
        nodes[key].rank = rank(key)
    for key in order:                         # a leaf sits right above its first consumer
        if not nodes[key].inputs and consumers[key]:
            nodes[key].rank = min(nodes[c].rank for c in consumers[key]) - 1
    ranks: dict = {}
    for key in order:
        ranks.setdefault(nodes[key].rank, []).append(key)
    levels = [ranks[r] for r in sorted(ranks)]
    for sweep in range(4):                    # barycentre ordering, down then up
        seq = levels[1:] if sweep % 2 == 0 else levels[-2::-1]
        for level in seq:
            pos = {k: i for lvl in levels for i, k in enumerate(lvl)}
            def bary(k, up=sweep % 2 == 0):
                near = nodes[k].inputs if up else consumers[k]
                return sum(pos[n] for n in near) / len(near) if near else pos[k]
            level.sort(key=bary)
    for node in nodes.values():
        _size(node)
    for node in legend:
        _size(node)
    y = MARGIN
    for level in levels:
        h = max(nodes[k].h for k in level)
        x = 0.0
        for k in level:
            node = nodes[k]
            want = (sum(nodes[i].x for i in node.inputs) / len(node.inputs)) if node.inputs else x + node.w / 2
            node.x = max(want, x + node.w / 2)
            node.y = y + h / 2
            x = node.x + node.w / 2 + GAP_X
        y += h + GAP_Y
    left = min(n.x - n.w / 2 for n in nodes.values())
    right = max(n.x + n.w / 2 for n in nodes.values())
    for level in levels:                      # centre every rank under the widest
        lo = nodes[level[0]].x - nodes[level[0]].w / 2
        hi = nodes[level[-1]].x + nodes[level[-1]].w / 2
        shift = (left + right) / 2 - (lo + hi) / 2
        shift = max(shift, left - lo)         # never past the left edge
        for k in level:
            nodes[k].x += shift - left + MARGIN
    width = max(n.x + n.w / 2 for n in nodes.values()) + MARGIN
    height = y - GAP_Y + MARGIN
    if title:
        height += LINE_H * (title.count("\n") + 1) + 8
    if legend:
        x = MARGIN
        for node in legend:
            node.x, node.y = x + node.w / 2, height + node.h / 2
            x += node.w + GAP_X / 2
        width = max(width, x + MARGIN)
        height += max(n.h for n in legend) + MARGIN
    return Layout(nodes, [(a, b) for a, b in edges if a in nodes and b in nodes], legend, title, width, height)


# --------------------------------------------------------------------------- SVG

def _svg_node(n: Node) -> list[str]:
    stroke = 'stroke="#333" stroke-width="2"' if n.bold else 'stroke="#555" stroke-width="1"'
    x0, y0 = n.x - n.w / 2, n.y - n.h / 2
    if n.shape == "ellipse":
        shape = f'<ellipse cx="{n.x:.1f}" cy="{n.y:.1f}" rx="{n.w / 2:.1f}" ry="{n.h / 2:.1f}" fill="{n.fill}" {stroke}/>'
    else:
        r = 0 if n.shape == "note" else 6
        shape = (f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{n.w:.1f}" height="{n.h:.1f}" rx="{r}" '
                 f'fill="{n.fill}" {stroke}/>')
    colour = "#555" if n.faint else "#000"
    top = n.y - (len(n.lines) - 1) * LINE_H / 2
    text = [f'<text x="{n.x:.1f}" y="{top + i * LINE_H + 4:.1f}" text-anchor="middle" fill="{colour}">'
            f"{escape(s)}</text>" for i, s in enumerate(n.lines)]
    return [f'<g class="node" id="{n.id}"><title>{escape(n.label)}</title>', shape, *text, "</g>"]


def to_svg_text(dot_text: str) -> str:
    """A self-contained SVG picture of the graph in ``dot_text`` (no Graphviz needed)."""
    lay = layout(dot_text)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{lay.width:.0f}" height="{lay.height:.0f}" '
           f'viewBox="0 0 {lay.width:.1f} {lay.height:.1f}" font-family="{FONT}" font-size="11">',
           "<!-- drawn by tinygrad_tx.viz.render (Graphviz's dot was not used) -->",
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#4d4d4d"/></marker></defs>',
           '<rect width="100%" height="100%" fill="white"/>']
    for a, b in lay.edges:
        s, d = lay.nodes[a], lay.nodes[b]
        x1, y1, x2, y2 = s.x, s.y + s.h / 2, d.x, d.y - d.h / 2
        bend = max(20.0, (y2 - y1) / 2)
        out.append(f'<path d="M {x1:.1f} {y1:.1f} C {x1:.1f} {y1 + bend:.1f} {x2:.1f} {y2 - bend:.1f} '
                   f'{x2:.1f} {y2:.1f}" fill="none" stroke="#4d4d4d" stroke-width="1" marker-end="url(#arrow)"/>')
    for n in lay.nodes.values():
        out += _svg_node(n)
    if lay.title:
        y = max(n.y + n.h / 2 for n in lay.nodes.values()) + LINE_H + 4
        for i, line in enumerate(lay.title.split("\n")):
            out.append(f'<text x="{lay.width / 2:.1f}" y="{y + i * LINE_H:.1f}" text-anchor="middle">'
                       f"{escape(line)}</text>")
    for n in lay.legend:
        out += _svg_node(n)
    out.append("</svg>")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- PNG

def write_png(dot_text: str, path, dpi: int = 100) -> None:
    """The same picture as :func:`to_svg_text`, as a PNG drawn with matplotlib (its object API
    and Agg canvas: no pyplot, no global backend change)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Ellipse, FancyArrowPatch, FancyBboxPatch

    lay = layout(dot_text)
    fig = Figure(figsize=(lay.width / dpi, lay.height / dpi), dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, lay.width)
    ax.set_ylim(lay.height, 0)
    ax.axis("off")
    size = 11 * 72 / dpi                      # 11 px, as the SVG
    for a, b in lay.edges:
        s, d = lay.nodes[a], lay.nodes[b]
        ax.add_patch(FancyArrowPatch((s.x, s.y + s.h / 2), (d.x, d.y - d.h / 2), arrowstyle="-|>",
                                     mutation_scale=8, color="#4d4d4d", linewidth=0.8,
                                     connectionstyle="arc3,rad=0.0"))
    for n in list(lay.nodes.values()) + lay.legend:
        kw = dict(facecolor=n.fill, edgecolor="#333" if n.bold else "#555", linewidth=2 if n.bold else 0.8)
        if n.shape == "ellipse":
            ax.add_patch(Ellipse((n.x, n.y), n.w, n.h, **kw))
        else:
            ax.add_patch(FancyBboxPatch((n.x - n.w / 2, n.y - n.h / 2), n.w, n.h,
                                        boxstyle="round,pad=0,rounding_size=6" if n.shape != "note" else "square,pad=0",
                                        **kw))
        ax.text(n.x, n.y, n.label, ha="center", va="center", fontsize=size, color="#555" if n.faint else "black",
                linespacing=1.2)
    if lay.title:
        y = max(n.y + n.h / 2 for n in lay.nodes.values()) + LINE_H
        ax.text(lay.width / 2, y, lay.title, ha="center", va="top", fontsize=size)
    fig.savefig(path, dpi=dpi, facecolor="white")
