"""Nothing lost with the env state (issue 34, section 3): a state pool stored packed in checkpoints
(envs/state_codec.py) and restored bit for bit, a full pool within its max_mb, the checkpoint cap and a task's pool
cap agreeing (refused in one line naming both), and a checkpoint that leaves the env state out said in one line, when
it starts and on resume, with what a resume loses (never "the reward list changed")."""

import warnings
import zlib

import numpy as np
import pytest
import torch

from gbx_lightning.algos.base import env_state_note
from gbx_lightning.checks import ConfigError
from gbx_lightning.cli.app import _check_env_state_cap
from gbx_lightning.envs import GameBoyEnv
from gbx_lightning.envs.features.base import tensor_nbytes
from gbx_lightning.envs.features.pool import pool_capacity, pool_state_bytes
from gbx_lightning.envs.reward_transforms import build_reward_pipeline
from gbx_lightning.envs.state_codec import STORED, XOR_ZLIB, Layout, StateCodecError, pack, pack_many, unpack_many

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

POOL_TASK = {"base": "orchard/level3", "milestones": [{"name": "seeds", "kind": "increase", "field": "seeds_eaten"},
                                                      {"name": "tiles", "kind": "distinct",
                                                       "fields": ["player_y", "player_x"]}],
             "pool": {"score": {"seeds": 1.0, "tiles": 0.1}, "max_mb": 1, "per_step": 4}}


# ---------------------------------------------------------------------------------------------- the codec
def test_entries_pack_against_the_reference_and_unpack_exactly():
    """Three entries of a 2-array layout: one equal to the reference but two bytes (packs to a few bytes), one of
    random bytes (incompressible: stored as it is), the reference itself; they unpack to themselves, with the
    layout."""
    rng = np.random.default_rng(0)
    ref = {"a": torch.from_numpy(rng.integers(0, 256, (1, 300), dtype=np.uint8)),
           "b": torch.from_numpy(rng.integers(-2**31, 2**31, (1, 5, 4), dtype=np.int32))}
    layout = Layout.of(ref)
    assert layout.arrays == [("a", (300,), "uint8"), ("b", (5, 4), "int32")] and layout.nbytes == 380
    reference = layout.rows(ref)[0]
    near = bytearray(reference)
    near[7] ^= 0x55
    near[333] ^= 0x01
    noise = rng.integers(0, 256, 380, dtype=np.uint8).tobytes()
    entries = [bytes(near), noise, reference]
    packed = [pack(e, reference) for e in entries]
    assert [m for m, _ in packed] == [XOR_ZLIB, STORED, XOR_ZLIB]
    assert len(packed[0][1]) < 30 and packed[1][1] == noise
    assert zlib.decompress(packed[0][1])[7] == 0x55                     # the XOR delta: zero but where they differ
    state = pack_many(packed, reference, layout)
    layout2, reference2, unpacked, packed2 = unpack_many(state, "pool")
    assert layout2.arrays == layout.arrays and reference2 == reference and unpacked == entries and packed2 == packed
    tensors = layout.tensors(unpacked)
    assert tensors["b"].dtype == torch.int32 and tensors["b"].shape == (3, 5, 4)
    assert layout.rows(tensors) == entries


@pytest.mark.parametrize("damage, message", [
    (lambda s: s.update(codec="raw"), "pool: the state pool is stored as 'raw', this code reads 'xor-zlib1'"),
    (lambda s: s.update(offsets=s["offsets"].flip(0)), "pool: the state pool's offsets do not fit its"),
    (lambda s: s.update(methods=torch.full_like(s["methods"], 7)), "pool: the state pool's entry 0 does not unpack"),
    (lambda s: s.update(reference_sha256="0" * 64), "pool: the state pool's reference state is damaged"),
    (lambda s: s["blob"].__setitem__(slice(2, 6), 0xFF), "pool: the state pool's entry 0 does not unpack (its CRC-32"),
    (lambda s: s["blob"].__setitem__(-1, s["blob"][-1] ^ 1), "pool: the state pool's entry 1 does not unpack"),
])
def test_damaged_packs_are_one_line_errors(damage, message):
    layout = Layout([("a", (64,), "uint8")])
    reference = bytes(range(64))
    state = pack_many([pack(bytes(64), reference), pack(reference, reference)], reference, layout)
    damage(state)
    with pytest.raises(StateCodecError) as err:
        unpack_many(state, "pool")
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


