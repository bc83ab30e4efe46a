"""Hostile inputs for tests/test_fuzz.py, one kind per run: ``python tests/_fuzz_cases.py KIND SEED COUNT WORKDIR``.

Kinds: ``rom`` (random and mutated ROM images), ``savestate`` (random, truncated and mutated state files, ours and
PyBoy's), ``config`` (malformed YAML files and bad values in the YAML and on the command line), ``task`` (a task's
every field with wrong types and values or unknown names, task files whose ``base`` loops, RAM maps with overlapping
fields, out-of-range addresses and wrong sizes, and damaged or foreign state pools loaded into an env).

Every case prints ``CASE <kind> <i> <label>`` before it runs (so a crash or a hang names it) and
``DONE <kind> <i> <outcome> <detail>`` after, outcome one of ``ran`` or ``refused`` (detail: the one-line
message). Anything else (an exception of another type, a multi-line or empty message, a traceback) is
``BAD``. A ROM or savestate case that loads runs a few env steps (a bounded number of frames).
"""
from __future__ import annotations

import contextlib
import faulthandler
import io
import math
import os
import random
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BANK = 0x4000
CASE_TIMEOUT_S = float(os.environ.get("FUZZ_CASE_TIMEOUT_S", 60))   # far above any case's time: a hang guard


def _say(*parts) -> None:
    print(*parts, flush=True)


def _one_line(err: BaseException) -> str:
    text = str(err).strip()
    return text if text and "\n" not in text else f"MULTILINE {type(err).__name__}: {text!r}"


# ---------------------------------------------------------------- ROMs


def rom_cases(rng: random.Random, count: int):
    from gbx_lightning.roms import build_rom
    from gbx_lightning.roms.asm import fix_checksums

    base = bytearray(build_rom("orchard"))
    sizes = [0, 1, 0x100, 0x150, 0x7FFF, 0x8000, 0x8001, 0xC000, 0x10000, 0x20000]
    for i in range(count):
        kind = i % 9
        rom = bytearray(base)
        if kind == 0:   # random bytes, a size from the edges or anywhere up to 256 KiB
            size = rng.choice(sizes) if rng.random() < 0.5 else rng.randrange(0, 0x40000)
            yield f"random {size} bytes", rng.randbytes(size)
            continue
        if kind == 1:   # any cartridge type byte, header checksum fixed (or not)
            rom[0x147] = rng.randrange(256)
            label = f"cart type ${rom[0x147]:02X}"
        elif kind == 2:  # any ROM size code
            rom[0x148] = rng.randrange(256)
            label = f"rom size code ${rom[0x148]:02X}"
        elif kind == 3:  # any RAM size code, on an MBC1+RAM or MBC5+RAM cartridge
            rom[0x147], rom[0x149] = rng.choice((0x03, 0x1B, 0x10, 0x00)), rng.randrange(256)
            label = f"cart ${rom[0x147]:02X} ram code ${rom[0x149]:02X}"
        elif kind == 4:  # truncated
            cut = rng.randrange(0, len(rom))
            yield f"truncated to {cut}", bytes(rom[:cut])
            continue
        elif kind == 5:  # padded to a size its header does not declare
            pad = rng.choice((1, BANK, 2 * BANK, 3 * BANK, rng.randrange(1, 4 * BANK)))
            yield f"padded by {pad}", bytes(rom) + rng.randbytes(pad)
            continue
        elif kind == 6:  # header bytes at random
            for _ in range(rng.randrange(1, 8)):
                rom[rng.randrange(0x100, 0x150)] = rng.randrange(256)
            label = "header bytes"
        elif kind == 7:  # code bytes at random: random code runs
            for _ in range(rng.randrange(1, 200)):
                rom[rng.randrange(0x150, len(rom))] = rng.randrange(256)
            label = "code bytes"
        else:            # the entry point jumps into random code: every opcode, bank switch, DMA, HALT, STOP...
            body = bytearray(rng.randbytes(len(rom)))
            body[:0x150] = rom[:0x150]
            rom = body
            label = "random code under a valid header"
        if rng.random() < 0.7:
            rom = fix_checksums(rom)
        yield label, bytes(rom)


