"""Hostile input, fuzzed (cases in tests/_fuzz_cases.py): random and mutated ROM images, random, truncated and
edited savestates (PyBoy's and ours), malformed YAML configs and bad values in them and on the command line, task
fields, task files whose base loops, RAM maps and damaged or foreign state pools.

Each kind runs in its own subprocess, so a crash (a signal) fails the test naming the case it was in; a case
still running after a minute is a hang (the runner dumps where it is and exits). Every case must give a
clear one-line error naming the option or field, or run (a ROM or savestate that loads runs a few env
steps; a config that is valid trains two optimizer steps); nothing may be written outside the run
directory. The summary line of each kind (cases and what they produced) is printed: ``pytest -s``.
"""

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CASES = Path(__file__).resolve().parent / "_fuzz_cases.py"
SEED = 15
COUNTS = {"rom": 1000, "savestate": 880, "config": 240, "task": 120}
# what a refusal names, per kind: the env option (as GameBoyEnv.check_options words it) or the config field
REFUSAL = {"rom": ("rom is not a ROM we can run: ",),
           "savestate": ("task.start.state cannot be loaded: ",),
           "config": ("config error: ", "error: "),
           "task": ("task", "GameBoyEnv.load_state_dict: ")}


def _tree(root: Path, skip: tuple[str, ...]) -> set[str]:
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in skip]
        out.update(os.path.relpath(os.path.join(dirpath, f), root) for f in filenames)
    return out


@pytest.mark.parametrize("kind", list(COUNTS))
def test_hostile_inputs_give_a_one_line_error_or_run(kind, tmp_path):
    work = tmp_path / "work"
    repo_before = _tree(ROOT, (".git", "__pycache__", ".pytest_cache", "lightning_logs"))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    try:
        proc = subprocess.run([sys.executable, str(CASES), kind, str(SEED), str(COUNTS[kind]), str(work)],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired as err:   # the per-case watchdog should have fired long before
        pytest.fail(f"{kind} fuzz did not finish; last output: {str(err.stdout)[-2000:]}")
    cases = [line for line in proc.stdout.splitlines() if line.startswith("CASE ")]
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("ALL DONE"), (
        f"{kind} fuzz died (status {proc.returncode}; negative: killed by a signal, 1 with 'Timeout': a hang) "
        f"in {cases[-1] if cases else 'startup'}\n{proc.stderr[-4000:]}")

    outcomes = Counter()
    for line in proc.stdout.splitlines():
        if not line.startswith("DONE "):
            continue
        _, _, index, outcome = line.split(" ", 3)
        verdict, _, detail = outcome.partition(" ")
        assert verdict in ("ran", "refused", "stopped"), f"case {index} ({cases[int(index)]}): {outcome[:3000]}"
        if verdict == "refused":
            assert detail.startswith(REFUSAL[kind]) and "\n" not in detail and "Traceback" not in detail, \
                f"case {index} ({cases[int(index)]}): {detail}"
        outcomes[verdict] += 1
    assert sum(outcomes.values()) == len(cases) == COUNTS[kind]
    print(f"\nfuzz {kind}: {len(cases)} cases: " + ", ".join(f"{v} {k}" for k, v in sorted(outcomes.items())))

    # nothing written outside the run directory: the runner's own case files are in work/, runs in work/runs/
    outside = [p for p in _tree(tmp_path, ()) if not p.startswith(("work" + os.sep + "runs" + os.sep,
                                                                   os.path.join("work", "loops") + os.sep))
               and p != os.path.join("work", "base.state")]
    assert not outside, f"{kind} fuzz wrote outside the run directory: {outside[:10]}"
    assert _tree(ROOT, (".git", "__pycache__", ".pytest_cache", "lightning_logs")) == repo_before
    assert outcomes["ran"] > 0 and outcomes["refused"] > 0   # both sides of every kind are exercised