# ---------------------------------------------------------------------------------------------- the pool
@pytest.fixture(scope="module")
def full_pool_env():
    env = GameBoyEnv(8, task=POOL_TASK, stack_k=2, action_codec="dpad_noop", max_steps=40, cpu_threads=1)
    gen = torch.Generator().manual_seed(3)
    for _ in range(200):
        env.step(torch.randint(0, 5, (8,), generator=gen, dtype=torch.int32))
    return env


def test_a_full_pool_stays_within_its_max_mb_and_packs_small(full_pool_env):
    """max_mb 1 holds 16 states of 61,961 bytes (machine 50,425 + 2 frames + score, serial, distance): 991,376 bytes
    of the 1,048,576; after 200 steps of 8 envs the pool is full and has replaced entries, its cache has exactly its rows, and
    a checkpoint holds it packed in under a tenth of its raw bytes, as state_nbytes tells without building it."""
    env = full_pool_env
    pool = env.feature("pool")
    per_state = pool_state_bytes(env.machines[0].state_bytes_per_env, 2)
    assert (per_state, pool.book.capacity) == (61961, 16) and pool_capacity(1, per_state) * per_state <= 1 << 20
    stats = pool.stats()
    assert stats["pool_states"] == 16 and stats["pool_harvested"] > 16
    assert env.cache.num_rows == env.num_start_states + 16 + 1
    state = env.state_dict()
    packed = tensor_nbytes(state["features"]["pool"])
    assert packed < 16 * per_state / 10
    assert env.state_nbytes == tensor_nbytes(state)


def test_a_packed_pool_loads_back_bit_for_bit(full_pool_env):
    env = full_pool_env
    pool = env.feature("pool")
    state = env.state_dict()
    used = torch.nonzero(pool.book.entry_serial >= 0).flatten()
    rows = env.num_start_states + used
    fresh = GameBoyEnv(8, task=POOL_TASK, stack_k=2, action_codec="dpad_noop", max_steps=40, cpu_threads=1, seed=9)
    fresh.load_state_dict(state)
    for name, arr in env.cache.snapshot.arrays.items():
        assert np.array_equal(arr.numpy()[rows.numpy()], fresh.cache.snapshot.arrays[name].numpy()[rows.numpy()]), name
    assert torch.equal(env.cache.stack[rows], fresh.cache.stack[rows])
    for name, column in env.cache.columns.items():
        assert torch.equal(column[rows], fresh.cache.columns[name][rows]), name
    # saved again as loaded: the same bytes (entries stay packed against the reference they came with)
    again = fresh.state_dict()["features"]["pool"]
    assert torch.equal(again["blob"], state["features"]["pool"]["blob"])
    expanded = type(pool).expand_state(state["features"]["pool"])
    assert torch.equal(expanded["machines"]["wram"], torch.from_numpy(
        env.cache.snapshot.arrays["wram"].numpy()[rows.numpy()]))


# ---------------------------------------------------------------------------------------------- the caps
def _module_args(max_mb: float, num_envs: int = 8) -> dict:
    task = {**POOL_TASK, "base": "orchard/level1", "pool": {**POOL_TASK["pool"], "max_mb": max_mb}}
    return {"env": {"class_path": "gbx_lightning.envs.GameBoyEnv",
                    "init_args": {"task": task, "stack_k": 1, "action_codec": "dpad_noop"}}, "num_envs": num_envs}


def test_a_pool_that_cannot_fit_under_the_checkpoint_cap_is_refused_naming_both():
    """stack_k 1: 56,521 bytes a state, 74 in 4 MB; a full pool packs to at most its entries stored as they are plus
    offsets and columns (4.0 MB) beside 8 envs' machines and stacks (0.4 MB): over a 4 MB cap, under a 5 MB one.
    The numbers the line offers agree: a cap of 5 passes, and so does max_mb 3.4 under the cap of 4."""
    from gbx_lightning.algos import PPOModule

    with pytest.raises(ConfigError) as err:
        _check_env_state_cap(PPOModule, _module_args(4), 4)
    assert str(err.value) == (
        "env_state_max_mb (4) and task.pool.max_mb (4) disagree: a full pool of 74 states takes up to 4.0 MB of a "
        "checkpoint beside the 8 envs' own state (0.4 MB), over the cap, and a checkpoint past the cap leaves the "
        "whole env state out; raise --env_state_max_mb to 5 or lower task.pool.max_mb to 3.4")
    _check_env_state_cap(PPOModule, _module_args(4), 5)
    _check_env_state_cap(PPOModule, _module_args(3.4), 4)
    _check_env_state_cap(PPOModule, {**_module_args(4), "env": {**_module_args(4)["env"], "init_args": {
        "task": "orchard/level1"}}}, 0.5)   # no pool: the cap is the checkpoint's alone (left out, and said)


