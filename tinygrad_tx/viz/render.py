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

4. **routes**: an arrow that spans several ranks gets a *virtual* node in every rank it crosses
   (a narrow slot the ordering and the x placement treat like a box), so it runs down its own
   lane instead of through other boxes. Every arrow is drawn down its node's own column inside a
   rank and as a cubic curve only in the empty gap between two ranks: no arrow crosses a box
   that is not its end.
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
    virtual: bool = False      # a lane of a long arrow through this rank (not drawn)

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
    routes: dict = field(default_factory=dict)   # (a, b) -> the arrow's path: [("M"|"L"|"C", points...)]


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


LANE_W = 6.0      # the width a long arrow's lane takes in a rank it crosses


def _size(node: Node) -> None:
    if node.virtual:
        node.w, node.h = LANE_W, 0.0
        return
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
    real = [(a, b) for a, b in edges if a in nodes and b in nodes]
    real_inputs = {k: list(n.inputs) for k, n in nodes.items()}
    chains = {}                               # (a, b) -> [a, lane, lane, ..., b]
    for a, b in real:
        chain = [a]
        for r in range(nodes[a].rank + 1, nodes[b].rank):
            lane = Node(f"_lane{len(order)}", "", rank=r, virtual=True, inputs=[chain[-1]])
            nodes[lane.id] = lane
            consumers[lane.id] = []
            consumers[chain[-1]].append(lane.id)
            order.append(lane.id)
            chain.append(lane.id)
        if len(chain) > 1:                    # b now reads its input from the last lane
            nodes[b].inputs[nodes[b].inputs.index(a)] = chain[-1]
            consumers[a].remove(b)
            consumers[chain[-1]].append(b)
        chains[(a, b)] = chain + [b]
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
    bands = {}                                # rank -> (top, bottom) of its row of boxes
    for level in levels:
        h = max(nodes[k].h for k in level)
        bands[nodes[level[0]].rank] = (y, y + h)
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
    routes = {edge: _route([nodes[k] for k in chain], bands) for edge, chain in chains.items()}
    for key in [k for k in nodes if nodes[k].virtual]:
        del nodes[key]
    for key, inputs in real_inputs.items():   # each box's own inputs again (lanes were placement only)
        nodes[key].inputs = inputs
    if title:
        height += LINE_H * (title.count("\n") + 1) + 8
    if legend:
        x = MARGIN
        for node in legend:
            node.x, node.y = x + node.w / 2, height + node.h / 2
            x += node.w + GAP_X / 2
        width = max(width, x + MARGIN)
        height += max(n.h for n in legend) + MARGIN
    return Layout(nodes, real, legend, title, width, height, routes)


def _route(chain: list, bands: dict) -> list:
    """The path of one arrow through ``chain`` (its start, the lanes it crosses, its end): straight
    down each node's own column inside a rank, a cubic curve across each gap between ranks (the
    only place with no boxes), ending on the top of the last box."""
    start = chain[0]
    path = [("M", (start.x, start.y + start.h / 2))]
    for a, b in zip(chain, chain[1:]):
        bottom = bands[a.rank][1]
        top = bands[b.rank][0]
        if path[-1][1][1] < bottom:
            path.append(("L", (a.x, bottom)))
        mid = (bottom + top) / 2
        path.append(("C", (a.x, mid), (b.x, mid), (b.x, top)))
        end = b.y - b.h / 2 if not b.virtual else bands[b.rank][1]
        if end > top:
            path.append(("L", (b.x, end)))
    return path


def route_points(path: list, steps: int = 12) -> list:
    """Points along a route (each curve sampled at ``steps`` places): for drawing and for tests."""
    points, here = [], None
    for cmd, *pts in path:
        if cmd == "C" and here is not None:
            (x0, y0), (x1, y1), (x2, y2), (x3, y3) = here, *pts
            for i in range(1, steps + 1):
                t = i / steps
                u = 1 - t
                points.append((u ** 3 * x0 + 3 * u * u * t * x1 + 3 * u * t * t * x2 + t ** 3 * x3,
                               u ** 3 * y0 + 3 * u * u * t * y1 + 3 * u * t * t * y2 + t ** 3 * y3))
        else:
            points.append(pts[0])
        here = points[-1] if cmd != "C" else pts[-1]
    return points


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
    for edge in lay.edges:
        d = " ".join(f"{cmd} " + " ".join(f"{x:.1f} {y:.1f}" for x, y in pts) for cmd, *pts in lay.routes[edge])
        out.append(f'<path d="{d}" fill="none" stroke="#4d4d4d" stroke-width="1" marker-end="url(#arrow)"/>')
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
    from matplotlib.path import Path

    lay = layout(dot_text)
    fig = Figure(figsize=(lay.width / dpi, lay.height / dpi), dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, lay.width)
    ax.set_ylim(lay.height, 0)
    ax.axis("off")
    size = 11 * 72 / dpi                      # 11 px, as the SVG
    codes = {"M": [Path.MOVETO], "L": [Path.LINETO], "C": [Path.CURVE4] * 3}
    for edge in lay.edges:
        route = lay.routes[edge]
        verts = [p for _, *pts in route for p in pts]
        kinds = [c for cmd, *_ in route for c in codes[cmd]]
        ax.add_patch(FancyArrowPatch(path=Path(verts, kinds), arrowstyle="-|>", mutation_scale=8,
                                     color="#4d4d4d", linewidth=0.8))
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
