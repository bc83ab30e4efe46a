"""No Warp function of the project reads a variable that Warp's generated code sets on some paths only
(tools/warp_scope.py): such a read is undefined behaviour in the C++ and CUDA Warp generates, and the
two compilers make different code of it. Warp binds a module constant to a variable at its first use
in a function, so a constant first named in two branches of an if/elif chain and read after the chain
is one: it made the machine kernel's CUDA shape store POP AF's A at a stray index and miss the reload
after a run-ending write (tests/roms/far_call.asm), while the CPU shape, reading the same unset
variables, happened to work. Each check builds Warp code in a subprocess (codegen only, no compile)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# A module with the pattern and its fix: FLAG first named in two branches of a chain, then read after it
# (flagged: the select merging the two is made inside the chain's first else); HIT named before the
# chain (not flagged); a local set in one branch only, read after it (flagged).
SAMPLE = '''
import warp as wp

FLAG = wp.constant(7)
HIT = wp.constant(9)


@wp.func
def chain(g: int, a: wp.array(dtype=int)) -> int:
    hit = HIT
    if g == 0:
        a[0] = 0
    elif g == 1:
        a[FLAG] = 1
        a[HIT] = 1
    elif g == 2:
        a[FLAG] = 2
        a[HIT] = 2
    return a[FLAG] + a[HIT]


@wp.func
def local(g: int) -> int:
    if g == 0:
        v = g * 2
    return v


@wp.kernel
def use(a: wp.array(dtype=int)):
    a[0] = chain(wp.tid(), a) + local(wp.tid())
'''

SCRIPT = r"""
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/tools"]
import warp_scope
found = warp_scope.check(sys.argv[2].split(","))
print(json.dumps([[fn, path, name, line, kind] for (fn, path), reads in found.items() for name, line, kind in reads]))
"""


def _check(modules: list[str], extra_path: str | None = None) -> list:
    pytest.importorskip("warp")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (extra_path, str(REPO)) if p))
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(REPO), ",".join(modules)], capture_output=True,
                          text=True, env=env, cwd=str(REPO))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_check_finds_reads_of_partly_set_variables(tmp_path):
    (tmp_path / "scope_sample.py").write_text(textwrap.dedent(SAMPLE))
    reads = _check(["scope_sample"], str(tmp_path))
    assert sorted((fn, name, kind) for fn, _, name, _, kind in reads) == [
        ("chain", "FLAG", "module constant"), ("local", "v", "local")]


def test_no_warp_function_of_the_project_reads_a_partly_set_variable():
    sys.path.insert(0, str(REPO / "tools"))
    import warp_scope

    reads = _check(warp_scope.MODULES)
    assert not reads, "\n".join(f"{path}:{line}: {fn} reads {kind} {name}, set on some paths only (name it "
                                f"first where every path passes: tools/warp_scope.py)"
                                for fn, path, name, line, kind in reads)