# ---------------------------------------------------------------------------------------------- saying it
def test_the_note_names_what_a_resume_loses():
    plan = {"saved": False, "bytes": 276_773_616, "max_bytes": 256 << 20,
            "parts": [["every env's machine and frame stack", 5_324_288], ["the state pool (4,623 states)", 270_000_000],
                      ["the milestone trackers", 4096]]}
    assert env_state_note(plan, "checkpoint at optimizer step 96") == (
        "checkpoint at optimizer step 96: the env state (264.0 MB) is over --env_state_max_mb 256: this and later "
        "checkpoints leave it out, and a resume from one restarts every env from the task's start states, losing "
        "every env's machine and frame stack 5.1 MB; the state pool (4,623 states) 257.5 MB; the milestone trackers "
        "4.0 KB (the reward items' running statistics are kept); --env_state_max_mb 264 or more keeps it")
    assert env_state_note(plan, "resuming").startswith(
        "resuming from a checkpoint without the env state (264.0 MB was over --env_state_max_mb 256): every env "
        "restarts from the task's start states, losing every env's machine")


def test_the_statistics_kept_without_the_envs_load_without_blaming_the_reward_list():
    """A checkpoint that left the envs out keeps only return_norm's statistic: loading it warns of nothing (the
    explore bitsets and baselines are lost by design, said once by the module); a list that really lost an item with
    a statistic still warns, naming the item."""
    spec = [{"name": "step_cost", "cost": -0.01}, {"name": "explore", "fields": [0xC107, 0xC108]},
            {"name": "ram_bits", "field": 0xC103}, {"name": "return_norm"}]
    pipe = build_reward_pipeline(spec, 2, torch.device("cpu"), {})
    kept = pipe.state_dict(per_env=False)
    assert sorted(kept) == ["3:return_norm", "per_env"]
    fresh = build_reward_pipeline(spec, 2, torch.device("cpu"), {})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fresh.load_state_dict(kept)
    assert torch.equal(fresh.items[3][1].count, pipe.items[3][1].count)
    with pytest.warns(UserWarning, match=r"reward item 3:return_norm: no state in the checkpoint \(the reward list "
                                         r"changed\?\)"):
        fresh.load_state_dict({"per_env": False})


TINY = """
seed_everything: 5
trainer: {max_steps: 4, accelerator: cpu, devices: 1, val_check_interval: 100, check_val_every_n_epoch: null}
model:
  class_path: gbx_lightning.algos.A2CModule
  init_args:
    env:
      class_path: gbx_lightning.envs.GameBoyEnv
      init_args:
        task: {base: orchard/level1, start: {variants: 1}, reward: [{name: step_cost},
               {name: explore, fields: [player_y, player_x]}, {name: return_norm}]}
        stack_k: 1
        action_codec: dpad_noop
        max_steps: 6
        cpu_threads: 1
    num_envs: 2
    policy: {class_path: gbx_lightning.models.PixelCNNPolicy, init_args: {channels: [4, 8], hidden: 16}}
    update_every: 2
    eval_episodes: 2
checkpoint_every: 2
progress_refresh: 0
image_every: 0
"""


def test_a_checkpoint_without_the_env_state_is_said_once_and_again_on_resume(tmp_path, capsys):
    """Under a 0.05 MB cap (2 envs' state is ~0.1 MB) the first checkpoint says, in one line, that the env state is
    left out and what a resume loses; the second says nothing more; the resume says it once more, in one line, and
    no reward item blames the reward list."""
    from gbx_lightning.cli import main

    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(TINY)
    runs = tmp_path / "runs"
    assert main(["fit", "--config", str(cfg), "--runs_dir", str(runs), "--env_state_max_mb", "0.05"]) == 0
    err = capsys.readouterr().err.splitlines()
    said = [line for line in err if "is over --env_state_max_mb 0.05" in line]
    assert len(said) == 1 and said[0].startswith("checkpoint at optimizer step 2: the env state (")
    assert "losing every env's machine and frame stack" in said[0] and "the reward items' per-env state" in said[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["fit", "--config", str(cfg), "--runs_dir", str(runs), "--env_state_max_mb", "0.05",
                     "--ckpt_path", "last", "--trainer.max_steps", "6"]) == 0
    err = capsys.readouterr().err.splitlines()
    resumed = [line for line in err if line.startswith("resuming from a checkpoint without the env state")]
    assert len(resumed) == 1 and "losing every env's machine and frame stack" in resumed[0]
    assert not any("reward list changed" in str(w.message) for w in caught)
    assert not any("reward list changed" in line for line in err)
