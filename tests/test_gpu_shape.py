"""The kernel's CUDA shape (cpu.staged_data_access: every data byte read and written at one place
in the instruction loop) runs exactly like the CPU shape (each group's branch makes its own
access). GBX_EMU_STAGED=1 builds the CUDA shape for the CPU, so this is checked without a GPU:
the same ROMs, buttons and SingleStepTests cases in two processes, every state array compared
after every step. (CUDA == CPU on a device: tools/bench_gpu.py parity.)"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Run in a fresh process: the shape is fixed when gbx_lightning.emu.cpu is imported.
SCRIPT = r"""
import gzip, hashlib, json, sys
import numpy as np
import warp as wp
wp.config.quiet = True
sys.path.insert(0, sys.argv[1] + "/tools")
from bench_emu import load_rom
from gbx_lightning.emu import VecGameBoy, cpu
from gbx_lightning.emu.conformance import run_sm83_cases

out = {"staged": cpu.STAGED_ON_CPU, "rom": {}}
rng = np.random.default_rng(7)
for name in ("workload", "orchard", "idiom_memcpy", "idiom_stat", "idiom_dma", "idiom_joypad", "idiom_timer"):
    gb = VecGameBoy(load_rom(name)[0], 4)
    steps = []
    for step in range(3):
        gb.run_frames(24, buttons=rng.integers(0, 256, 4).astype(np.uint8), release_after=8, render="obs")
        snap = gb.snapshot()
        steps.append({k: hashlib.sha256(v.numpy().tobytes()).hexdigest()[:16] for k, v in sorted(snap.arrays.items())})
    out["rom"][name] = steps
with gzip.open(sys.argv[1] + "/tests/fixtures/sm83/sample.json.gz", "rt") as fh:
    cases = [c for v in json.load(fh).values() for c in v]
out["sm83"] = hashlib.sha256(json.dumps(run_sm83_cases(cases), sort_keys=True).encode()).hexdigest()
print(json.dumps(out))
"""


def _run(staged: bool) -> dict:
    env = dict(os.environ, GBX_EMU_STAGED="1" if staged else "0", PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(REPO)], capture_output=True, text=True, env=env,
                          cwd=str(REPO))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_cuda_shape_runs_like_the_cpu_shape():
    pytest.importorskip("warp")
    cpu_shape, cuda_shape = _run(False), _run(True)
    assert (cpu_shape["staged"], cuda_shape["staged"]) == (False, True)
    assert cuda_shape["sm83"] == cpu_shape["sm83"]
    for name, steps in cpu_shape["rom"].items():
        for step, (a, b) in enumerate(zip(steps, cuda_shape["rom"][name])):
            diff = sorted(k for k in a if a[k] != b[k])
            assert not diff, f"{name}, step {step}: the CUDA shape's {diff} differ from the CPU shape's"
