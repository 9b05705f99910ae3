"""``tinygrad_tx.compile(fn, fuse=True)``: chains of elementwise steps of the recorded program become
one generated C loop each.

The recorded program (``recorder.py``) calls each Function's ``forward`` and ``backward``. Here
the elementwise ones (``Add``, ``Sub``, ``Mul``, ``Div``, ``Neg``, ``Exp``, ``Log``, ``TanhFn``,
``Erf``, ``Where``, ``Maximum``, ``Pow`` by a constant, ``ReluFn``, ``SigmoidFn``, ``SiluFn``,
``Sqrt``, ``GeluFn``, ``DropoutFn``, the bias add inside ``LinearFn``) and the sums of gradient terms (``add_term``) are read as what they compute
per element, forward and backward, with no ``ctx``: a forward's saved values are the program's
own variables (GELU's derivative, computed beside y as eager does, becomes one more output). A
backward that passes its gradient through (``Add``: dL/da = dL/db = g) makes no step at all.

Then, walking the program in order, each such step joins the chains that made its inputs when
they loop over the same shape and dtype and moving them down to this step keeps every other
reader of their values after it (nothing between reads them); otherwise it starts a chain. A chain is one C function (``fuse_kernels.py``): one statement per step, named after the
value it made; what other steps, or the result, read is written out, the rest stays in
registers. A Function all of whose steps stayed alone keeps its recorded lines (the same
NumPy calls as eager). Values are renamed where the program rebinds a name (``g_x`` summed from
two terms becomes ``g_x_v1``), so a chain moved down always reads the value it was recorded with.

Inputs a chain can read: of its shape, of one element, or broadcast along leading dimensions (a
bias: a suffix of its shape). Others (``(B, 1, D)`` against ``(B, T, D)``), other dtypes than
float32/float64, mixed dtypes and values whose shape depends on data leave the step unfused.

Numbers: the C performs each step's NumPy operations in their order, in the step's dtype (the
constants rounded to it as NumPy rounds them), without ``-ffast-math``; exp, log, tanh, erf come
from the C library (libmvec where vectorised) instead of NumPy's, so float results differ from
eager's in the last bits (tests: ``tests/test_compile_fuse.py``, judged as torch's float32 is).
"""
from __future__ import annotations

import ast
import math

import numpy as np

from .fuse_kernels import PRELUDE, FusedKernel, Spec, build_library, c_name, c_type, generate, index, literal, warn_once
from .program import _free_when_dead


class Unfusable(Exception):
    """A step this pass does not read as elementwise (it stays as recorded)."""


# ---------------------------------------------------------------------------------- the steps

class Micro:
    """One elementwise step: ``outs`` (variables) from ``ins`` (operands), C statements from
    ``body(args, outs, T)`` (args: each operand's C expression)."""

    def __init__(self, outs, ins, body, label, shape, dtype, unit, pos, section):
        self.outs, self.ins, self.body, self.label = outs, ins, body, label
        self.shape, self.dtype, self.unit, self.pos, self.section = shape, dtype, unit, pos, section
        self.group = None


class Opaque:
    """Recorded statements kept as they are (their names renamed to the versions they read and
    write); ``reads`` are the variables they read."""

    def __init__(self, stmts, pos, reads, unit=None):
        self.stmts, self.pos, self.reads, self.unit = stmts, pos, reads, unit


class Unit:
    """A Function call read as elementwise: its forward and backward steps, and its recorded
    lines (kept when none of its steps joined a chain)."""

    def __init__(self):
        self.micros = []
        self.saved = {}
        self.original = []          # (pos, statements, their names' versions) of its recorded lines
        self.reverted = False
        self.emitted = set()        # the positions of those lines already written (when reverted)


class Group:
    """A chain: steps of one loop shape and dtype, run as one kernel at its last step's place."""

    def __init__(self, number, first):
        self.number = number
        self.members = [first]
        self.pos = first.pos
        self.shape, self.dtype, self.section = first.shape, first.dtype, first.section
        self.segment = None


def _f(T):
    return "f" if T == "float" else ""


# ---------------------------------------------------------------------------------- the rewrite

def fuse_program(recorder, code):
    """``(code, {name: FusedKernel}, C source)`` of the recorded program with its elementwise
    chains fused, or None when no chain of two or more steps was found. Raises the build's
    errors (``NoCompiler``, ``KernelBuildError``)."""
    last = code.rstrip().splitlines()[-1].strip()
    if not last.startswith("return "):
        return None
    f = _Fuser(recorder)
    f.run()
    f.group()
    f.revert()
    if not f.groups:
        return None
    prologue, lines, sources = f.emit(last[len("return "):])
    if not sources:
        return None
    src = PRELUDE + "\n" + "\n".join(text for _, text in sources)
    lib = build_library(src)
    kernels = {spec.name: FusedKernel(spec, getattr(lib, spec.name)) for spec, _ in sources}
    head = ["# inputs and parameters (read each call)"] + prologue if prologue else []
    body = ["def program(ARGS):"] + ["    " + line for line in _free_when_dead(head + lines, f.ret_text)]
    body.append(f"    return {f.ret_text}")
    return "\n".join(body) + "\n", kernels, src


