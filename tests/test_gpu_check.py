"""tools/gpu_check.sh, the device check: its CPU rehearsal runs the same parts as the device (so a
part is rehearsed before device minutes go to it), and its time budget skips what would overrun a
device call and says so (a 600 s call that is killed returns only what finished)."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "tools" / "gpu_check.sh"


def _parts() -> tuple[list[str], list[str]]:
    """The part names of the device branch and of the rehearsal branch, in order."""
    text = SCRIPT.read_text()
    device, rehearsal = text.split('if [ "$DEV" = cuda ]; then\n    nvidia-smi', 1)[1].split("\nelse", 1)
    names = [re.findall(r"^\s*part (\w+) \d+ ", branch, flags=re.M) for branch in (device, rehearsal.split("\nfi", 1)[0])]
    return names[0], names[1]


def test_rehearsal_runs_every_device_part():
    device_parts, rehearsal_parts = _parts()
    assert len(device_parts) == len(set(device_parts)) >= 10
    # "env" prints the device's versions: nothing to rehearse
    assert sorted(set(device_parts) - {"env"}) == sorted(rehearsal_parts)


def test_budget_skips_and_lists_parts(tmp_path):
    """With a 1 s budget every part is skipped, listed in the log and in bench.jsonl; nothing runs."""
    env = dict(os.environ, GPU_CHECK_DEVICE="cpu", GPU_CHECK_BUDGET="1", OUT=str(tmp_path))
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    status = [json.loads(line) for line in (tmp_path / "bench.jsonl").read_text().splitlines()]
    assert [s["name"] for s in status] == _parts()[1]
    assert all(s.get("skipped") for s in status)
    assert "skipped: its 600s would pass the 1s budget" in (tmp_path / "gpu_check.log").read_text()


def test_named_parts_only(tmp_path):
    """GPU_CHECK_PARTS runs the parts named and no other (here one the budget then skips)."""
    env = dict(os.environ, GPU_CHECK_DEVICE="cpu", GPU_CHECK_BUDGET="1", GPU_CHECK_PARTS="emu_soa", OUT=str(tmp_path))
    subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120, check=True)
    status = [json.loads(line) for line in (tmp_path / "bench.jsonl").read_text().splitlines()]
    assert [s["name"] for s in status] == ["emu_soa"]