def run_rom(path: Path, rng: random.Random) -> str:
    """Build the env a user's config would build from this ROM and step it; refused with a one-line message, or ran."""
    import torch

    from gbx_lightning.envs import GameBoyEnv
    from gbx_lightning.envs.base import OptionError

    try:
        GameBoyEnv.check_options(rom=str(path))
    except OptionError as err:
        return f"refused {_one_line(err)}"
    env = GameBoyEnv(num_envs=2, rom=str(path), task={"start": {"variants": 1}}, frames_per_step=6,
                     release_after_frames=2, max_steps=2, cpu_threads=1, action_codec="dpad_ab_start")
    for _ in range(4):
        env.step(torch.tensor([rng.randrange(7), rng.randrange(7)], dtype=torch.int32))
    return "ran 24 frames"


# ---------------------------------------------------------------- savestates


def _orchard_machine():
    from gbx_lightning.emu import VecGameBoy
    from gbx_lightning.roms import build_rom

    gb = VecGameBoy(build_rom("orchard"), 1)
    gb.run_frames(90, buttons=np.array([1], np.uint8))
    return gb


def _pyboy_state() -> bytes | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from pyboy import PyBoy
    except ImportError:
        return None
    import logging

    from gbx_lightning.roms import build_rom

    logging.getLogger("pyboy").setLevel(logging.ERROR)
    pb = PyBoy(io.BytesIO(build_rom("orchard")), window="null", sound_emulated=False, cgb=False, log_level="ERROR")
    pb.set_emulation_speed(0)
    pb.tick(300, False, False)
    f = io.BytesIO()
    pb.save_state(f)
    pb.stop(save=False)
    return f.getvalue()


def _npz(rows: dict, meta: dict, digest_of: dict | None = None) -> bytes:
    """A state file of ours holding `rows`, its digest that of `digest_of` (default: the rows themselves)."""
    from gbx_lightning.emu.savestate import rows_digest

    f = io.BytesIO()
    try:
        digest = rows_digest(rows if digest_of is None else digest_of)
    except Exception:  # noqa: BLE001 - rows made unhashable on purpose
        digest = ""
    np.savez_compressed(f, **meta, rows_sha256=np.array(digest), **{f"row_{k}": v for k, v in rows.items()})
    return f.getvalue()


def _randomize(arr: np.ndarray, rng: random.Random, extreme: bool) -> None:
    info = np.iinfo(arr.dtype)
    flat = arr.reshape(-1)
    idx = np.array(rng.sample(range(flat.size), min(flat.size, rng.randrange(1, 64))))
    values = [rng.choice((info.min, info.max, 0, -1 if info.min < 0 else 1)) if extreme
              else rng.randrange(int(info.min), int(info.max) + 1) for _ in idx]
    flat[idx] = np.array(values, dtype=arr.dtype)


MEMORY_ROWS = ("wram", "vram", "oam", "hram", "io", "cart_ram", "serial", "frame", "obs")   # any byte is legal


