"""Train starts drawn by need (``train_starts.adapt``, envs/features/curriculum.py): the weights from hand-computed
pass rates, the pass accounting on orchard's full game (a maze 4 whose seeds are written to 0 passes within steps,
the plain maze 4 never does under no-ops), the draw's distribution, evaluation untouched, an exact resume, and the
options' one-line errors."""

import pytest
import torch

from gbx_lightning.envs import GameBoyEnv, load_task
from gbx_lightning.envs.base import OptionError
from gbx_lightning.envs.features.base import Step
from gbx_lightning.envs.features.curriculum import need_weights

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

LEVEL7 = load_task("orchard/level7").start


def maze4(**ram) -> dict:
    return {"inputs": LEVEL7.inputs, "frames": LEVEL7.frames, "variants": 2,
            "ram": {"from_select": 0, "level": 3, **ram}}


def env_of(n: int, adapt: dict | None = None, share: float = 1.0) -> GameBoyEnv:
    """Rows 0-1 the game's start, 2-3 train start 0 (maze 4 with no seeds left: cleared at once), 4-5 train start 1
    (maze 4 as the game has it)."""
    task = {"base": "orchard/game", "start": {"variants": 2},
            "train_starts": {"share": share, "starts": [maze4(seeds_left=0), maze4()],
                             "adapt": adapt or {"milestone": "mazes"}}}
    return GameBoyEnv(n, task=task, action_codec="dpad_noop", cpu_threads=1, max_steps=40)


def test_need_weights_by_hand():
    """rates 1, untried (0), 3/4 -> need 0, 1, 1/4 -> shares 0, 0.8, 0.2; mix 0.25 adds 1/12 each."""
    w = need_weights(torch.tensor([1.0, 0.0, 3.0]), torch.tensor([1.0, 0.0, 4.0]), 0.25)
    torch.testing.assert_close(w, torch.tensor([1 / 12, 1 / 12 + 0.6, 1 / 12 + 0.15]))
    done = need_weights(torch.tensor([2.0, 5.0]), torch.tensor([2.0, 5.0]), 0.25)   # every stage passes: uniform
    torch.testing.assert_close(done, torch.tensor([0.5, 0.5]))
    torch.testing.assert_close(need_weights(torch.zeros(3), torch.zeros(3), 0.0), torch.full((3,), 1 / 3))


def test_passes_are_counted_per_start_and_reported():
    """No-op play for 120 steps of 8 envs: every episode from train start 0 passes (its maze cleared: mazes 1),
    none from train start 1 (time up or a beetle): rates exactly 1 and 0, so the weights are mix/2 = 0.125 and
    0.875; the log keys carry them on the ended episodes (0 elsewhere)."""
    env = env_of(8)
    cur = env.feature("curriculum")
    started = cur.episode_start.clone()
    assert started.tolist() == [{2: 0, 3: 0, 4: 1, 5: 1}[s] for s in env.slots.tolist()]
    ended_from, passed_from = torch.zeros(2), torch.zeros(2)
    for _ in range(120):
        _, _, terminated, truncated, info = env.step(torch.zeros(8, dtype=torch.int32))
        done = terminated | truncated
        for k in range(2):
            ended_from[k] += (done & (started == k)).sum()
            passed_from[k] += (done & (started == k) & (info["mazes"] >= 1)).sum()
        assert torch.equal(info["train_start0_weight"] != 0, done)
        started = torch.where(done, cur.episode_start, started)
    assert ended_from.min() >= 2 and passed_from.tolist() == [ended_from[0].item(), 0.0]
    assert (cur.passed[0] == cur.ended[0]).item() and cur.passed[1].item() == 0.0 and cur.ended.min() > 0
    torch.testing.assert_close(cur.weights(), torch.tensor([0.125, 0.875]))
    weight = info["train_start1_weight"][done]   # the last step's ended episodes, if any
    assert torch.all(weight == 0.875)


