"""Reads that Warp's generated code makes from a variable set only on some paths to them.

    python tools/warp_scope.py                  # every Warp module of the project
    python tools/warp_scope.py --modules gbx_lightning.emu.cpu

Warp turns each assignment into a new variable and merges the two sides of an `if` with a select.
A name bound in one branch only (or first bound inside a dynamic loop) stays bound after it to a
variable the other paths never set, and a later read of the name in generated C++/CUDA reads an
unset variable: undefined behaviour, which LLVM and NVRTC compile differently. Python would not
let a program read a local there, but Warp also caches each module constant (R_A, END_RUN, FOUR ...)
in a variable at its first use in a function, so a constant first named in two branches of an
if/elif chain and read after the chain is such a read. That is how the machine kernel's CUDA shape
lost POP AF's A and the reload after a run-ending write (tests/roms/far_call.asm): the CPU shape
read the same unset variables and happened to work. The fix is to name the constant first where
every path passes (docs/gpu.md).

The check rebuilds each module's Warp code (Python to C++ only, nothing compiled: seconds) with
Warp's `if`, loop and name handlers wrapped to follow which variables are set on every path, and
lists each read of a partly set one: function, file:line, name, and whether it is a module constant
or a local. Exit status 1 if there is any. Needs only Warp (its codegen's Adjoint; checked with
warp-lang 1.19)."""
from __future__ import annotations

import argparse
import ast
import importlib
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
MODULES = ["gbx_lightning.emu.cpu", "gbx_lightning.emu.cpu_staged", "gbx_lightning.emu.machine",
           "gbx_lightning.emu.mbc", "gbx_lightning.emu.savestate", "gbx_lightning.envs.foraging",
           "gbx_lightning.envs.pixels"]


def _partial(var) -> bool:
    return getattr(var, "_wp_scope_partial", False)


def _mark(var):
    """var may be unset on a path to where it is now bound (constants are declared set, at the top)."""
    if var is not None and var.constant is None:
        var._wp_scope_partial = True


def install(cg):
    """Wrap Warp's codegen (module warp._src.codegen) to record partly set reads; returns the record:
    {(function, file): {(name, line, kind)}}."""
    Adjoint = cg.Adjoint
    found: dict = {}
    snaps: list = []             # symbol maps at the end of if / else branches (a stack, as ifs nest)
    loops: list = []             # per emit_For: did it open a dynamic loop

    orig_begin_if, orig_end_if = Adjoint.begin_if, Adjoint.end_if
    orig_end_else, orig_begin_for = Adjoint.end_else, Adjoint.begin_for
    visitors = Adjoint.node_visitors
    orig_if, orig_while, orig_for, orig_name = (visitors[ast.If], visitors[ast.While], visitors[ast.For],
                                                visitors[ast.Name])

    def begin_if(adj, cond):
        snaps.append(("prev", dict(adj.symbols)))     # (after the condition: its names are set)
        return orig_begin_if(adj, cond)

    def end_if(adj, cond):
        snaps.append(("if", dict(adj.symbols)))
        return orig_end_if(adj, cond)

    def end_else(adj, cond):
        snaps.append(("else", dict(adj.symbols)))
        return orig_end_else(adj, cond)

    def begin_for(adj, *args, **kwargs):
        if loops and loops[-1] is False:
            loops[-1] = True
        return orig_begin_for(adj, *args, **kwargs)

    def emit_If(adj, node):
        depth = len(snaps)
        out = orig_if(adj, node)
        mine, snaps[depth:] = dict(snaps[depth:]), []
        if not mine:                 # a static condition: one branch inlined, no merge
            return out
        prev = mine["prev"]
        sym_if, sym_else = mine["if"], mine.get("else", prev)
        for sym, merged in adj.symbols.items():
            before = prev.get(sym)
            if merged is before:
                continue
            if_var, else_var = sym_if.get(sym, before), sym_else.get(sym, before)
            if if_var is None or else_var is None:
                _mark(merged)        # bound on one side only
            elif _partial(if_var) or _partial(else_var):
                _mark(merged)
        return out

    def _loop(orig, adj, node):
        before = dict(adj.symbols)
        out = orig(adj, node)
        return before, out

    def emit_While(adj, node):
        before, out = _loop(orig_while, adj, node)
        for sym, var in adj.symbols.items():
            if sym not in before:
                _mark(var)           # first bound in the body: unset if it never ran
        return out

    def emit_For(adj, node):
        loops.append(False)
        try:
            before, out = _loop(orig_for, adj, node)
        finally:
            dynamic = loops.pop()
        if dynamic:
            for sym, var in adj.symbols.items():
                if sym not in before:
                    _mark(var)
        return out

    def emit_Name(adj, node):
        var = adj.symbols.get(node.id)
        if var is not None and _partial(var):
            stores = getattr(adj, "_wp_scope_stores", None)
            if stores is None:
                stores = adj._wp_scope_stores = {n.id for n in ast.walk(adj.tree)
                                                 if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            kind = "local" if node.id in stores else "module constant"
            found.setdefault((adj.fun_name, Path(adj.filename).name), set()).add(
                (node.id, adj.lineno + adj.fun_lineno, kind))
        return orig_name(adj, node)

    Adjoint.begin_if, Adjoint.end_if, Adjoint.end_else, Adjoint.begin_for = begin_if, end_if, end_else, begin_for
    visitors[ast.If], visitors[ast.While], visitors[ast.For], visitors[ast.Name] = (emit_If, emit_While, emit_For,
                                                                                    emit_Name)
    return found


def check(modules: list[str]) -> dict:
    """Build each Warp module (by name; gbx_lightning.emu.cpu_staged is defined by gbx_lightning.emu.cpu)
    with the wrapped codegen; returns {(function, file): sorted [(name, line, kind)]}."""
    import warp as wp

    wp.config.quiet = True
    from warp._src import codegen as cg
    from warp._src import context as ctx

    found = install(cg)
    for name in modules:
        importlib.import_module(name.removesuffix("_staged"))
        module = wp.get_module(name)
        ctx.ModuleBuilder(module, module.options, target="cpu")
    return {k: sorted(v, key=lambda r: (r[1], r[0])) for k, v in sorted(found.items())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modules", nargs="+", default=MODULES)
    args = ap.parse_args()
    found = check(args.modules)
    for (fn, path), reads in found.items():
        for name, line, kind in reads:
            print(f"{path}:{line}: {fn} reads {kind} {name} where it is set on some paths only")
    print(f"{sum(len(v) for v in found.values())} partly set reads in {len(args.modules)} modules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