def savestate_cases(rng: random.Random, count: int, workdir: Path):
    from gbx_lightning.emu import state as S
    from gbx_lightning.emu.savestate import STATE_FILE_FORMAT, STATE_FILE_VERSION

    gb = _orchard_machine()
    ours_path = workdir / "base.state"
    gb.save_state(ours_path)
    ours = ours_path.read_bytes()
    rows = gb.env_rows(0)
    meta = {"format": np.array(STATE_FILE_FORMAT), "version": np.array(STATE_FILE_VERSION),
            "rom_sha256": np.array(gb.cart.sha256), "rom_title": np.array(gb.cart.title)}
    pyboy = _pyboy_state()
    kinds = 11 if pyboy is not None else 7
    for i in range(count):
        kind = i % kinds
        if kind == 0:
            size = rng.choice((0, 1, 4, 100, len(ours))) if rng.random() < 0.5 else rng.randrange(0, 70000)
            data = rng.randbytes(size)
            if rng.random() < 0.5 and size >= 4:
                data = b"PK\x03\x04" + data[4:]   # looks like our format (a zip)
            yield f"random {size} bytes", data
        elif kind == 1:
            cut = rng.randrange(0, len(ours))
            yield f"ours truncated to {cut}", ours[:cut]
        elif kind == 2:
            data = bytearray(ours)
            for _ in range(rng.randrange(1, 20)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            yield "ours with bytes flipped", bytes(data)
        elif kind == 3:   # a well-formed file with a field missing, of another type or shape, or bad meta data
            bad = dict(rows)
            name = rng.choice(sorted(bad))
            what = rng.choice(("missing", "dtype", "shape", "meta"))
            m = dict(meta)
            if what == "missing":
                del bad[name]
            elif what == "dtype":
                bad[name] = bad[name].astype(np.float64)
            elif what == "shape":
                bad[name] = np.zeros(bad[name].size + rng.choice((-1, 1, 4096)), bad[name].dtype)
            else:
                key = rng.choice(sorted(m))
                m[key] = np.array(rng.choice(("", "x" * 64, 7, -1)))
            yield f"ours, {what} {name if what != 'meta' else ''}", _npz(bad, m)
        elif kind == 4:   # any memory contents (RAM, VRAM, OAM, I/O registers, buffers): a machine can hold them
            bad = {k: v.copy() for k, v in rows.items()}
            for name in rng.sample(MEMORY_ROWS, rng.randrange(1, len(MEMORY_ROWS) + 1)):
                _randomize(bad[name], rng, extreme=False)
            yield "ours, random memory", _npz(bad, meta)
        elif kind == 5:   # clock words and LY no machine can hold (digest made to match): refused, never a hang
            bad = {k: v.copy() for k, v in rows.items()}
            if rng.random() < 0.3:
                bad["r32"][int(S.R_LY)] = rng.choice((-1, 154, 1 << 30, -(1 << 31)))
            else:
                _randomize(bad["r64"], rng, extreme=rng.random() < 0.5)
            yield "ours, clock words", _npz(bad, meta)
        elif kind == 6:   # any field edited after saving, the digest left as it was
            bad = {k: v.copy() for k, v in rows.items()}
            _randomize(bad[rng.choice(sorted(bad))], rng, extreme=rng.random() < 0.5)
            yield "ours, edited", _npz(bad, meta, digest_of=rows)
        elif kind == 7:
            cut = rng.randrange(0, len(pyboy))
            yield f"pyboy truncated to {cut}", pyboy[:cut]
        elif kind == 8:
            data = bytearray(pyboy)
            for _ in range(rng.randrange(1, 40)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            yield "pyboy with bytes flipped", bytes(data)
        elif kind == 9:
            data = bytearray(pyboy)
            data[0] = rng.randrange(256)
            yield f"pyboy version byte {data[0]}", bytes(data)
        else:
            extra = rng.randrange(1, 300)
            yield f"pyboy plus {extra} bytes", pyboy + rng.randbytes(extra)


def run_savestate(path: Path, rng: random.Random) -> str:
    import torch

    from gbx_lightning.envs import GameBoyEnv
    from gbx_lightning.envs.base import OptionError

    options = dict(rom="orchard", task={"start": {"state": str(path), "variants": 1}}, frames_per_step=6,
                   release_after_frames=2, max_steps=2)
    try:
        GameBoyEnv.check_options(**options)
    except OptionError as err:
        return f"refused {_one_line(err)}"
    try:
        env = GameBoyEnv(num_envs=2, cpu_threads=1, **options)
    except (ValueError, TypeError) as err:   # what the module reports as "model.env rejected by GameBoyEnv: ..."
        return f"refused {_one_line(err)}"
    for _ in range(4):
        env.step(torch.tensor([rng.randrange(env.num_actions) for _ in range(2)], dtype=torch.int32))
    return "ran 24 frames"


# ---------------------------------------------------------------- configs and command lines

FORAGING_CFG = """\
seed_everything: 3
trainer:
  max_steps: 2
  accelerator: cpu
  devices: 1
  val_check_interval: 2
  check_val_every_n_epoch: null
model:
  class_path: gbx_lightning.algos.A2CModule
  init_args:
    env:
      class_path: gbx_lightning.envs.ForagingEnv
      init_args: {obs_mode: ground_truth, max_steps: 12, grid_size: 8, view_size: 5}
    num_envs: 4
    policy:
      class_path: gbx_lightning.models.MLPPolicy
      init_args: {hidden: [16]}
    gamma: 0.99
    lr: 0.01
    update_every: 3
    max_grad_norm: 0.5
    entropy_coef: 0.01
    eval_episodes: 3
checkpoint_every: 2
log_every: 1
progress_refresh: 0
image_every: 0
run_name: fuzz
"""
GAMEBOY_CFG = """\
seed_everything: 5
trainer: {max_steps: 2, accelerator: cpu, devices: 1, val_check_interval: 2, check_val_every_n_epoch: null}
model:
  class_path: gbx_lightning.algos.PPOModule
  init_args:
    env:
      class_path: gbx_lightning.envs.GameBoyEnv
      init_args: {rom: orchard, task: orchard/level1, seed: 0, stack_k: 2, action_codec: dpad_noop, max_steps: 6,
               frames_per_step: 24, release_after_frames: 8, cpu_threads: 1}
    num_envs: 2
    policy:
      class_path: gbx_lightning.models.PixelCNNPolicy
      init_args: {channels: [4, 8], hidden: 16}
    rollout_steps: 2
    epochs: 1
    minibatches: 2
    eval_episodes: 2
checkpoint_every: 2
log_every: 1
progress_refresh: 0
image_every: 0
run_name: fuzz
"""
HOSTILE_VALUES = ["abc", "", [], {}, [1, [2, {}]], True, False, None, float("nan"), float("inf"), float("-inf"), -1, 0,
                  10 ** 30, 2 ** 63, -(2 ** 63), 1e308, -1e308, 3.5, "1e30", "../../outside", "\u00e9\u4e2d\U0001F600",
                  "x" * 5000]
HOSTILE_TEXT = [
    "", "---\n", "[1, 2, 3]\n", "just a string\n", "model: [\n", "model: {class_path: \n", "\t\tmodel: 1\n",
    "model:\n  init_args:\n    lr: 0.1\n    lr: 0.2\n",
    "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, "
    "*b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n",   # alias bomb
    "[" * 5000 + "]" * 5000 + "\n",
    "model: !!python/object/apply:os.system ['echo pwned']\n",
]


def _leaves(obj, prefix=()):
    if isinstance(obj, dict) and obj:
        for k, v in obj.items():
            yield from _leaves(v, prefix + (k,))
    else:
        yield prefix


def _set(obj, path, value):
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = value


def _cli_value(value) -> str:
    import json

    if isinstance(value, str):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return json.dumps(value)


def config_cases(rng: random.Random, count: int):
    import copy

    import yaml

    bases = {"foraging": yaml.safe_load(FORAGING_CFG), "gameboy": yaml.safe_load(GAMEBOY_CFG)}
    texts = {"foraging": FORAGING_CFG, "gameboy": GAMEBOY_CFG}
    for i in range(count):
        name = "gameboy" if i % 4 == 3 else "foraging"
        base = bases[name]
        kind = i % 3
        if kind == 0 and i % 12 < 3 and i // 12 < len(HOSTILE_TEXT):   # hostile YAML text
            yield f"yaml text #{i // 12}", HOSTILE_TEXT[i // 12].encode(), []
        elif kind == 0:    # the config text damaged
            text = bytearray(texts[name].encode())
            how = rng.choice(("cut", "bytes", "char"))
            if how == "cut":
                text = text[:rng.randrange(len(text))]
            elif how == "bytes":
                pos = rng.randrange(len(text))
                text[pos:pos] = rng.randbytes(rng.randrange(1, 12))
            else:
                text[rng.randrange(len(text))] = ord(rng.choice(":[]{}-#&*!|>'\"%@`\t\n "))
            yield f"{name} yaml {how}", bytes(text), []
        else:              # one value (or an unknown key) in the YAML (kind 1) or on the command line (kind 2)
            cfg = copy.deepcopy(base)
            path = rng.choice([p for p in _leaves(cfg) if p[-1] not in ("accelerator", "devices")])
            value = rng.choice(HOSTILE_VALUES)
            if rng.random() < 0.15:   # an unknown key beside it
                path = path[:-1] + (rng.choice(("bogus", "max_stepz", "lr_", "__class__")),)
            if kind == 1:
                _set(cfg, path, value)
                yield f"{name} yaml {'.'.join(map(str, path))}={value!r:.40}", yaml.safe_dump(cfg).encode(), []
            else:
                yield (f"{name} cli {'.'.join(map(str, path))}={value!r:.40}", texts[name].encode(),
                       ["--" + ".".join(map(str, path)), _cli_value(value)])


def run_config(cfg_path: Path, extra: list[str], runs: Path) -> str:
    """``main(fit ...)`` in this process; 0 = ran, 2 = refused with one line; anything else is BAD."""
    from gbx_lightning.cli import main

    args = ["fit", "--config", str(cfg_path), "--runs_dir", str(runs), *extra]
    if not any(a.startswith("--trainer.max_time") for a in extra):
        args += ["--trainer.max_time", "00:00:00:05"]   # a valid but long run (max_steps -1) stops here
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = main(args)
        except SystemExit as exit_:   # the parser's refusals
            status = exit_.code
        except BaseException as exc:  # noqa: BLE001 - anything escaping main is the finding
            import traceback

            return f"BAD {type(exc).__name__} escaped main: {traceback.format_exc()[-1500:]!r}"
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    if status == 0:
        return "ran"
    if status == 1 and lines and "went non-finite" in lines[-1] and not any("Traceback" in x for x in lines):
        return f"stopped {lines[-1]}"   # e.g. lr 1e308: the non-finite guard's one-line error
    if status == 2 and lines and (lines[-1].startswith(("config error: ", "error: "))):
        message = lines[-1]
        noise = [line for line in lines[:-1] if "Traceback" in line or line.startswith(("usage:", "  File "))]
        return f"refused {message}" if not noise else f"BAD refused after {len(lines)} lines: {lines[:3]!r}"
    return f"BAD exit status {status!r}, stderr {lines[-5:]!r}"


# ---------------------------------------------------------------- tasks, RAM maps, state pools

TASK = {   # every part of a task, valid: each case damages one leaf
    "base": "orchard/level3",
    "start": {"inputs": [[0, "select"], [16, "-"], [20, "right"], [24, "-"], [28, "right"], [32, "-"], [36, "start"],
                         [40, "-"]], "frames": 46, "variants": 2, "variant_frames": 3},
    "goal": {"tau": 0.2, "k_consecutive": 1}, "fail": {"k_consecutive": 2},
    "reward": [{"name": "step_cost", "cost": -0.01}, {"name": "goal_distance", "alpha": 1.0},
               {"name": "ram", "field": "seeds_eaten", "weight": 0.1},
               {"name": "explore", "fields": ["player_y", "player_x"], "weight": 0.01, "bits": 4096},
               {"name": "ram_sum", "fields": ["hazard_x"], "count_field": "num_hazards", "mode": "increase"},
               {"name": "clip", "low": -1.0, "high": 1.0}],
    "step_cost": -0.01, "alpha": 1.0, "goal_bonus": 1.0, "fail_penalty": -1.0,
    "counters": [{"name": "eaten", "address": 0xC10F, "size": 1, "bits": 8}, {"name": "rng", "field": "rng"}],
    "ram_map": {"game": "orchard", "titles": ["ORCHARD"], "fields": {
        "seeds_eaten": {"address": 0xC10F}, "player_x": 0xC107, "player_y": 0xC108, "rng": {"address": 0xC10D, "size": 2},
        "num_hazards": 0xC114, "hazard_x": {"address": 0xC120, "count": 4, "stride": 4},
        "score": {"address": 0xC104, "size": 2, "bcd": True, "endian": "little"}}},
    "milestones": [{"name": "tiles", "kind": "distinct", "fields": ["player_y", "player_x"], "bits": 4096},
                   {"name": "seeds", "kind": "increase", "field": "seeds_eaten", "at_least": 2},
                   {"name": "best", "kind": "peak", "field": "score"}],
    "pool": {"score": {"seeds": 1.0, "tiles": 0.1}, "max_mb": 1, "per_step": 2, "when": "rise", "sample": 0.5,
             "priority": 1.0, "swarm": {"every": 3, "fraction": 0.5}},
    "heatmap": {"y": "player_y", "x": "player_x", "cell": 8},
}
RAM_HOSTILE = [0xE000, 0xBFFF, -1, 0x10000, "0xC000", 0xDFFF, 2 ** 40, 0, 5, 3, 8193, True, None, "big", "middle",
               [0xC000], {"address": 0xDFFF, "size": 2}, {"address": 0xC000, "count": 9000},
               {"address": 0xC000, "stride": 0, "count": 2}, {"address": 0xC000, "size": 4, "endian": "big"},
               {"address": 0xC10F, "bcd": True}, {"addr": 0xC000}]


def _task_leaves(obj, prefix=()):
    """Every leaf path of a task mapping (list items by index)."""
    if isinstance(obj, dict) and obj:
        for k, v in obj.items():
            yield from _task_leaves(v, prefix + (k,))
    elif isinstance(obj, list) and obj:
        for i, v in enumerate(obj):
            yield from _task_leaves(v, prefix + (i,))
    else:
        yield prefix


def _loop_files(workdir: Path) -> list[Path]:
    """Task files whose base loops: one onto itself, two onto each other, three in a ring (in workdir/loops)."""
    folder = workdir / "loops"
    folder.mkdir(parents=True, exist_ok=True)
    rings = {"self.yaml": "self.yaml", "a.yaml": "b.yaml", "b.yaml": "a.yaml", "x.yaml": "y.yaml",
             "y.yaml": "z.yaml", "z.yaml": "x.yaml"}
    for name, base in rings.items():
        (folder / name).write_text(f"base: {base}\nstart: {{frames: 3}}\n")
    (folder / "deep.yaml").write_text("base: orchard/level1\nram_map: {fields: {a: 0xC107, b: {address: 0xC107, "
                                      "size: 2}, player_x: 0xC107, player_y: 0xC108}}\n"
                                      "counters: [{name: c, field: b}]\n")   # fields overlapping: allowed, it runs
    return [folder / n for n in ("self.yaml", "a.yaml", "x.yaml", "deep.yaml")]


def task_cases(rng: random.Random, count: int, workdir: Path):
    """(label, ("task", spec) | ("pool", mutation)) for ``count`` cases."""
    import copy

    loops = _loop_files(workdir)
    leaves = list(_task_leaves(TASK))
    ram_leaves = [p for p in leaves if p[:2] == ("ram_map", "fields")]
    mutations = ["rom", "entries", "codec", "layout", "blob", "offsets", "methods", "reference", "columns", "book",
                 "missing", "none", "env_score", "flip"]
    for i in range(count):
        kind = i % 10
        if kind == 0 and i // 10 < len(loops):
            yield f"task file {loops[i // 10].name}", ("task", str(loops[i // 10]))
        elif kind in (1, 2):       # a RAM map field: hostile values, overlaps
            spec = copy.deepcopy(TASK)
            path = rng.choice(ram_leaves)
            if kind == 2 or rng.random() < 0.3:   # a field overlapping another, or a new one
                path = path[:3] if len(path) > 3 else path
                spec["ram_map"]["fields"][rng.choice(("dup", path[2]))] = rng.choice(RAM_HOSTILE)
            else:
                _set_path(spec, path, rng.choice(RAM_HOSTILE))
            yield f"ram_map {'.'.join(map(str, path))}", ("task", spec)
        elif kind == 3:            # a state pool, damaged or from elsewhere
            yield f"pool state {mutations[(i // 10) % len(mutations)]}", ("pool", mutations[(i // 10) % len(mutations)])
        else:                      # one task field hostile, or an unknown name beside it
            spec = copy.deepcopy(TASK)
            path = rng.choice(leaves)
            value = rng.choice(HOSTILE_VALUES + ["orchard/level9", "no/such", 0xC000, {"name": "x"}])
            if rng.random() < 0.2:
                path = path[:-1] + (rng.choice(("bogus", "baes", "__init__", "max_steps")),)
            _set_path(spec, path, value)
            yield f"task {'.'.join(map(str, path))}={value!r:.40}", ("task", spec)


def _set_path(obj, path, value):
    for k in path[:-1]:
        obj = obj[k]
    if isinstance(obj, list) and isinstance(path[-1], str):
        return
    obj[path[-1]] = value


_POOL = {}


def _pool_envs():
    """(a trained env's state with a pool of a few entries, a fresh env of the same task to load it into)."""
    if not _POOL:
        import torch

        from gbx_lightning.envs import GameBoyEnv

        task = {"base": "orchard/level1", "start": {"variants": 1},
                "milestones": [{"name": "seeds", "kind": "increase", "field": "seeds_eaten"}],
                "pool": {"score": {"seeds": 1.0}, "max_mb": 1}}
        env = GameBoyEnv(2, task=task, action_codec="dpad_noop", cpu_threads=1)
        for a in ([3, 4], [4, 3], [2, 2]):
            env.step(torch.tensor(a, dtype=torch.int32))
        _POOL["state"] = env.state_dict()
        _POOL["env"] = GameBoyEnv(2, task=task, action_codec="dpad_noop", cpu_threads=1)
    return _POOL["state"], _POOL["env"]


def run_pool(mutation: str, rng: random.Random) -> str:
    import copy

    import torch

    from gbx_lightning.envs.base import StateError

    state, env = _pool_envs()
    state = copy.deepcopy(state)
    pool = state["features"]["pool"]
    if mutation == "rom":
        pool["rom_sha256"] = "ab" * 32                       # harvested from another ROM
    elif mutation == "entries":
        pool["entries"] = torch.tensor([0, rng.choice([5000, -3, 1])])
    elif mutation == "codec":
        pool["codec"] = rng.choice(["raw", "xor-lzma", None, 3])
    elif mutation == "layout":
        pool["layout"][0][1] = [rng.randrange(1, 9)]
    elif mutation == "blob":
        blob = pool["blob"].clone()
        blob[rng.randrange(blob.numel())] ^= 1 << rng.randrange(8)
        pool["blob"] = blob
    elif mutation == "offsets":
        pool["offsets"] = pool["offsets"].flip(0)
    elif mutation == "methods":
        pool["methods"] = torch.full_like(pool["methods"], rng.choice([0, 2, 255]))
    elif mutation == "reference":
        pool["reference"] = pool["reference"][:-3]
    elif mutation == "columns":
        pool["columns"].pop("score")
    elif mutation == "book":
        pool["book"]["entry_score"] = torch.zeros(3)
    elif mutation == "missing":
        del state["features"]["pool"]
    elif mutation == "none":
        state["features"]["pool"] = None
    elif mutation == "env_score":
        pool["env_score"] = "x"
    elif mutation == "flip":
        pool["blob"] = torch.zeros(0, dtype=torch.uint8)
    try:
        env.load_state_dict(state)
    except StateError as err:
        return f"refused {_one_line(err)}"
    return "ran"


def run_task(spec, rng: random.Random) -> str:
    import torch

    from gbx_lightning.envs import GameBoyEnv
    from gbx_lightning.envs.base import OptionError

    options = dict(task=spec, action_codec="dpad_noop", cpu_threads=1, max_steps=5, stack_k=2)
    try:
        GameBoyEnv.check_options(**options)
    except OptionError as err:
        return f"refused {_one_line(err)}"
    env = GameBoyEnv(1, **options)     # what the checks passed must build and step
    for _ in range(3):
        env.step(torch.randint(0, env.num_actions, (1,), dtype=torch.int32))
    return "ran"


# ---------------------------------------------------------------- driver


def main(kind: str, seed: int, count: int, workdir: Path) -> None:
    import logging

    import warp as wp

    wp.config.quiet = True
    logging.disable(logging.WARNING)   # Lightning's INFO/WARNING lines are not the findings
    warnings.simplefilter("ignore")
    from gbx_lightning.emu.cartridge import RomWarning

    warnings.simplefilter("ignore", RomWarning)
    rng = random.Random(seed)
    workdir.mkdir(parents=True, exist_ok=True)
    if kind == "rom":
        cases = ((label, data, None) for label, data in rom_cases(rng, count))
    elif kind == "savestate":
        cases = ((label, data, None) for label, data in savestate_cases(rng, count, workdir))
    elif kind == "task":
        cases = ((label, b"", spec) for label, spec in task_cases(rng, count, workdir))
    else:
        cases = config_cases(rng, count)
    only = os.environ.get("FUZZ_ONLY")   # exploring: run only cases whose label contains this
    for i, (label, data, extra) in enumerate(cases):
        if only and only not in label:
            continue
        _say(f"CASE {kind} {i} {label!r}")
        # a case still running after CASE_TIMEOUT_S is a hang: dump where it is and exit (the test names the case)
        faulthandler.dump_traceback_later(CASE_TIMEOUT_S, exit=True)
        path = workdir / f"case{i}.{'yaml' if kind == 'config' else 'gb' if kind == 'rom' else 'state'}"
        path.write_bytes(data)
        try:
            if kind == "task":
                outcome = run_task(extra[1], rng) if extra[0] == "task" else run_pool(extra[1], rng)
            elif kind == "rom":
                outcome = run_rom(path, rng)
            elif kind == "savestate":
                outcome = run_savestate(path, rng)
            else:
                outcome = run_config(path, extra, workdir / "runs")
        except BaseException as exc:  # noqa: BLE001 - an exception of an unexpected type is the finding
            import traceback

            outcome = f"BAD {type(exc).__name__}: {traceback.format_exc()[-1500:]!r}"
        faulthandler.cancel_dump_traceback_later()
        _say(f"DONE {kind} {i} {outcome}")
        path.unlink()
    _say("ALL DONE")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]))