def test_the_draw_follows_the_weights_and_leaves_other_rows():
    """With rates 1 and 0 (weights 0.125, 0.875) the ended envs that the engine sent to a train start go to start 0's
    rows in 256 * 0.125 = 32 +- 16 of 256 draws; those sent to the game's start (rows 0-1) stay there."""
    env = env_of(256)
    cur = env.feature("curriculum")
    cur.passed, cur.ended = torch.tensor([5.0, 0.0]), torch.tensor([5.0, 5.0])
    step = Step(env, env.screens(), env._no_dist, env._no_dist, *(torch.zeros(256, dtype=torch.bool),) * 4)
    step.info["mazes"] = torch.zeros(256, dtype=torch.int32)   # no episode ended: the sums stay
    step.slots = torch.full((256,), 2, dtype=torch.int64)
    cur.before_reset(step)
    assert cur.passed.tolist() == [5.0, 0.0] and cur.ended.tolist() == [5.0, 5.0]
    assert 16 <= int((step.slots < 4).sum()) <= 48 and bool(((step.slots >= 2) & (step.slots <= 5)).all())
    assert {2, 3, 4, 5} == set(step.slots.tolist())
    step.slots = torch.tensor([0, 1] * 128)
    cur.before_reset(step)
    assert step.slots.tolist() == [0, 1] * 128


def test_evaluation_counts_nothing_and_a_resume_is_exact():
    """An eval() env's episodes (the game's start) leave the sums alone; a training env restored from a state_dict
    draws the same starts and counts the same passes as the one that saved it."""
    a = env_of(4, share=0.5)
    for _ in range(30):
        a.step(torch.zeros(4, dtype=torch.int32))
    saved = a.state_dict()
    b = env_of(4, share=0.5)
    b.load_state_dict(saved)
    for _ in range(60):
        a.step(torch.zeros(4, dtype=torch.int32))
        b.step(torch.zeros(4, dtype=torch.int32))
        assert torch.equal(a.slots, b.slots)
    ca, cb = a.feature("curriculum"), b.feature("curriculum")
    assert torch.equal(ca.passed, cb.passed) and torch.equal(ca.ended, cb.ended) and ca.ended.sum() > 0
    before = ca.ended.clone()
    a.eval()
    a.reset(seed=1)
    for _ in range(60):
        _, _, _, _, info = a.step(torch.zeros(4, dtype=torch.int32))
        assert "train_start0_pass" not in info
    assert torch.equal(ca.ended, before) and a.slots.max().item() < 2


def test_a_checkpoint_with_the_curriculum_does_not_load_into_an_env_without_it():
    saved = env_of(2).state_dict()
    plain = GameBoyEnv(2, task={"base": "orchard/game", "start": {"variants": 2},
                                "train_starts": {"share": 1.0, "starts": [maze4(seeds_left=0), maze4()]}},
                       action_codec="dpad_noop", cpu_threads=1, max_steps=40)
    with pytest.raises(Exception, match="curriculum"):
        plain.load_state_dict(saved)


@pytest.mark.parametrize("adapt,message", [
    ({"milestone": "badges"}, "task.train_starts.adapt.milestone must be one of the task's milestones ['seeds', "
                              "'mazes', 'tiles'] (or null: the episode's success), got 'badges'"),
    ({"mix": 1.5}, "task.train_starts.adapt.mix must be a number in [0.0, 1.0], got 1.5"),
    ({"window": 0}, "task.train_starts.adapt.window must be a number >= 1.0, got 0"),
    ({"at_least": 0}, "task.train_starts.adapt.at_least must be an int >= 1, got 0"),
    ({"rate": 1}, "task.train_starts.adapt.rate is not a field of Adapt; fields: milestone, at_least, window, mix"),
])
def test_bad_adapt_options_are_one_line_errors(adapt, message):
    with pytest.raises(OptionError) as err:
        load_task({"base": "orchard/game", "train_starts": {"starts": ["orchard/game_maze4"], "adapt": adapt}})
    assert str(err.value).startswith(message), str(err.value)
