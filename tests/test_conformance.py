"""SM83 CPU against the SingleStepTests single-step cases (flat 64 KiB RAM bus).

Always runs the vendored sample (tests/fixtures/sm83, 1500 cases); runs every case of the
shared development set when ../shared/conformance/sm83/cases-dev.json.gz is present.
"""
import gzip
import json
import os
from pathlib import Path

import pytest

from gbx_lightning.emu.conformance import compare_case, run_sm83_cases
from gbx_lightning.emu.opcodes import BASE, CB, ILLEGAL

SAMPLE = Path(__file__).parent / "fixtures" / "sm83" / "sample.json.gz"
FULL = Path(os.environ.get("GBX_SM83_CASES",
                           Path(__file__).resolve().parents[1].parent / "shared" / "conformance"
                           / "sm83" / "cases-dev.json.gz"))
if not FULL.exists():
    FULL = Path("/work/shared/conformance/sm83/cases-dev.json.gz")


def _load(path):
    with gzip.open(path, "rt") as fh:
        return json.load(fh)


def _make_sample(full=FULL, out=SAMPLE):  # how the fixture was made
    d = _load(full)
    sample = {k: [v[i] for i in (0, 17, 34) if i < len(v)] for k, v in d.items()}
    with gzip.open(out, "wt", compresslevel=9) as fh:
        json.dump(sample, fh, separators=(",", ":"))


def _check_all(groups):
    cases = [c for v in groups.values() for c in v]
    results = run_sm83_cases(cases)
    failures = []
    for case, res in zip(cases, results):
        diffs = compare_case(case, res)
        if diffs:
            failures.append(f"{case['name']}: {'; '.join(diffs[:3])}")
    return len(cases), failures


def test_vendored_sample_all_pass():
    groups = _load(SAMPLE)
    assert len(groups) == 500                      # 245 base opcodes + 255 CB files
    n, failures = _check_all(groups)
    assert n == 1500
    assert failures == [], f"{len(failures)} of {n} failed, first: {failures[:5]}"


@pytest.mark.skipif(not FULL.exists(), reason="shared conformance set not present")
def test_full_dev_set_all_pass():
    n, failures = _check_all(_load(FULL))
    assert n >= 25000
    assert failures == [], f"{len(failures)} of {n} failed, first: {failures[:5]}"


def _table_entry(case):
    ops = case["name"].split()
    if ops[0].lower() == "cb":
        return CB[int(ops[1], 16)]
    return BASE[int(ops[0], 16)]


def test_opcode_table_matches_cases():
    """opcodes.py (lengths and M-cycles, taken/not taken) agrees with the cases."""
    groups = _load(SAMPLE)
    jumps = {0x18, 0xC3, 0xC9, 0xD9, 0xE9, 0xCD} | set(range(0xC7, 0x100, 8)) | set(
        k for k, v in enumerate(BASE) if v.cycles_taken is not None)
    for cases in groups.values():
        for case in cases:
            entry = _table_entry(case)
            op = entry.code if not case["name"].lower().startswith("cb") else 0xCB
            n = len(case["cycles"])
            if op in (0x76, 0x10):          # HALT / STOP: the cases' own convention
                continue
            if entry.cycles_taken is None:
                assert n == entry.cycles, case["name"]
            else:
                assert n in (entry.cycles, entry.cycles_taken), case["name"]
            if op not in jumps:
                pc_delta = (case["final"]["pc"] - case["initial"]["pc"]) & 0xFFFF
                assert pc_delta == entry.length, case["name"]


def test_table_covers_every_opcode():
    legal = [o for o in BASE if o.code not in ILLEGAL and o.code != 0xCB]
    assert len(legal) == 244 and len(ILLEGAL) == 11     # + CB prefix = 256
    assert all(o.cycles >= 1 for o in legal)
    assert len(CB) == 256 and {o.cycles for o in CB} == {2, 3, 4}


def test_bad_cases_argument():
    with pytest.raises(TypeError, match="cases"):
        run_sm83_cases("not a list")
    with pytest.raises(ValueError, match=r"cases\[0\]"):
        run_sm83_cases([{"initial": {"a": 1}}])
    assert run_sm83_cases([]) == []
