"""The package's shape, checked from its source (ast; nothing imported): no file over 600 lines (the exemptions
listed, each with its reason), no import cycle, no private reach-in across packages, one LightningModule per file.
Each checker is a function over a source tree, tested here on planted violations so that a check that cannot fail
would show.

    python -m pytest -q tests/test_shape.py        # seconds
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gbx_lightning"
MAX_LINES = 600

# files allowed past MAX_LINES, and why (paths relative to the package)
EXEMPT = {
    "emu/cpu.py": "the SM83 core: one kernel source for the CPU and CUDA shapes (the emulator's hardware part)",
    "emu/ppu.py": "the PPU's timing (the emulator's hardware part)",
    "emu/ppu_dots.py": "the PPU's per-dot path (the emulator's hardware part)",
    "emu/render.py": "the PPU's scanline renderer (the emulator's hardware part)",
    "emu/bus.py": "the memory bus and its I/O registers (the emulator's hardware part)",
    "emu/apu.py": "the sound unit (the emulator's hardware part)",
    "emu/pyboy_state.py": "PyBoy's savestate layout, one hardware part after another (the emulator's importer)",
    "roms/asm.py": "the project's SM83 assembler: the instruction table and its encoder in one place",
}


# ---------------------------------------------------------------------------------------------- the source tree
def modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under ``root`` (a package directory; its name is the first part)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, list[str], int]]:
    """(module imported, names taken from it, line) for every import in the file, module level or not, relative
    ones resolved; ``from pkg import sub`` counts as importing ``pkg.sub`` where that is a module. Only modules of
    ``known`` are kept."""
    tree = ast.parse(path.read_text(), str(path))
    package = _package_of(name, path)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target:
                    out.append((target, [], node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target not in known:
                continue
            plain = []
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in known:
                    out.append((sub, [], node.lineno))
                else:
                    plain.append(alias.name)
            if plain or not node.names:
                out.append((target, plain, node.lineno))
    return out


# ---------------------------------------------------------------------------------------------- the checks
def long_files(root: Path, limit: int = MAX_LINES, exempt: dict | None = None) -> list[str]:
    """'path: N lines' for every file over ``limit`` lines not in ``exempt`` (paths relative to ``root``)."""
    exempt = EXEMPT if exempt is None else exempt
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        n = len(path.read_text().splitlines())
        if n > limit and rel not in exempt:
            out.append(f"{rel}: {n} lines")
    return out


def import_cycles(root: Path) -> list[list[str]]:
    """Every cycle of imports between the tree's modules (its strongly connected components of more than one module,
    or a module importing itself), each as a sorted list of module names. A package's ``__init__`` counts as the
    module it is: a submodule importing its own package's ``__init__`` (which imports it) is a cycle too."""
    known = modules(root)
    graph = {m: sorted({t for t, _, _ in imports(m, p, known)}) for m, p in known.items()}
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):   # Tarjan's algorithm
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph[v]:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return sorted(out)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_definitions(path: Path) -> set[str]:
    """The private names a file defines: functions, classes, module-level and ``self._x`` attributes."""
    tree = ast.parse(path.read_text(), str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return {n for n in names if _is_private(n)}


def private_reach_ins(root: Path) -> list[str]:
    """'module:line uses other.package's _name' for a module that imports a private name from a module of another
    package, or reads ``obj._name`` where ``_name`` is defined only in other packages of the tree (not in its own,
    and not through ``self``/``cls``)."""
    known = modules(root)
    defined_in: dict[str, set[str]] = {}
    for name, path in known.items():
        defined_in.setdefault(_package_of(name, path), set()).update(_private_definitions(path))
    out = []
    for name, path in known.items():
        package = _package_of(name, path)
        for target, names, line in imports(name, path, known):
            target_package = _package_of(target, known[target])
            for n in names:
                if _is_private(n) and target_package != package:
                    out.append(f"{name}:{line} imports {target}.{n}")
        mine = defined_in.get(package, set())
        others = set().union(*(v for k, v in defined_in.items() if k != package))
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and _is_private(node.attr) and node.attr not in mine
                    and node.attr in others
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
                owners = sorted(k for k, v in defined_in.items() if k != package and node.attr in v)
                out.append(f"{name}:{node.lineno} reads .{node.attr} (private to {', '.join(owners)})")
    return out


def lightning_modules(root: Path) -> dict[str, list[str]]:
    """{file: [classes]}: the LightningModule subclasses each file defines (directly or through the tree's own
    classes)."""
    known = modules(root)
    bases: dict[str, list[str]] = {}
    where: dict[str, str] = {}
    for path in known.values():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases]
                where[node.name] = path.relative_to(root).as_posix()

    def is_module(cls: str, seen=()) -> bool:
        if cls in ("LightningModule",):
            return True
        return any(is_module(b, seen + (cls,)) for b in bases.get(cls, []) if b not in seen)

    per_file: dict[str, list[str]] = {}
    for cls, file in where.items():
        if is_module(cls):
            per_file.setdefault(file, []).append(cls)
    return {f: sorted(c) for f, c in sorted(per_file.items())}


