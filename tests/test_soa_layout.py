"""r32/r64 in the soa layout (issue 24: stored [slot, env], so a GPU warp's threads reading one slot touch
one cache line; the machine holds the same logical [env, slot] array with swapped strides) run exactly like
the rows layout: the same ROMs with the same random buttons, every state array (frames and obs included)
compared after every step, in the CPU shape and in the CUDA shape (GBX_EMU_STAGED=1: soa + the CUDA shape
is what a GPU runs); snapshots, state files, start-state caches and pools move state across layouts (state
files keep the rows' bytes); GameBoyEnv's masked resets from its cache give the same episodes.

The code reads soa only where it is built for it (GBX_EMU_LAYOUT=soa at import: state.SOA_ON_CPU /
SOA_ON_CUDA; then it reads either layout), so each configuration runs in its own process, compared with a
process running the default build (rows, the constant-stride row views)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from test_gpu_shape import ROMS

REPO = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import hashlib, json, os, sys, tempfile
import numpy as np
import torch
import warp as wp
wp.config.quiet = True
sys.path.insert(0, sys.argv[1] + "/tools")
from bench_emu import load_rom
from gbx_lightning.emu import VecGameBoy, cpu
from gbx_lightning.emu import state as S
from gbx_lightning.roms import build_rom


def digest(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


def same(x, y):
    return all(np.array_equal(x.state_array(k).numpy(), y.state_array(k).numpy()) for k in x.state_names)


out = {"staged": cpu.uses_staged("cpu"), "soa_on_cpu": S.SOA_ON_CPU, "rom": {}, "problems": []}
problems = out["problems"]
rng = np.random.default_rng(7)
for name in sys.argv[2].split(","):
    gb = VecGameBoy(load_rom(name)[0], 4)
    out["layout"] = gb.layout
    steps = []
    for step in range(3):
        gb.run_frames(20, buttons=rng.integers(0, 256, 4).astype(np.uint8), release_after=7,
                      render=("obs", "full", "none")[step])
        steps.append({k: digest(gb.state_array(k).numpy()) for k in gb.state_names})
    out["rom"][name] = steps

# GameBoyEnv: masked resets from the start-state cache every 7 steps (max_steps), obs and final obs hashed
tmp = tempfile.mkdtemp()
rom_path = os.path.join(tmp, "game.gb")
with open(rom_path, "wb") as fh:
    fh.write(build_rom("orchard"))
from gbx_lightning.envs import GameBoyEnv
env = GameBoyEnv(4, rom=rom_path, task={"start": {"frames": 20, "variants": 4, "variant_frames": 5}},
                 action_codec="dpad_noop", cpu_threads=1, max_steps=7, seed=11)
out["env_layout"] = env._machines[0].layout
g = torch.Generator().manual_seed(2)
hashes = [digest(env.reset(seed=11).numpy())]
resets = 0
for _ in range(20):
    obs, _, term, trunc, info = env.step(torch.randint(0, 5, (4,), generator=g, dtype=torch.int32))
    hashes.append(digest(obs.numpy()) + digest(info["final_obs"].numpy()))
    resets += int((term | trunc).sum())
machines = env.state_dict()["machines"]
hashes.append({k: digest(v.numpy()) for k, v in sorted(machines.items())})
out["env"] = hashes
out["env_resets"] = resets

if S.SOA_ON_CPU:
    # both layouts in this process: state moves across them
    rom = load_rom("orchard")[0]
    soa, rows = VecGameBoy(rom, 3), VecGameBoy(rom, 3, layout="rows")
    r32 = soa.state_array("r32")
    out["soa_strides"] = [list(r32.strides), list(soa.state_array("r64").strides)]
    out["rows_strides"] = [list(rows.state_array("r32").strides), list(rows.state_array("r64").strides)]
    buttons = np.array([0x01, 0x10, 0x80], np.uint8)
    soa.run_frames(30, buttons=buttons, release_after=9)
    # a state file saved with soa loads into rows, and rows saves the same file content
    f1, f2, f3 = (os.path.join(tmp, n) for n in ("soa.npz", "rows.npz", "soa2.npz"))
    soa.save_state(f1, env=1)
    rows.load_state(f1)
    for k in range(3):
        for key, row in rows.env_rows(k).items():
            if not np.array_equal(row, soa.env_rows(1)[key]):
                problems.append(f"soa -> file -> rows: env {k} {key}")
    rows.save_state(f2, env=2)
    with np.load(f1) as a, np.load(f2) as b:
        if sorted(a.files) != sorted(b.files) or any(not np.array_equal(a[k], b[k]) for k in a.files):
            problems.append("the state file saved with rows differs from the one saved with soa")
    # ... and back: rows' file into soa; both run on identically
    soa.load_state(f2)
    if not same(soa, rows):
        problems.append("rows -> file -> soa: the machines differ")
    for _ in range(3):
        b = rng.integers(0, 256, 3).astype(np.uint8)
        soa.run_frames(17, buttons=b, release_after=5)
        rows.run_frames(17, buttons=b, release_after=5)
        if not same(soa, rows):
            problems.append("after a state file round trip the layouts run differently")
    soa.save_state(f3, env=0)
    with np.load(f2) as a:
        r32_row = a["row_r32"]
    # snapshots across layouts, and masked restores
    snap = soa.snapshot()
    soa.run_frames(11, buttons=buttons)
    rows.restore(snap)
    if not all(np.array_equal(rows.state_array(k).numpy(), snap.arrays[k].numpy()) for k in rows.state_names):
        problems.append("soa snapshot -> rows restore")
    before = soa.state_array("r64").numpy().copy()
    soa.restore(rows.snapshot(), mask=[True, False, True])
    after = soa.state_array("r64").numpy()
    if not (np.array_equal(after[[0, 2]], snap.arrays["r64"].numpy()[[0, 2]]) and np.array_equal(after[1], before[1])):
        problems.append("rows snapshot -> masked soa restore")
    # live numpy views write the machine (CPU)
    r32.numpy()[2, S.R_A] = 0x5A
    if soa.registers(2)["a"] != 0x5A or soa.env_rows(2)["r32"][S.R_A] != 0x5A:
        problems.append("a write through state_array('r32').numpy() did not reach register A")
    # start-state cache (restore_from) and pool (store_into) on soa, from rows' rows
    start = [rows.env_rows(0), rows.env_rows(2)]
    start[1]["r32"][S.R_B] = 0x77
    cache = soa.make_cache(start)
    slots = wp.array(np.array([1, 0, 1], np.int32), device="cpu")
    mask = wp.array(np.array([1, 1, 0], np.uint8), device="cpu")
    keep = soa.env_rows(2)
    soa.restore_from(cache, slots, mask)
    for e, want in ((0, start[1]), (1, start[0]), (2, keep)):
        for key, row in soa.env_rows(e).items():
            if not np.array_equal(row, want[key]):
                problems.append(f"restore_from: env {e} {key}")
    pool = soa.make_pool(start, 4)
    soa.store_into(pool, wp.array(np.array([2, 0, 9, 1], np.int32), device="cpu"),
                   wp.array(np.array([1, 0, 1, 1], np.uint8), device="cpu"))
    for name in ("r32", "r64", "wram"):
        got = pool.arrays[name].numpy()
        want = [soa.env_rows(2)[name], start[1][name], np.zeros_like(start[0][name]), soa.env_rows(1)[name]]
        for j in range(4):
            if not np.array_equal(got[j], want[j]):
                problems.append(f"store_into: pool entry {j} {name}")
    out["file_r32"] = digest(r32_row)
print(json.dumps(out))
"""