class _Fuser:
    def __init__(self, recorder):
        self.rec = recorder
        self.ns = recorder.ns
        self.arrays = {}
        for obj in recorder.keep:
            if isinstance(obj, np.ndarray) and id(obj) in recorder.names:
                self.arrays.setdefault(recorder.names[id(obj)], obj)
        self.dynamic_names = {recorder.names[i] for i in recorder.dynamic if i in recorder.names}
        self.version = {}
        self.assigned = set()
        self.all_names = set()
        self.info = {}             # var -> (shape, dtype) or None
        self.sparse = set()        # vars that may hold a SliceGrad (indexing's gradient)
        self.alias = {}            # var -> (var, dense): a backward that passes its gradient through
        self.steps = []
        self.units = {}            # ctx name -> Unit (a Function read as elementwise)
        self.ctx_args = {}         # ctx name -> [var or None] of an opaque forward's positional args
        self.reduced = set()       # names that reduce_grad_to_input reads (their shape is not the input's)

    # ---- names and versions
    def pyname(self, var):
        name, v = var
        if v == 0:
            return name
        base = f"{name}_v{v}"
        while base in self.all_names:
            base += "_"
        return base

    def load(self, name):
        return (name, self.version.get(name, 0))

    def store(self, name):
        if name == "_":
            return ("_", 0)
        self.version[name] = self.version[name] + 1 if name in self.version else 0
        return (name, self.version[name])

    def resolve(self, var, dense=False):
        while var in self.alias:
            var, d = self.alias[var]
            dense = dense or d
        return var, dense

    def loads(self, stmts):
        """{id(Name node): (var, dense)} for the names the statements read (before their stores)."""
        ren = {}
        for stmt in stmts:
            value = stmt.value if isinstance(stmt, (ast.Assign, ast.Expr)) else stmt
            for n in ast.walk(value):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in self.assigned:
                    ren[id(n)] = self.resolve(self.load(n.id))
        return ren

    @staticmethod
    def stored_names(stmt):
        if not isinstance(stmt, ast.Assign):
            return []
        return [n for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]

    def stores(self, stmts, ren, fresh=True):
        for stmt in stmts:
            for n in self.stored_names(stmt):
                ren[id(n)] = (self.store(n.id) if fresh else self.load(n.id), False)

    # ---- operands
    def operand(self, node):
        """An argument as an operand, ("var", var, dense) or ("const", value); else Unfusable."""
        if isinstance(node, ast.Constant) and type(node.value) in (int, float, bool):
            return ("const", node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
                and type(node.operand.value) in (int, float):
            return ("const", -node.operand.value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dense" \
                and len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id in self.assigned:
            var, _ = self.resolve(self.load(node.args[0].id), True)
            return ("var", var, True)
        if isinstance(node, ast.Name):
            if node.id not in self.assigned:
                v = self.ns.get(node.id)
                if isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.kind in "fb":
                    return ("const", v[()])
                if isinstance(v, (np.floating, np.bool_)) or type(v) in (int, float, bool):
                    return ("const", v)
                raise Unfusable(node.id)
            var, dense = self.resolve(self.load(node.id))
            return ("var", var, dense)
        raise Unfusable(ast.unparse(node))

    def check(self, ops, T, bools=()):
        """The broadcast shape of the operands, all of dtype T (bool where allowed); else Unfusable."""
        shapes = []
        for k, op in enumerate(ops):
            if op[0] == "const":
                v = op[1]
                if isinstance(v, np.generic) and v.dtype != T and not (k in bools and v.dtype == np.bool_):
                    raise Unfusable("a NumPy scalar of another dtype")
                continue
            info = self.info.get(op[1])
            if info is None or op[1] in self.sparse:
                raise Unfusable("an operand of unknown shape, or a slice's gradient")
            shape, dtype = info
            if dtype != T and not (k in bools and dtype == np.bool_):
                raise Unfusable("mixed dtypes")
            shapes.append(tuple(shape))
        out = tuple(np.broadcast_shapes(*shapes)) if shapes else ()
        for s in shapes:
            strip = s
            while strip and strip[0] == 1:
                strip = strip[1:]
            if s != out and int(np.prod(s, dtype=np.int64)) != 1 and strip != out[len(out) - len(strip):]:
                raise Unfusable(f"a broadcast of {s} to {out} other than along leading dimensions")
        return out

    # ---- reading the program
    def run(self):
        rec = self.rec
        trees = []
        for line in rec.prologue + rec.lines:
            tree = None if line.startswith("#") else ast.parse(line)
            trees.append(tree)
            if tree is None:
                continue
            for n in ast.walk(tree):
                if isinstance(n, ast.Name):
                    self.all_names.add(n.id)
                    if isinstance(n.ctx, ast.Store):
                        self.assigned.add(n.id)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "reduce_grad_to_input" \
                        and n.args and isinstance(n.args[0], ast.Name):
                    self.reduced.add(n.args[0].id)
        npro = len(rec.prologue)
        self.npro = npro
        for k in range(npro):
            self.opaque(trees[k].body, 4 * k)
        section = "inputs"
        for k, line in enumerate(rec.lines):
            pos = 4 * (npro + k)
            tree = trees[npro + k]
            if tree is None:
                self.steps.append(("comment", line, pos))
                section = line[2:]
                continue
            try:
                self.translate(tree.body, pos, section)
            except Unfusable:
                self.opaque(tree.body, pos)

    def opaque(self, stmts, pos, unit=None):
        ren = self.loads(stmts)
        infos = [self.infos_of(stmt, ren) for stmt in stmts]
        self.stores(stmts, ren)
        for stmt, info in zip(stmts, infos):
            for n, i in zip(self.stored_names(stmt), info):
                var = ren[id(n)][0]
                self.info[var] = i
                if i == "sparse":
                    self.info[var] = None
                    self.sparse.add(var)
            if var_arrays := [n for n in self.stored_names(stmt) if ren[id(n)][0][1] == 0 and n.id in self.arrays
                              and n.id not in self.dynamic_names]:
                for n in var_arrays:
                    a = self.arrays[n.id]
                    self.info[ren[id(n)][0]] = (tuple(a.shape), a.dtype)
        reads = [ren[id(n)][0] for stmt in stmts
                 for n in ast.walk(stmt.value if isinstance(stmt, (ast.Assign, ast.Expr)) else stmt)
                 if id(n) in ren and isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
        step = Opaque(stmts, pos, reads, unit)
        step.ren = ren
        self.steps.append(step)
        return step

    def infos_of(self, stmt, ren):
        """What an opaque statement assigns, per target: (shape, dtype), "sparse" or None."""
        if not isinstance(stmt, ast.Assign):
            return []
        names = self.stored_names(stmt)
        call = stmt.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in ("one", "as_array") \
                and call.args:
            call = call.args[0]
        fn = call.func if isinstance(call, ast.Call) else None
        out = [None] * len(names)

        def var_of(node):
            return ren[id(node)][0] if isinstance(node, ast.Name) and id(node) in ren else None

        if isinstance(fn, ast.Attribute) and fn.attr == "forward" and call.args and isinstance(call.args[0], ast.Name):
            self.ctx_args[call.args[0].id] = [var_of(a) for a in call.args[1:]]
        elif isinstance(fn, ast.Attribute) and fn.attr == "backward" and call.args and isinstance(call.args[0], ast.Name):
            args = self.ctx_args.get(call.args[0].id) or []
            for k, n in enumerate(names):
                if isinstance(fn.value, ast.Name) and fn.value.id == "GetItem":
                    out[k] = "sparse"
                elif k < len(args) and args[k] is not None and n.id not in self.reduced:
                    out[k] = self.info.get(args[k])
        elif isinstance(fn, ast.Name) and fn.id == "add_term" and len(call.args) == 2:
            total, term = var_of(call.args[0]), var_of(call.args[1])
            if total in self.sparse or term in self.sparse:
                out[0] = "sparse"
            else:
                out[0] = self.info.get(total)
        elif isinstance(fn, ast.Attribute) and fn.attr == "ones_like" and call.args:
            out[0] = self.info.get(var_of(call.args[0]))
        elif isinstance(fn, ast.Name) and fn.id == "reduce_grad_to_input" and len(call.args) >= 3:
            try:
                shape = ast.literal_eval(call.args[1])
                dt = self.ns.get(call.args[2].id) if isinstance(call.args[2], ast.Name) else None
                out[0] = (tuple(shape), np.dtype(dt)) if dt is not None else None
            except (ValueError, TypeError, SyntaxError):
                out[0] = None
        elif isinstance(stmt.value, ast.Name) and len(names) == 1:
            v = var_of(stmt.value)
            out[0] = "sparse" if v in self.sparse else self.info.get(v)
        return out

    # ---- translating recorded lines
    def translate(self, stmts, pos, section):
        if len(stmts) == 2 and _is_ctx(stmts[0]) and _is_call(stmts[1], "forward"):
            return self.forward(stmts, pos, section)
        if len(stmts) == 1 and isinstance(stmts[0], ast.Assign) and len(stmts[0].targets) == 1:
            st = stmts[0]
            call = st.value
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "one" and call.args:
                call = call.args[0]
            if _is_backward(call) and call.args[0].id in self.units:
                return self.backward(st, call, pos, section)
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "add_term" \
                    and isinstance(st.targets[0], ast.Name) and len(call.args) == 2:
                return self.add_term(st, call, pos, section)
        raise Unfusable("not elementwise")

    def new_micro(self, unit, outs, ins, body, label, shape, dtype, pos, section):
        m = Micro(outs, ins, body, label, tuple(shape), dtype, unit, pos, section)
        unit.micros.append(m)
        self.steps.append(m)
        for o in outs:
            self.info[o] = (tuple(shape), dtype)
        return m

    def forward(self, stmts, pos, section):
        st = stmts[1]
        call = st.value
        cls = self.ns.get(call.func.value.id)
        ctx = stmts[0].targets[0].id
        needs = [c.value for c in stmts[0].value.args]
        out_name = st.targets[0].id
        out = self.arrays.get(out_name)
        if out is None or out_name in self.dynamic_names or out.dtype not in (np.float32, np.float64) or out.size == 0:
            raise Unfusable("not a float32/float64 array")
        T = out.dtype
        plan = _FORWARD.get(_qualname(cls))
        if plan is None:
            raise Unfusable("not an elementwise Function")
        args = call.args[1:]
        kw = {k.arg: k.value for k in call.keywords}
        made = plan(self, args, kw, needs, T, out)     # raises Unfusable, or gives the steps
        if made is None:
            raise Unfusable("arguments")
        unit = Unit()
        unit.cls, unit.T, unit.needs = _qualname(cls), T, needs
        ren = self.loads(stmts)
        if made[0] == "linear":                       # x Wᵀ by LinearFn without bias, then the bias add
            _, b = made
            mm = _fresh(self, out_name + "_mm")
            pre = ast.parse(ast.unparse(stmts[0]) + "; " + ast.unparse(st)).body
            pre[1].targets[0].id = mm
            pre[1].value.args[3] = ast.Constant(None)
            self.opaque(pre, pos, unit)
            self.info[(mm, 0)] = (tuple(out.shape), T)
            self.stores(stmts, ren, fresh=False)
            ren[id(st.targets[0])] = (self.store(out_name), False)
            self.new_micro(unit, [ren[id(st.targets[0])][0]], [("var", (mm, 0), False), b],
                           lambda a, o, Tc: [f"const {Tc} {o[0]} = {a[0]} + {a[1]};"], "bias add",
                           out.shape, T, pos + 1, section)
            unit.original.append((pos, stmts, ren))
            return
        specs, saved = made
        outs_all = []
        for names, ins, body, label in specs:
            outs = [self.store(n) for n in names]
            outs_all += outs
            self.new_micro(unit, outs, ins, body, label, out.shape, T, pos + 1, section)
        ren[id(stmts[0].targets[0])] = (self.store(ctx), False)
        ren[id(st.targets[0])] = (self.load(out_name), False)
        unit.saved = {k: (outs_all[v] if type(v) is int else v) for k, v in saved.items()}
        unit.saved["out"] = self.load(out_name)
        unit.original.append((pos, stmts, ren))
        self.units[ctx] = unit

    def backward(self, st, call, pos, section):
        unit = self.units[call.args[0].id]
        g = self.operand(call.args[1])
        targets = st.targets[0]
        names = [targets] if isinstance(targets, ast.Name) else list(targets.elts)
        if not all(isinstance(n, ast.Name) for n in names):
            raise RuntimeError("fuse: a backward's targets are not names")
        T = unit.T
        shape, _ = self.info[unit.saved["out"]]
        if g[0] == "var" and self.info.get(g[1]) is None and g[1] not in self.sparse:
            self.info[g[1]] = (shape, T)      # the gradient of a value has the value's shape and dtype
        ren = self.loads([st])
        grads = _BACKWARD[unit.cls](unit, g, T)
        for n, spec in zip(names, grads):
            if n.id == "_":
                continue
            if spec is None:
                raise RuntimeError(f"fuse: {unit.cls}.backward has no gradient for {n.id}")
            var = self.store(n.id)
            ren[id(n)] = (var, False)
            if spec[0] == "alias":
                self.alias[var] = (spec[1][1], spec[1][2])
                continue
            ins, body, label = spec
            self.new_micro(unit, [var], ins, body, label, shape, T, pos + 1, section)
        unit.original.append((pos, [st], ren))

    def add_term(self, st, call, pos, section):
        total, term = (self.operand(a) for a in call.args)
        if total[0] != "var" or term[0] != "var":
            raise Unfusable("add_term of a constant")
        i1, i2 = self.info.get(total[1]), self.info.get(term[1])
        if total[1] in self.sparse or term[1] in self.sparse or i1 is None or i1 != i2 \
                or i1[1] not in (np.float32, np.float64):
            raise Unfusable("a slice's gradient, or terms of unknown or different shapes")
        unit = Unit()
        ren = self.loads([st])
        out = self.store(st.targets[0].id)
        ren[id(st.targets[0])] = (out, False)
        self.new_micro(unit, [out], [total, term], lambda a, o, Tc: [f"const {Tc} {o[0]} = {a[0]} + {a[1]};"],
                       "add_term", i1[0], i1[1], pos + 1, section)
        unit.original.append((pos, [st], ren))

    # ---- chains
    def group(self):
        readers = {}
        for s in self.steps:
            if isinstance(s, Micro):
                for op in s.ins:
                    if op[0] == "var":
                        readers.setdefault(op[1], []).append(s)
            elif isinstance(s, Opaque):
                for v in s.reads:
                    readers.setdefault(v, []).append(s)
        self.readers = readers
        groups = []
        segment = 0
        producer = {}
        for k, s in enumerate(self.steps):
            if isinstance(s, Micro):
                s.order = k
        for s in self.steps:
            if isinstance(s, Opaque):
                text = " ".join(ast.unparse(x) for x in s.stmts)
                if any(w in text for w in (".step(", "zero_grad(", "accumulate_grad(", ".grad = ")):
                    segment += 1           # the optimizer and .grad: no chain reaches across them
                continue
            if not isinstance(s, Micro):
                continue
            cands = []
            for op in s.ins:
                if op[0] == "var" and op[1] in producer and producer[op[1]] not in cands:
                    cands.append(producer[op[1]])
            cands += [g for g in groups[::-1] if g.pos == s.pos and g not in cands]
            # every chain that makes one of its inputs (or stands at its place) and may move down
            # to it joins it: one loop where the step reads several chains
            fits = [g for g in cands if (g.shape, g.dtype, g.segment, g.section) ==
                    (s.shape, s.dtype, segment, s.section) and self.can_move(g, s)]
            if not fits:
                chosen = Group(len(groups) + 1, s)
                chosen.segment = segment
                groups.append(chosen)
            else:
                chosen = fits[0]
                for g in fits[1:]:
                    chosen.members += g.members
                    groups.remove(g)
                chosen.members.sort(key=lambda x: x.order)
                for x in chosen.members:
                    x.group = chosen
                    for o in x.outs:
                        producer[o] = chosen
                chosen.members.append(s)
                chosen.pos = s.pos
            s.group = chosen
            for o in s.outs:
                producer[o] = chosen
        for k, g in enumerate(groups):
            g.number = k + 1
        self.groups = groups

    def can_move(self, g, m):
        """Whether chain g may run at m's place: no other step reads its values before that."""
        for member in g.members:
            for o in member.outs:
                for r in self.readers.get(o, ()):
                    if r is m or (isinstance(r, Micro) and r.group is g):
                        continue
                    if isinstance(r, Micro) and r.group is not None:
                        if r.group.pos <= m.pos:
                            return False
                    elif r.pos < m.pos:
                        return False
        return True

    def revert(self):
        """A Function none of whose steps joined a chain keeps its recorded lines, when the values
        those lines read are there at their place."""
        place = {}
        for g in self.groups:
            if len(g.members) > 1:
                for m in g.members:
                    for o in m.outs:
                        place[o] = g.pos
        units = {}
        for s in self.steps:
            if isinstance(s, Micro):
                units.setdefault(id(s.unit), s.unit)
        for unit in units.values():
            if not all(len(m.group.members) == 1 for m in unit.micros):
                continue
            ok = True
            for pos, stmts, ren in unit.original:
                for n_id, (var, _) in ren.items():
                    if place.get(var, -1) > pos:
                        ok = False
            unit.reverted = ok
        self.groups = [g for g in self.groups if not g.members[0].unit.reverted]
        for k, g in enumerate(self.groups):
            g.number = k + 1

    # ---- writing the program
    def emit(self, ret):
        items = []                # ("line", text, reads) | ("group", g)
        for s in self.steps:
            if isinstance(s, tuple):
                items.append(("line", s[1], []))
            elif isinstance(s, Opaque):
                if s.unit is None or not s.unit.reverted:
                    text = "; ".join(_unparse(st, s.ren, self) for st in s.stmts)
                    items.append(("pro" if s.pos < 4 * self.npro else "line", text, s.reads))
            elif s.unit.reverted:
                for pos, stmts, ren in s.unit.original:
                    if pos + 1 == s.pos and pos not in s.unit.emitted:
                        s.unit.emitted.add(pos)
                        reads = [v for i, (v, _) in ren.items() if any(id(n) == i and isinstance(n.ctx, ast.Load)
                                                                      for st in stmts for n in ast.walk(st)
                                                                      if isinstance(n, ast.Name))]
                        items.append(("line", "; ".join(_unparse(st, ren, self) for st in stmts), reads))
            elif s is s.group.members[-1]:
                items.append(("group", s.group))
        ret_tree = ast.parse(ret, mode="eval")
        ret_ren = {id(n): self.resolve(self.load(n.id)) for n in ast.walk(ret_tree)
                   if isinstance(n, ast.Name) and n.id in self.assigned}
        needed = {v for v, _ in ret_ren.values()}
        for it in items:
            if it[0] in ("line", "pro"):
                needed.update(it[2])
            else:
                inside = {o for m in it[1].members for o in m.outs}
                needed.update(op[1] for m in it[1].members for op in m.ins if op[0] == "var" and op[1] not in inside)
        self.ret_text = ast.unparse(_Renamer(self, ret_ren).visit(ret_tree))
        prologue, lines, sources = [], [], []
        for it in items:
            if it[0] == "pro":
                prologue.append(it[1])
            elif it[0] == "line":
                lines.append(it[1])
            else:
                line = self.call_line(it[1], needed, sources)
                if line:
                    lines.append(line)
        return prologue, lines, sources

    def call_line(self, g, needed, sources):
        inside = {}
        inputs = []
        for m in g.members:
            for op in m.ins:
                if op[0] == "var" and op[1] not in inside and op[1] not in inputs:
                    inputs.append(op[1])
            for o in m.outs:
                inside[o] = self.pyname(o)
        outs = [o for m in g.members for o in m.outs if o in needed]
        if not outs:
            return None
        T = g.dtype
        kinds, specs_in = {}, []
        for v in inputs:
            shape, dtype = self.info[v]
            size = int(np.prod(shape, dtype=np.int64))
            kind = "full" if tuple(shape) == g.shape else "one" if size == 1 else "col"
            kinds[v] = (self.pyname(v), kind, size)
            specs_in.append((self.pyname(v), dtype, kind, size, tuple(shape)))
        labels = list(dict.fromkeys(m.label for m in g.members))
        short = "_".join(dict.fromkeys(_short(m.label) for m in g.members))[:48]
        kname = f"fused{g.number}_{short}"
        spec = Spec(kname, g.shape, T, specs_in, [self.pyname(o) for o in outs], pooled=g.section == "forward")
        Tc = c_type(T)
        statements = []
        for m in g.members:
            args = [c_name(inside[op[1]]) if op[0] == "var" and op[1] in inside else _cexpr(op, T, kinds, spec.row)
                    for op in m.ins]
            body = m.body(args, [c_name(self.pyname(o)) for o in m.outs], Tc)
            for k, stmt in enumerate(body):
                statements.append((stmt, m.label if k == len(body) - 1 else ""))
        comment = (f"{kname}: {' -> '.join(labels)} over {g.shape} {np.dtype(T).name}, from the {g.section}")
        sources.append((spec, generate(spec, statements, comment)))
        args = ", ".join(self.pyname(v) for v in inputs)
        return f"{', '.join(self.pyname(o) for o in outs)} = {kname}({args})"


def _cexpr(op, T, kinds, row):
    if op[0] == "const":
        return literal(op[1], T)
    name, kind, size = kinds[op[1]]
    return c_name(name) + index(kind, size, row)


def _short(label):
    s = label.lower().replace(".backward", "_bw").replace("fn", "").replace(" ", "_")
    return s


def _fresh(f, base):
    name = base
    while name in f.all_names:
        name += "_"
    f.all_names.add(name)
    f.assigned.add(name)
    return name


class _Renamer(ast.NodeTransformer):
    def __init__(self, fuser, ren):
        self.f = fuser
        self.ren = ren

    def visit_Name(self, node):
        r = self.ren.get(id(node))
        if r is None:
            return node
        var, dense = r
        name = ast.Name(self.f.pyname(var), node.ctx)
        if dense and isinstance(node.ctx, ast.Load):
            return ast.Call(ast.Name("dense", ast.Load()), [name], [])
        return name

    def visit_Call(self, node):
        # dense(x) where x was renamed to dense(y): one dense
        if isinstance(node.func, ast.Name) and node.func.id == "dense" and len(node.args) == 1 \
                and isinstance(node.args[0], ast.Name):
            r = self.ren.get(id(node.args[0]))
            if r is not None:
                return ast.Call(node.func, [ast.Name(self.f.pyname(r[0]), ast.Load())], [])
        return self.generic_visit(node)


def _unparse(stmt, ren, fuser):
    import copy
    mapping = {}
    clone = copy.deepcopy(stmt)
    for a, b in zip(ast.walk(stmt), ast.walk(clone)):
        if id(a) in ren:
            mapping[id(b)] = ren[id(a)]
    return ast.unparse(_Renamer(fuser, mapping).visit(clone))


def _is_ctx(st):
    return isinstance(st, ast.Assign) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Name) \
        and st.value.func.id == "Ctx" and isinstance(st.targets[0], ast.Name) \
        and all(isinstance(a, ast.Constant) for a in st.value.args)


def _is_call(st, attr):
    return isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
        and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute) \
        and st.value.func.attr == attr and isinstance(st.value.func.value, ast.Name) and st.value.args \
        and isinstance(st.value.args[0], ast.Name)


def _is_backward(call):
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "backward" \
        and isinstance(call.func.value, ast.Name) and len(call.args) == 2 and isinstance(call.args[0], ast.Name)


def _qualname(cls):
    return f"{getattr(cls, '__module__', '')}.{getattr(cls, '__name__', '')}"


# ---------------------------------------------------------------------------------- the ops

_E = "tinygrad_tx.ops.elementwise."


def _binary_fwd(expr, name):
    def plan(f, args, kw, needs, T, out):
        if len(args) != 2 or kw:
            return None
        a, b = f.operand(args[0]), f.operand(args[1])
        if f.check([a, b], T) != out.shape:
            return None
        return [([out_name(f, out)], [a, b], lambda x, o, Tc: [f"const {Tc} {o[0]} = {expr(*x)};"],
                 name)], {"a": a, "b": b, "y": 0}
    return plan


def _unary_fwd(expr, name):
    def plan(f, args, kw, needs, T, out):
        if len(args) != 1 or kw:
            return None
        x = f.operand(args[0])
        if f.check([x], T) != out.shape:
            return None
        return [([out_name(f, out)], [x], lambda a, o, Tc: [f"const {Tc} {o[0]} = {expr(a[0], Tc)};"],
                 name)], {"x": x, "y": 0}
    return plan


def out_name(f, out):
    return f.rec.names[id(out)]


def _tanh(x, T):
    return f"(float)tanh((double){x})" if T == "float" else f"tanh({x})"


def _erf(x, T):
    return f"(float)erf((double){x})" if T == "float" else f"erf({x})"


def _pow_plan(f, args, kw, needs, T, out):
    if len(args) != 2 or kw:
        return None
    a, e = f.operand(args[0]), f.operand(args[1])
    if e[0] != "const" or f.check([a], T) != out.shape:
        return None
    ev = e[1]
    if isinstance(ev, np.generic) and ev.dtype != T:
        return None
    ev = float(ev)
    return [([out_name(f, out)], [a], lambda x, o, Tc: [f"const {Tc} {o[0]} = {_pw(x[0], ev, Tc, T)};"],
             "Pow")], {"a": a, "e": ev, "y": 0}


def _pw(a, e, Tc, T):
    if e == 2:
        return f"{a} * {a}"
    if e == 3:
        return f"{a} * {a} * {a}"
    if e == 4:
        return f"({a} * {a}) * ({a} * {a})"
    if e == 1:
        return a
    if e == 0:
        return literal(1, T)
    if e == 0.5:
        return f"sqrt{_f(Tc)}({a})"
    if e == -1:
        return f"{literal(1, T)} / {a}"
    return f"pow{_f(Tc)}({a}, {literal(e, T)})"


def _where_plan(f, args, kw, needs, T, out):
    if len(args) != 3 or kw:
        return None
    c, a, b = (f.operand(x) for x in args)
    if c[0] != "var" or f.info.get(c[1]) is None or f.info[c[1]][1] != np.bool_:
        return None
    if f.check([c, a, b], T, bools=(0,)) != out.shape:
        return None
    return [([out_name(f, out)], [c, a, b], lambda x, o, Tc: [f"const {Tc} {o[0]} = {x[0]} ? {x[1]} : {x[2]};"],
             "Where")], {"c": c}


def _maximum_plan(f, args, kw, needs, T, out):
    if len(args) != 2 or kw:
        return None
    a, b = f.operand(args[0]), f.operand(args[1])
    if f.check([a, b], T) != out.shape:
        return None
    body = lambda x, o, Tc: [f"const {Tc} {o[0]} = ({x[0]} != {x[0]}) ? {x[0]} : (({x[1]} != {x[1]}) ? {x[1]} : "
                             f"({x[0]} >= {x[1]} ? {x[0]} : {x[1]}));"]
    return [([out_name(f, out)], [a, b], body, "Maximum")], {"a": a, "b": b}


def _gelu_plan(f, args, kw, needs, T, out):
    if len(args) != 1 or set(kw) - {"approximate"}:
        return None
    approx = kw.get("approximate")
    approx = "none" if approx is None else (approx.value if isinstance(approx, ast.Constant) else None)
    if approx not in ("none", "tanh"):
        return None
    x = f.operand(args[0])
    if f.check([x], T) != out.shape:
        return None
    name = out_name(f, out)
    need_d = bool(needs and needs[0])
    dname = _fresh(f, name + "_d") if need_d else None

    def body(a, o, Tc):
        v, y = a[0], o[0]
        h = literal(0.5, T)
        if approx == "none":       # kernels/source.py's gelu_erf: Φ = erfc(-x/√2)/2
            s = [f"const {Tc} {y}_cdf = {h} * erfc{_f(Tc)}(-{v} * {literal(0.70710678118654752440, T)});",
                 f"const {Tc} {y} = {v} * {y}_cdf;"]
            if need_d:
                s.append(f"const {Tc} {o[1]} = {y}_cdf + {v} * ({literal(0.39894228040143267794, T)} * "
                         f"exp{_f(Tc)}({literal(-0.5, T)} * {v} * {v}));")
            return s
        k = literal(0.79788456080286535588, T)   # kernels/source.py's gelu_tanh: x σ(2u)
        s = [f"const {Tc} {y}_u = {k} * ({v} + {literal(0.044715, T)} * ({v} * {v} * {v}));",
             f"const {Tc} {y}_e = exp{_f(Tc)}({literal(-2, T)} * ({y}_u < 0 ? -{y}_u : {y}_u));",
             f"const {Tc} {y}_r = {literal(1, T)} / ({literal(1, T)} + {y}_e);",
             f"const {Tc} {y}_s = {y}_u >= 0 ? {y}_r : {y}_e * {y}_r;",
             f"const {Tc} {y} = {v} * {y}_s;"]
        if need_d:
            s.append(f"const {Tc} {o[1]} = {y}_s + {v} * ({literal(2, T)} * {y}_e * {y}_r * {y}_r) * ({k} * "
                     f"({literal(1, T)} + {literal(3 * 0.044715, T)} * ({v} * {v})));")
        return s
    outs = [name, dname] if need_d else [name]
    return [(outs, [x], body, "GeluFn")], ({"d": 1} if need_d else {})


def _dropout_plan(f, args, kw, needs, T, out):
    if len(args) != 1 or set(kw) != {"keep", "scale"}:
        return None
    x = f.operand(args[0])
    keep = f.operand(kw["keep"])
    scale = f.operand(kw["scale"])
    if keep[0] != "var" or f.info.get(keep[1]) is None or f.info[keep[1]][1] != np.bool_ or scale[0] != "const":
        return None
    if f.check([x, keep], T, bools=(1,)) != out.shape:
        return None
    s = scale[1]
    mul = _scale(s, T)
    body = lambda a, o, Tc: [f"const {Tc} {o[0]} = {mul(f'({a[0]} * ({Tc}){a[1]})', Tc)};"]
    return [([out_name(f, out)], [x, keep], body, "DropoutFn")], {"keep": keep, "scale": s}


def _scale(s, T):
    """``v * scale`` as NumPy computes it for an array of dtype T and this scale: a float64 NumPy
    scalar with float32 arrays is multiplied in double and rounded (the in-place ``y *= scale``
    and the backward's product both end in T)."""
    if isinstance(s, np.generic) and s.dtype != T:
        if np.dtype(s.dtype) == np.float64 and T == np.float32:
            return lambda v, Tc: f"(float)((double){v} * {literal(s, np.float64)})"
        raise Unfusable("scale dtype")
    return lambda v, Tc: f"{v} * {literal(s, T)}"


def _linear_plan(f, args, kw, needs, T, out):
    """LinearFn(x, W, b) with a bias: x Wᵀ stays LinearFn's (without the bias; its backward does
    not read the bias), the bias add ``+ b`` becomes an elementwise step."""
    if len(args) != 3 or kw or not isinstance(args[2], ast.Name) or out.ndim < 1:
        return None
    b = f.operand(args[2])
    if b[0] != "var" or f.info.get(b[1]) != ((out.shape[-1],), T):
        return None
    return ("linear", b)


def _sigma(v, T, Tc, y):
    """σ(v) as the kernels' ``sigmoid``: e = e^{-|v|} (never overflows), 1/(1+e) or e/(1+e)."""
    one = literal(1, T)
    return [f"const {Tc} {y}_e = exp{_f(Tc)}(-({v} < 0 ? -{v} : {v}));",
            f"const {Tc} {y}_r = {one} / ({one} + {y}_e);",
            f"const {Tc} {y}_s = {v} >= 0 ? {y}_r : {y}_e * {y}_r;"]


def _sigmoid_plan(f, args, kw, needs, T, out):
    if len(args) != 1 or kw:
        return None
    x = f.operand(args[0])
    if f.check([x], T) != out.shape:
        return None
    body = lambda a, o, Tc: _sigma(a[0], T, Tc, o[0]) + [f"const {Tc} {o[0]} = {o[0]}_s;"]
    return [([out_name(f, out)], [x], body, "SigmoidFn")], {"y": 0}


def _silu_plan(f, args, kw, needs, T, out):
    if len(args) != 1 or kw:
        return None
    x = f.operand(args[0])
    if f.check([x], T) != out.shape:
        return None
    body = lambda a, o, Tc: _sigma(a[0], T, Tc, o[0]) + [f"const {Tc} {o[0]} = {a[0]} * {o[0]}_s;"]
    return [([out_name(f, out)], [x], body, "SiluFn")], {"x": x}


_FORWARD = {
    _E + "Add": _binary_fwd(lambda a, b: f"{a} + {b}", "Add"),
    _E + "Sub": _binary_fwd(lambda a, b: f"{a} - {b}", "Sub"),
    _E + "Mul": _binary_fwd(lambda a, b: f"{a} * {b}", "Mul"),
    _E + "Div": _binary_fwd(lambda a, b: f"{a} / {b}", "Div"),
    _E + "Neg": _unary_fwd(lambda x, T: f"-{x}", "Neg"),
    _E + "Exp": _unary_fwd(lambda x, T: f"exp{_f(T)}({x})", "Exp"),
    _E + "Log": _unary_fwd(lambda x, T: f"log{_f(T)}({x})", "Log"),
    _E + "TanhFn": _unary_fwd(_tanh, "TanhFn"),
    "tinygrad_tx.ops.transcendental.Erf": _unary_fwd(_erf, "Erf"),
    _E + "Pow": _pow_plan,
    _E + "Where": _where_plan,
    _E + "Maximum": _maximum_plan,
    _E + "GeluFn": _gelu_plan,
    "tinygrad_tx.functional.activation.DropoutFn": _dropout_plan,
    "tinygrad_tx.functional.linear.LinearFn": _linear_plan,
    # ReLU: np.maximum(x, 0) keeps a NaN; Sqrt: NaN below 0, as NumPy's
    _E + "ReluFn": _unary_fwd(lambda x, T: f"({x} != {x} || {x} > 0) ? {x} : 0", "ReluFn"),
    _E + "Sqrt": _unary_fwd(lambda x, T: f"sqrt{_f(T)}({x})", "Sqrt"),
    _E + "SigmoidFn": _sigmoid_plan,
    "tinygrad_tx.functional.pointwise.SiluFn": _silu_plan,
}


def _g(label, expr, *ops):
    """A backward gradient: (operands, body, label); ``expr`` takes the operands' C expressions."""
    return (list(ops), lambda a, o, Tc: [f"const {Tc} {o[0]} = {expr(*a, Tc)};"], label)


def _bw_add(u, g, T):
    return [("alias", g), ("alias", g)]


def _bw_sub(u, g, T):
    return [("alias", g), _g("Sub.backward", lambda gg, Tc: f"-{gg}", g)]


def _bw_mul(u, g, T):
    s = u.saved
    return [_g("Mul.backward", lambda gg, b, Tc: f"{gg} * {b}", g, s["b"]),
            _g("Mul.backward", lambda gg, a, Tc: f"{gg} * {a}", g, s["a"])]


def _bw_div(u, g, T):
    s = u.saved
    y = ("var", s["y"], False)
    return [_g("Div.backward", lambda gg, b, Tc: f"{gg} / {b}", g, s["b"]),
            _g("Div.backward", lambda gg, yy, b, Tc: f"(-{gg} * {yy}) / {b}", g, y, s["b"])]


def _bw_neg(u, g, T):
    return [_g("Neg.backward", lambda gg, Tc: f"-{gg}", g)]


def _bw_exp(u, g, T):
    return [_g("Exp.backward", lambda gg, y, Tc: f"{gg} * {y}", g, ("var", u.saved["y"], False))]


def _bw_log(u, g, T):
    return [_g("Log.backward", lambda gg, x, Tc: f"{gg} / {x}", g, u.saved["x"])]


def _bw_tanh(u, g, T):
    one = literal(1, T)
    return [_g("TanhFn.backward", lambda gg, y, Tc: f"{gg} * (({one} - {y}) * ({one} + {y}))", g,
               ("var", u.saved["y"], False))]


def _bw_erf(u, g, T):
    c = literal(2.0 / math.sqrt(math.pi), T)
    return [_g("Erf.backward", lambda gg, x, Tc: f"{gg} * ({c} * exp{_f(Tc)}(-({x} * {x})))", g, u.saved["x"])]


def _bw_pow(u, g, T):
    e = u.saved["e"]
    if e == 0:
        return [_g("Pow.backward", lambda gg, a, Tc: f"{gg} * {literal(0, T)}", g, u.saved["a"]), None]
    return [_g("Pow.backward", lambda gg, a, Tc: f"{gg} * ({literal(e, T)} * {_pw(a, e - 1, Tc, T)})", g,
               u.saved["a"]), None]


def _bw_where(u, g, T):
    z = literal(0, T)
    c = u.saved["c"]
    return [None, _g("Where.backward", lambda gg, cc, Tc: f"{cc} ? {gg} : {z}", g, c),
            _g("Where.backward", lambda gg, cc, Tc: f"{cc} ? {z} : {gg}", g, c)]


def _bw_maximum(u, g, T):
    a, b = u.saved["a"], u.saved["b"]
    z, h = literal(0, T), literal(0.5, T)
    share = lambda gg, x, y, Tc: f"({x} < {y}) ? {z} : (({x} == {y}) ? {gg} * {h} : {gg})"
    return [_g("Maximum.backward", share, g, a, b), _g("Maximum.backward", share, g, b, a)]


def _bw_gelu(u, g, T):
    return [_g("GeluFn.backward", lambda gg, d, Tc: f"{gg} * {d}", g, ("var", u.saved["d"], False))]


def _bw_dropout(u, g, T):
    mul = _scale(u.saved["scale"], T)
    return [_g("DropoutFn.backward", lambda gg, k, Tc: mul(f"({gg} * ({Tc}){k})", Tc), g, u.saved["keep"])]


def _bw_relu(u, g, T):
    """g · ~(y <= 0): a NaN y passes g, and g·0 keeps a NaN or Inf g's NaN, as eager."""
    return [_g("ReluFn.backward", lambda gg, y, Tc: f"{gg} * ({Tc})!({y} <= 0)", g, ("var", u.saved["y"], False))]


def _bw_sqrt(u, g, T):
    return [_g("Sqrt.backward", lambda gg, y, Tc: f"{gg} / ({literal(2, T)} * {y})", g, ("var", u.saved["y"], False))]


def _bw_sigmoid(u, g, T):
    one = literal(1, T)
    return [_g("SigmoidFn.backward", lambda gg, y, Tc: f"({gg} * {y}) * ({one} - {y})", g,
               ("var", u.saved["y"], False))]


def _bw_silu(u, g, T):
    """The kernels' ``silu_bwd``: σ recomputed from x, 1 - σ without cancellation."""
    one = literal(1, T)

    def body(a, o, Tc):
        gg, x, y = a[0], a[1], o[0]
        return _sigma(x, T, Tc, y) + [f"const {Tc} {y}_c = {x} >= 0 ? {y}_e * {y}_r : {y}_r;",
                                       f"const {Tc} {y} = ({gg} * {y}_s) * ({one} + {x} * {y}_c);"]
    return [([g, u.saved["x"]], body, "SiluFn.backward")]


_BACKWARD = {
    _E + "Add": _bw_add, _E + "Sub": _bw_sub, _E + "Mul": _bw_mul, _E + "Div": _bw_div, _E + "Neg": _bw_neg,
    _E + "Exp": _bw_exp, _E + "Log": _bw_log, _E + "TanhFn": _bw_tanh, "tinygrad_tx.ops.transcendental.Erf": _bw_erf,
    _E + "Pow": _bw_pow, _E + "Where": _bw_where, _E + "Maximum": _bw_maximum, _E + "GeluFn": _bw_gelu,
    "tinygrad_tx.functional.activation.DropoutFn": _bw_dropout,
    _E + "ReluFn": _bw_relu, _E + "Sqrt": _bw_sqrt, _E + "SigmoidFn": _bw_sigmoid,
    "tinygrad_tx.functional.pointwise.SiluFn": _bw_silu,
}


def apply(recorder, code):
    """``(code, C source)``: the program with its chains fused when the kernels are on (a C
    compiler found, ``TINYGRAD_TX_KERNELS`` not ``0``), else ``(code, "")`` unchanged. A failed
    build, or a program this pass cannot rewrite, gives one RuntimeWarning (per process) and the
    unfused program."""
    from .. import kernels
    if not kernels.available(np.float32):      # the kernels' own rule: one warning where a compiler was expected
        return code, ""
    from ..kernels import build
    try:
        fused = fuse_program(recorder, code)
    except (build.NoCompiler, build.KernelBuildError, OSError) as e:
        warn_once(f"tinygrad_tx.compile(fuse=True): the fused kernels could not be built, the program runs "
                  f"unfused: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
        return code, ""
    except Exception as e:       # noqa: BLE001 - a program this pass misreads runs as recorded, with a warning
        warn_once(f"tinygrad_tx.compile(fuse=True): the program could not be fused ({type(e).__name__}: {e}); "
                  "it runs unfused")
        return code, ""
    if fused is None:
        return code, ""
    new_code, made, src = fused
    recorder.ns.update(made)
    return new_code, src