def lightning_modules_per_file(root: Path) -> dict[str, list[str]]:
    """{file: [classes]} for every file defining more than one LightningModule."""
    return {f: c for f, c in lightning_modules(root).items() if len(c) > 1}


# ---------------------------------------------------------------------------------------------- the package
def test_no_file_of_the_package_is_over_600_lines_but_the_exempt():
    assert long_files(PACKAGE) == []
    missing = [p for p in EXEMPT if not (PACKAGE / p).exists()]
    assert missing == [], f"exempt files that no longer exist (drop them from EXEMPT): {missing}"


def test_no_import_cycle():
    assert import_cycles(PACKAGE) == []


def test_no_private_reach_in_across_packages():
    assert private_reach_ins(PACKAGE) == []


def test_one_lightning_module_per_file():
    assert lightning_modules_per_file(PACKAGE) == {}
    found = lightning_modules(PACKAGE)   # the walk does find the algorithms, each in its file
    assert {c for classes in found.values() for c in classes} >= {"RLModule", "A2CModule", "PPOModule",
                                                                  "REINFORCEModule"}


# ---------------------------------------------------------------------------------------------- the checkers
def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_long_files_counts_lines_and_honours_exemptions(tmp_path):
    root = _tree(tmp_path, {"__init__.py": "", "a.py": "x = 1\n" * 601, "b.py": "x = 1\n" * 600,
                            "sub/__init__.py": "", "sub/c.py": "x = 1\n" * 700})
    assert long_files(root, exempt={}) == ["a.py: 601 lines", "sub/c.py: 700 lines"]
    assert long_files(root, exempt={"sub/c.py": "why"}) == ["a.py: 601 lines"]


def test_import_cycles_finds_module_level_late_and_package_cycles(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "",
        "a.py": "from .b import f\n",
        "b.py": "def f():\n    pass\nfrom . import a  # noqa: E402 (a late import, as ram_rewards had)\n",
        "c.py": "import pkg.d\n",
        "d.py": "def g():\n    from pkg.c import h\n",       # a function-level import closes the loop too
        "e.py": "x = 1\n",
        "sub/__init__.py": "from .s import y\n",
        "sub/s.py": "from pkg.sub import z\ny = 1\n",        # a module importing its own package's __init__
        "f.py": "from pkg.e import x\n",
    })
    assert import_cycles(root) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.d"], ["pkg.sub", "pkg.sub.s"]]


def test_private_reach_ins_are_imports_or_attributes_across_packages_only(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "",
        "one/__init__.py": "",
        "one/a.py": "def _helper():\n    pass\nclass Env:\n    def __init__(self):\n        self._cache = 1\n",
        "one/b.py": "from .a import _helper\n",                       # the same package: fine
        "two/__init__.py": "",
        "two/c.py": "from pkg.one.a import _helper\n",               # another package's private function
        "two/d.py": "def f(env):\n    return env._cache\n",          # another package's private attribute
        "three/__init__.py": "",
        "three/e.py": "class M:\n    def __init__(self):\n        self._cache = 2\n    def g(self, o):\n"
                      "        return o._cache\n",                     # its own package defines _cache too: fine
    })
    assert private_reach_ins(root) == ["pkg.two.c:1 imports pkg.one.a._helper",
                                       "pkg.two.d:2 reads ._cache (private to pkg.one, pkg.three)"]


def test_lightning_modules_per_file_follows_the_tree_s_own_bases(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "",
        "base.py": "import lightning.pytorch as pl\nclass RL(pl.LightningModule):\n    pass\n",
        "a.py": "from .base import RL\nclass A(RL):\n    pass\n",
        "two.py": "from .base import RL\nclass B(RL):\n    pass\nclass C(B):\n    pass\nclass D:\n    pass\n",
    })
    assert lightning_modules(root) == {"a.py": ["A"], "base.py": ["RL"], "two.py": ["B", "C"]}
    assert lightning_modules_per_file(root) == {"two.py": ["B", "C"]}


def test_the_checks_read_the_whole_package():
    """Every .py of the package is a module of the map the checks walk (none silently skipped), and the import
    parser resolves a relative import (gameboy.py's of the features)."""
    known = modules(PACKAGE)
    assert len(known) == len(list(PACKAGE.rglob("*.py")))
    taken = imports("gbx_lightning.envs.gameboy", known["gbx_lightning.envs.gameboy"], known)
    assert ("gbx_lightning.envs.features", ["FEATURES", "Feature", "Step"], taken[[t for t, _, _ in taken].index(
        "gbx_lightning.envs.features")][2]) in taken