def _run(layout: str, staged: bool) -> dict:
    env = dict(os.environ, GBX_EMU_STAGED="1" if staged else "0", GBX_EMU_LAYOUT=layout, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(REPO), ",".join(ROMS)], capture_output=True,
                          text=True, env=env, cwd=str(REPO), timeout=1500)   # (a wrong view can run a machine forever)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def rows_run() -> dict:
    return _run("", False)


def _compare(rows: dict, soa: dict, what: str) -> None:
    assert (rows["layout"], rows["env_layout"], soa["layout"], soa["env_layout"]) == ("rows", "rows", "soa", "soa")
    assert sorted(soa["rom"]) == sorted(ROMS)
    for name, steps in rows["rom"].items():
        for step, (a, b) in enumerate(zip(steps, soa["rom"][name])):
            diff = sorted(k for k in a if a[k] != b[k])
            assert not diff, f"{what}: {name}, step {step}: soa's {diff} differ from rows'"
    assert soa["env_resets"] == rows["env_resets"] >= 8
    for step, (a, b) in enumerate(zip(rows["env"], soa["env"])):
        assert a == b, f"{what}: GameBoyEnv differs at step {step}"
    assert not soa["problems"], f"{what}: {soa['problems']}"
    assert soa["soa_strides"] == [[4, 3 * 4], [8, 3 * 8]]      # [env, slot] view of [slot, env] storage
    assert soa["rows_strides"] == [[32 * 4, 4], [24 * 8, 8]]


@pytest.mark.parametrize("staged", [False, True], ids=["cpu_shape", "cuda_shape"])
def test_soa_runs_like_rows(rows_run, staged):
    pytest.importorskip("warp")
    soa = _run("soa", staged)
    assert (soa["staged"], soa["soa_on_cpu"], rows_run["staged"], rows_run["soa_on_cpu"]) == (staged, True, False,
                                                                                                False)
    _compare(rows_run, soa, "CUDA shape" if staged else "CPU shape")


def test_cpu_builds_rows_only_by_default():
    """Without GBX_EMU_LAYOUT=soa the code reads r32/r64 as rows (constant strides): a soa machine is
    refused rather than run wrong; the layouts are told apart by their strides."""
    import warp as wp

    from gbx_lightning.emu import VecGameBoy
    from gbx_lightning.emu import state as S
    from gbx_lightning.roms import build_rom
    if S.SOA_ON_CPU or S.SOA_ON_CUDA:
        pytest.skip("GBX_EMU_LAYOUT=soa in this process")
    assert S.default_layout("cpu") == "rows" and not S.soa_built("cpu")
    with pytest.raises(ValueError, match="GBX_EMU_LAYOUT=soa"):
        VecGameBoy(build_rom("orchard"), 2, layout="soa")
    with pytest.raises(ValueError, match="layout"):
        VecGameBoy(build_rom("orchard"), 2, layout="columns")
    soa = S.per_env_zeros(5, (S.NUM_R32,), wp.int32, "cpu", "soa")
    assert (soa.shape, soa.strides, S.layout_of(soa)) == ((5, 32), (4, 20), "soa")
    assert S.layout_of(S.per_env_zeros(5, (S.NUM_R64,), wp.int64, "cpu")) == "rows"
    soa.numpy()[3, 7] = 9                      # storage [slot, env]: word 7 of env 3 at 7 * 5 + 3
    assert np.asarray(soa._ref.numpy()).ravel()[7 * 5 + 3] == 9
