"""tools/pool_states.py: a checkpoint's state pool as state files for the next run's starts. On orchard level 1 the
pool harvests three states (two at one seed, one at two); the best, and those where a RAM condition holds, come out
as state files that a task's ``start.state`` loads back into the very machine that was harvested."""

import sys
from pathlib import Path

import pytest
import torch

from gbx_lightning.envs import GameBoyEnv
from gbx_lightning.roms import orchard

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import pool_states  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

NOOP, R, L, U, D = range(5)
TASK = {"base": "orchard/level1", "start": {"variants": 1},
        "milestones": [{"name": "seeds", "kind": "increase", "field": "seeds_eaten"}],
        "pool": {"score": {"seeds": 1.0}, "max_mb": 1, "sample": 0.0}}


def test_the_best_pooled_states_load_back_as_start_states(tmp_path, capsys):
    env = GameBoyEnv(2, task=TASK, action_codec="dpad_noop", cpu_threads=1, max_steps=40)
    for actions in ([U, D], [D, NOOP], [D, NOOP]):   # both eat a seed, then env 0 walks to its second (score 2)
        env.step(torch.tensor(actions, dtype=torch.int32))
    live = env.machines[0].state_array("wram").numpy()[0].copy()
    assert int(live[orchard.SEEDS_LEFT - 0xC000]) == 2
    ckpt = tmp_path / "last.ckpt"
    torch.save({"loops": {"fit_loop": {"state_dict": {"combined_loader": [{"env": env.state_dict()}]}}}}, ckpt)

    assert pool_states.main([str(ckpt), "--out", str(tmp_path / "all"), "--top", "5"]) == 0
    text = capsys.readouterr().out
    assert "# 3 of the pool's 3 states, best first" in text and text.count("state: ") == 3
    assert [line.rsplit("score: ", 1)[1] for line in text.splitlines() if "score: " in line] == ["2}", "1}", "1}"]

    assert pool_states.main([str(ckpt), "--out", str(tmp_path / "two"), "--task", "orchard/level1",
                             "--where", "seeds_left=2"]) == 0
    assert "# 1 of the pool's 3 states where seeds_left=2" in capsys.readouterr().out
    path = tmp_path / "two" / "pool_000.state"
    back = GameBoyEnv(1, task={"base": "orchard/level1", "start": {"state": str(path), "variants": 1, "inputs": None,
                                                                    "frames": 0}}, action_codec="dpad_noop",
                      cpu_threads=1)
    assert (back.machines[0].state_array("wram").numpy()[0] == live).all()

    with pytest.raises(SystemExit, match="none of the pool's 3 states holds 0xC106=0"):
        pool_states.main([str(ckpt), "--out", str(tmp_path / "none"), "--where", "0xC106=0"])
    torch.save({"loops": {"fit_loop": {"state_dict": {"combined_loader": [{"env": None}]}}}}, ckpt)
    with pytest.raises(SystemExit, match="saved without its env state"):
        pool_states.main([str(ckpt), "--out", str(tmp_path / "x")])
