"""Structured observations (envs/features/observations.py, GameBoyEnv's obs; models.PixelVectorPolicy) with known answers
on orchard: the RAM fields in the data plane are the bytes read_ram reads; the visited grid on level 1's scripted
route marks exactly the tiles the route has stood on (positions from the game's rules), the final observation of
the step that clears the level included; the frames are the pixels-only env's; exact resume; one-line refusals."""

import io

import pytest
import torch

from gbx_lightning.cli import main
from gbx_lightning.envs import GameBoyEnv
from gbx_lightning.envs.base import OptionError
from gbx_lightning.envs.features.observations import nearby_grid
from gbx_lightning.models import PixelVectorLSTMPolicy, PixelVectorPolicy

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

NOOP, R, L, U, D = range(5)   # the dpad_noop codec
EXPLORE = {"name": "explore", "fields": ["player_y", "player_x"], "weight": 0.01}
# Level 1 (tests/test_ram_rewards.py): the player starts on tile (col 10, row 7), pixels (x, y) = 8 * tile; an
# unblocked action moves 2 tiles (16 pixels). The route's positions after each step, (y, x) in pixels:
LEVEL1_ROUTE = [U, D, D, U, L, L, R, R, R]
START = (56, 80)
POSITIONS = [(40, 80), (56, 80), (72, 80), (56, 80), (56, 64), (56, 56), (56, 72), (56, 88), (56, 104)]
# (the 6th L is stopped by the wall at column 7; the 9th step eats the last seed: LEVEL CLEAR ends the episode)


def _env(n=1, obs=None, task="orchard/level1", reward=(EXPLORE,), **kw):
    spec = {"base": task, "reward": [{"name": "step_cost"}, *reward]}
    return GameBoyEnv(n, task=spec, action_codec="dpad_noop", cpu_threads=1, obs=obs, **kw)


def _vector(obs, length):
    return obs[:, 0].reshape(obs.shape[0], -1)[:, :length]


def _grid(visited, here, radius, stride):
    """The expected grid, by hand: 255 where (y + dy * stride, x + dx * stride) was stood on this episode."""
    y, x = here
    return [255 if (y + dy * stride, x + dx * stride) in visited else 0
            for dy in range(-radius, radius + 1) for dx in range(-radius, radius + 1)]


def test_the_visited_grid_marks_exactly_the_tiles_of_the_scripted_route():
    """Radius 2, stride 16 (one move): after every step of level 1's route the grid around the player is 255 on
    the positions stood on so far (the start included) and 0 elsewhere; the step that clears the level shows it
    in final_obs, and the next episode's first observation only its start (the middle)."""
    radius, stride = 2, 16
    env = _env(obs={"ram": ["player_y", "player_x"], "visited": {"radius": radius, "stride": stride}})
    assert env.obs_shape == (5, 72, 80) and env.obs_vector == 2 + 25
    obs = env.reset(seed=0)
    assert _vector(obs, 27)[0].tolist() == [*START, *_grid({START}, START, radius, stride)]
    visited = {START}
    for t, (action, here) in enumerate(zip(LEVEL1_ROUTE, POSITIONS)):
        obs, _, terminated, truncated, info = env.step(torch.tensor([action], dtype=torch.int32))
        visited.add(here)
        expected = [*here, *_grid(visited, here, radius, stride)]
        assert _vector(info["final_obs"], 27)[0].tolist() == expected, f"step {t + 1}"
        if t + 1 < len(LEVEL1_ROUTE):
            assert not terminated.any() and torch.equal(obs, info["final_obs"])
    assert terminated.tolist() == [True]
    # the grid by hand at the end: (56, 72) and (56, 88) are one move left, (56, 104) - 32 = (56, 72) two
    assert _grid(visited, POSITIONS[-1], radius, stride)[10:15] == [255, 255, 255, 0, 0]
    assert _vector(obs, 27)[0].tolist() == [*START, *_grid({START}, START, radius, stride)]


def test_ram_fields_in_the_data_plane_are_the_bytes_read_ram_reads():
    """Level 3, 3 envs, random actions (beetles, seeds, deaths): each step's data plane holds player_y, player_x,
    seeds_left (one byte each), frame_count (2 bytes, little endian), score (2 BCD bytes: its value in binary,
    little endian) and then zeros; the frames behind it are the pixels-only env's, step for step."""
    fields = ["player_y", "player_x", "seeds_left", "frame_count", "score"]
    with_ram = _env(3, obs={"ram": fields}, task="orchard/level3", reward=(), max_steps=12)
    pixels = _env(3, task="orchard/level3", reward=(), max_steps=12)
    assert with_ram.obs_vector == 7 and with_ram.obs_shape == (5, 72, 80) and pixels.obs_shape == (4, 72, 80)
    gen = torch.Generator().manual_seed(3)
    obs, plain = with_ram.reset(seed=1), pixels.reset(seed=1)
    scores = set()
    for t in range(30):
        ram = with_ram.read_ram(0xC100, 0x20).long()
        y, x, left, fc_lo, fc_hi, s_lo, s_hi = (ram[:, i] for i in (8, 7, 6, 11, 12, 4, 5))
        score = 10 * (s_lo >> 4) + (s_lo & 15) + 100 * (10 * (s_hi >> 4) + (s_hi & 15))
        scores.update(score.tolist())
        expected = torch.stack([y, x, left, fc_lo, fc_hi, score & 255, score >> 8], 1)
        assert torch.equal(_vector(obs, 7).long(), expected), f"step {t}"
        assert not obs[:, 0].reshape(3, -1)[:, 7:].any()
        assert torch.equal(obs[:, 1:], plain)
        actions = torch.randint(0, 5, (3,), generator=gen, dtype=torch.int32)
        obs, reward, terminated, truncated, info = with_ram.step(actions)
        plain, plain_reward, _, _, plain_info = pixels.step(actions)
        assert torch.equal(reward, plain_reward) and torch.equal(info["final_obs"][:, 1:], plain_info["final_obs"])
    assert max(scores) > 0       # a seed was eaten: the BCD score was read nonzero


def test_plain_fields_are_gathered_in_one_read_as_the_bytes_in_order():
    """Fields whose numbers' bytes are their RAM bytes (one byte, or binary little endian; strided counts included)
    are read with one gather: player_y, player_x, frame_count (2 bytes) and the 4 beetles' x (stride 4) give
    exactly those bytes in that order, on level 3's random play; the BCD score above takes the per-field path."""
    env = _env(3, obs={"ram": ["player_y", "player_x", "frame_count", "hazard_x"]}, task="orchard/level3", reward=(),
               max_steps=12)
    assert env.obs_vector == 8 and env.feature("obs").data.raw is not None
    bcd = _env(1, obs={"ram": ["player_y", "score"]}, task="orchard/level3", reward=())
    bcd.reset(seed=0)
    assert bcd.feature("obs").data.raw is None
    gen = torch.Generator().manual_seed(4)
    obs = env.reset(seed=2)
    for t in range(20):
        ram = env.read_ram(0xC100, 0x30)
        expected = ram[:, [8, 7, 11, 12, 0x20, 0x24, 0x28, 0x2C]]
        assert torch.equal(_vector(obs, 8), expected), f"step {t}"
        obs, *_ = env.step(torch.randint(0, 5, (3,), generator=gen, dtype=torch.int32))


def test_a_restored_env_observes_and_continues_as_the_saved_one():
    """Level 2, 4 envs, episodes of 7 steps: after a state_dict round trip (through torch.save) the new env's
    observe() is the saved env's observation, and the next 20 steps give the same observations and rewards; the
    data plane is no env state (the same keys as a pixels-only env's checkpoint)."""
    obs_spec = {"ram": ["player_y", "player_x", "score"], "visited": {"radius": 3, "stride": 8}}
    gen = torch.Generator().manual_seed(7)
    actions = [torch.randint(0, 5, (4,), generator=gen, dtype=torch.int32) for _ in range(32)]
    first = _env(4, obs=obs_spec, task="orchard/level2", max_steps=7)
    for a in actions[:12]:
        first.step(a)
    buffer = io.BytesIO()
    torch.save(first.state_dict(), buffer)
    before = first.observe()
    after = [first.step(a) for a in actions[12:]]
    second = _env(4, obs=obs_spec, task="orchard/level2", max_steps=7)
    buffer.seek(0)
    second.load_state_dict(torch.load(buffer, weights_only=True))
    assert torch.equal(second.observe(), before)
    for (o1, r1, te1, tr1, i1), a in zip(after, actions[12:]):
        o2, r2, te2, tr2, i2 = second.step(a)
        assert torch.equal(o1, o2) and torch.equal(r1, r2) and torch.equal(i1["final_obs"], i2["final_obs"])
    assert any(bool(te.any() or tr.any()) for _, _, te, tr, _ in after)   # episodes ended in between
    pixels = _env(4, task="orchard/level2", max_steps=7)
    assert sorted(pixels.state_dict()) == sorted(second.state_dict())


def test_nearby_grid_by_hand():
    """Radius 1, stride 8, the player at (y, x) = (16, 24): a thing 8 up and 4 left is in the cell above (-4 rounds
    half up to 0), one 14 down is 2 cells down (outside); two things in one cell OR their values; a thing that is
    not live is not drawn; without values a cell is 255; an offset of -12 rounds to -1 cell, -13 to -2."""
    y, x = torch.tensor([16, 16]), torch.tensor([24, 24])
    things_y = torch.tensor([[8, 30, 16, 16], [4, 3, 16, 16]])
    things_x = torch.tensor([[20, 28, 32, 35], [24, 24, 24, 24]])
    value = torch.tensor([[1, 2, 4, 8], [1, 2, 4, 8]])
    grid = nearby_grid(things_y, things_x, y, x, 1, 8, value)
    assert grid[0].view(3, 3).tolist() == [[0, 0x81, 0], [0, 0, 0x8C], [0, 0, 0]]
    assert grid[1].view(3, 3).tolist() == [[0, 0x81, 0], [0, 0x84 | 0x88, 0], [0, 0, 0]]   # y 3: -13, outside
    live = torch.tensor([[True, True, False, True], [True, True, True, True]])
    assert nearby_grid(things_y, things_x, y, x, 1, 8, value, live)[0].view(3, 3)[1].tolist() == [0, 0, 0x88]
    assert nearby_grid(things_y, things_x, y, x, 1, 8)[0].view(3, 3).tolist() == [[0, 255, 0], [0, 0, 255], [0, 0, 0]]


def test_the_nearby_grid_is_where_the_live_beetles_are_from_the_player():
    """Level 5 (3 beetles in 4 slots), 4 envs, random actions: every observation's nearby grid (radius 15,
    stride 8, the beetles' directions as values, num_hazards as count) is, cell by cell, what a loop over the
    envs and the live beetles of the RAM read_ram reads gives; beetles are seen, the unused fourth slot never."""
    near = {"things": ["hazard_y", "hazard_x"], "around": ["player_y", "player_x"], "radius": 15, "stride": 8,
            "value": "hazard_dir", "count": "num_hazards"}
    env = _env(4, obs={"ram": ["player_y"], "nearby": near}, task="orchard/level5", reward=(), max_steps=40,
               frames_per_step=8, release_after_frames=8)
    assert env.obs_vector == 1 + 31 * 31
    gen = torch.Generator().manual_seed(5)
    obs, seen = env.reset(seed=2), 0
    for t in range(60):
        ram = env.read_ram(0xC100, 0x30).long().tolist()
        for i, r in enumerate(ram):
            expected = [0] * (31 * 31)
            for k in range(r[0x14]):
                hx, hy, hd = r[0x20 + 4 * k: 0x23 + 4 * k]
                cy, cx = (hy - r[8] + 4) // 8, (hx - r[7] + 4) // 8
                if abs(cy) <= 15 and abs(cx) <= 15:
                    expected[(cy + 15) * 31 + cx + 15] |= 0x80 | hd
            assert r[0x14] == 3 and _vector(obs, 1 + 31 * 31)[i, 1:].tolist() == expected, f"step {t}, env {i}"
            seen += sum(v != 0 for v in expected)
        obs, *_ = env.step(torch.randint(0, 5, (4,), generator=gen, dtype=torch.int32))
    assert seen > 4 * 60      # more than one beetle per observation on average


def test_the_nearby_grid_leaves_out_empty_slots():
    """hamlet's village (stage 3's start: three villagers, kinds 3, 5, 6, in slots 1-3 of 7; slots 4-7 empty, kind 0
    at (0, 0)), 2 envs, random moves (one walks indoors, where the table changes): with ``empty_value: 0`` every
    grid (radius 15, stride 1: steps) is a loop over the filled slots of the RAM read_ram reads; an empty slot at
    (0, 0) is inside the radius at every step, so a grid that drew it would differ."""
    near = {"things": ["npc_y", "npc_x"], "around": ["y", "x"], "radius": 15, "stride": 1, "value": "npc_kind",
            "empty_value": 0}
    env = GameBoyEnv(2, task="hamlet/route", action_codec="dpad_noop", cpu_threads=1, max_steps=40,
                     obs={"ram": ["map"], "nearby": near})
    gen = torch.Generator().manual_seed(3)
    obs, drawn = env.reset(seed=1), 0
    for t in range(24):
        ram = env.read_ram(0xC200, 0x80).long().tolist()
        for i, r in enumerate(ram):
            expected, empty = [0] * (31 * 31), 0
            for k in range(1, 8):
                kind, x, y = r[0x10 * k: 0x10 * k + 3]
                cy, cx = y - r[2], x - r[1]
                if abs(cy) <= 15 and abs(cx) <= 15:
                    if kind == 0:
                        empty += 1
                    else:
                        expected[(cy + 15) * 31 + cx + 15] |= 0x80 | kind
            assert empty > 0 and _vector(obs, 1 + 31 * 31)[i, 1:].tolist() == expected, f"step {t}, env {i}"
            drawn += sum(v != 0 for v in expected)
        obs, *_ = env.step(torch.randint(0, 5, (2,), generator=gen, dtype=torch.int32))
    assert drawn > 2 * 24     # villagers seen


@pytest.mark.parametrize("obs, message", [
    ({"ram": ["nope"]}, "obs.ram[0] is not a field of the task's RAM map (orchard): 'nope'; fields: game_state, "),
    ({"visited": {"radius": 2}}, "obs.visited needs an explore item in the task's reward"),
    ({}, "obs adds nothing: give ram (a list of RAM map fields), visited or nearby, or obs: null for pixels only"),
    ({"nearby": {"things": ["hazard_y"], "around": ["player_y", "player_x"]}},
     "obs.nearby.things must be two RAM map fields, y then x, got ['hazard_y']"),
    ({"nearby": {"things": ["hazard_y", "player_x"], "around": ["player_y", "player_x"]}},
     "obs.nearby.things y and x must hold as many numbers: hazard_y has 4, player_x 1"),
    ({"nearby": {"things": ["hazard_y", "hazard_x"], "around": ["hazard_y", "hazard_x"]}},
     "obs.nearby.around must be one number each (the player's y and x), got 4 and 4"),
    ({"nearby": {"things": ["hazard_y", "hazard_x"], "around": ["player_y", "player_x"], "value": "facing"}},
     "obs.nearby.value must hold a number per thing (4), facing has 1"),
    ({"nearby": {"things": ["hazard_y", "hazard_x"], "around": ["player_y", "player_x"], "radius": 16}},
     "obs.nearby.radius must be an int in [0, 15], got 16"),
    ({"nearby": {"things": ["hazard_y", "hazard_x"], "around": ["player_y", "player_x"], "size": 3}},
     "obs.nearby.size is not a field of nearby; fields: things, around, radius, stride, value, count, empty_value"),
    ({"nearby": {"things": ["hazard_y", "hazard_x"], "around": ["player_y", "player_x"], "empty_value": 0}},
     "obs.nearby.empty_value needs value: the field whose number marks an empty slot"),
    ({"visited": {"radius": 16}}, "obs.visited.radius must be an int in [0, 15], got 16"),
    ({"visited": {"stride": 0}}, "obs.visited.stride must be an int >= 1, got 0"),
    ({"ram": ["maze"] * 12}, "obs needs 6144 bytes, more than the data plane's 5760 (72 x 80)"),
])
def test_bad_obs_is_a_one_line_error_naming_the_field(obs, message):
    reward = [] if obs.get("visited", {}).get("radius") == 2 else [EXPLORE]
    with pytest.raises(OptionError) as err:
        GameBoyEnv.check_options(task={"base": "orchard/level1", "reward": [{"name": "step_cost"}, *reward]},
                                 obs=obs)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_pixel_vector_policy_reads_the_vector_and_the_frames():
    """The vector's bytes change the output, bytes past vector_size do not; the frames do; a pixels-only
    observation (or no vector_size) is refused in one line."""
    torch.manual_seed(0)
    policy = PixelVectorPolicy((3, 72, 80), 5, vector_size=10)
    obs = torch.randint(0, 4, (2, 3, 72, 80), dtype=torch.uint8)
    obs[:, 0] = 0
    logits, value = policy(obs)
    assert logits.shape == (2, 5) and value.shape == (2,)
    past = obs.clone()
    past[:, 0, 5, :] = 200                       # bytes 400..479: past the vector
    assert torch.equal(policy(past)[0], logits)
    inside = obs.clone()
    inside[:, 0, 0, 3] = 200
    assert not torch.equal(policy(inside)[0], logits)
    frames = obs.clone()
    frames[:, 2] = 3 - frames[:, 2]
    assert not torch.equal(policy(frames)[0], logits)
    with pytest.raises(ValueError, match=r"^pixel_vector policy: needs an observation with a data plane"):
        PixelVectorPolicy((3, 72, 80), 5)


@pytest.mark.parametrize("cls", [PixelVectorPolicy, PixelVectorLSTMPolicy])
def test_vector_bits_feed_each_bytes_bits_beside_its_scaled_value(cls):
    """vector_bits: the vector MLP's input is the scaled bytes, then each byte's bits, least significant first
    (byte 2 = 0b11000101 = 197: 197 / 255 at input 2, bits 1,0,1,0,0,0,1,1 at inputs 10 + 16 .. 10 + 23)."""
    policy = cls((3, 72, 80), 5, vector_size=10, vector_bits=True)
    seen = []
    policy.vector_mlp[0].register_forward_hook(lambda mod, args, out: seen.append(args[0]))
    obs = torch.zeros((1, 3, 72, 80), dtype=torch.uint8)
    obs[0, 0, 0, 2] = 0b11000101
    obs[0, 0, 0, 9] = 255
    obs[0, 0, 0, 10] = 7                          # past the vector: not read
    policy.torso(obs) if cls is PixelVectorPolicy else policy.step(obs, policy.initial_state(1, obs.device),
                                                                    torch.ones(1, dtype=torch.bool))
    x = seen[0][0]
    assert policy.vector_mlp[0].in_features == 90 and x.shape == (90,)
    expected = torch.zeros(90)
    expected[2], expected[9] = 197 / 255, 1.0
    expected[10 + 16:10 + 24] = torch.tensor([1., 0, 1, 0, 0, 0, 1, 1])
    expected[10 + 72:10 + 80] = 1.0
    assert torch.allclose(x, expected)
    with pytest.raises(ValueError, match=r"^pixel_vector\S* policy: vector_bits must be true or false, got 1$"):
        cls((3, 72, 80), 5, vector_size=10, vector_bits=1)


def test_fit_from_yaml_with_obs_and_the_pixel_vector_policy(tmp_path, capsys):
    """From the command line: obs in the env's init_args, PixelVectorPolicy sized by the module (vector_size from
    the env); a pixels-only policy with obs is refused in one line naming model.policy."""
    config = str(__import__("pathlib").Path(__file__).resolve().parents[1] / "configs" / "ppo.yaml")
    task = "--model.env.task={base: orchard/level1, reward: [{name: step_cost}, {name: explore, fields: [player_y, " \
           "player_x], weight: 0.01}]}"
    obs = "--model.env.obs={ram: [player_y, player_x, seeds_left], visited: {radius: 2, stride: 16}}"
    small = ["--model.num_envs=4", "--model.rollout_steps=8", "--trainer.max_steps=16", "--model.eval_episodes=4",
             "--trainer.val_check_interval=1", "--runs_dir", str(tmp_path), "--progress_refresh=0"]
    code = main(["fit", "--config", config, task, obs, *small])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "config error: model.policy PixelCNNPolicy reads pixels only, but the env's observation carries 28 values "
        "beside them (model.env.init_args.obs): use gbx_lightning.models.PixelVectorPolicy, or obs: null")
    code = main(["fit", "--config", config, task, obs, "--model.policy=gbx_lightning.models.PixelVectorPolicy",
                 *small])
    assert code == 0
    (last,) = tmp_path.glob("ppo/version_*/checkpoints/last.ckpt")
    weights = torch.load(last, weights_only=False)["state_dict"]
    assert weights["policy.vector_mlp.0.weight"].shape == (64, 28)       # vector_size 3 + 25, from the env
    assert weights["policy.convs.0.weight"].shape[1] == 1                # stack_k frames: the data plane apart


def test_the_pixel_vector_lstm_reads_the_vector_and_remembers():
    """PixelVectorLSTMPolicy: the vector's bytes change the step's output (bytes past vector_size do not); acting
    step by step equals the unroll training replays; the state carries the earlier steps (a start zeroes it)."""
    torch.manual_seed(0)
    policy = PixelVectorLSTMPolicy((3, 72, 80), 5, vector_size=10, lstm_size=8)
    T, N = 4, 2
    obs = torch.randint(0, 4, (T, N, 3, 72, 80), dtype=torch.uint8)
    obs[:, :, 0] = 0
    obs[:, :, 0, 0, :10] = torch.randint(0, 256, (T, N, 10), dtype=torch.uint8)
    starts = torch.zeros(T, N, dtype=torch.bool)
    starts[2, 1] = True
    with torch.no_grad():
        logits, values, last = policy.unroll(obs, policy.initial_state(N), starts)
        state = policy.initial_state(N)
        for t in range(T):
            step_logits, step_values, state = policy.step(obs[t], state, starts[t])
            torch.testing.assert_close(step_logits, logits[t])
            torch.testing.assert_close(step_values, values[t])
        torch.testing.assert_close(state, last)
        first, _, _ = policy.step(obs[0], policy.initial_state(N))
        past, inside = obs[0].clone(), obs[0].clone()
        past[:, 0, 5, :] = 200                       # past the vector
        inside[:, 0, 0, 3] = 201
        assert torch.equal(policy.step(past, policy.initial_state(N))[0], first)
        assert not torch.equal(policy.step(inside, policy.initial_state(N))[0], first)
        fresh = policy.unroll(obs[2:, [1]], policy.initial_state(1), torch.zeros(2, 1, dtype=torch.bool))
        torch.testing.assert_close(values[2:, 1], fresh[1][:, 0])            # env 1 restarted at t=2
        assert not torch.allclose(values[2:, 0], policy.unroll(obs[2:, [0]], policy.initial_state(1),
                                                               starts[2:, [0]])[1][:, 0])   # env 0 remembers t<2
    with pytest.raises(ValueError, match=r"^pixel_vector_lstm policy: needs an observation with a data plane"):
        PixelVectorLSTMPolicy((3, 72, 80), 5)


def test_fit_with_obs_and_the_lstm(tmp_path):
    """From the command line: obs and PixelVectorLSTMPolicy (sized by the module) train and checkpoint."""
    config = str(__import__("pathlib").Path(__file__).resolve().parents[1] / "configs" / "ppo.yaml")
    task = "--model.env.task={base: orchard/level1, reward: [{name: step_cost}, {name: explore, fields: [player_y, " \
           "player_x], weight: 0.01}]}"
    obs = "--model.env.obs={ram: [player_y, player_x, seeds_left], visited: {radius: 1, stride: 16}}"
    code = main(["fit", "--config", config, task, obs, "--model.policy=gbx_lightning.models.PixelVectorLSTMPolicy",
                 "--model.policy.init_args.lstm_size=16", "--model.num_envs=4", "--model.rollout_steps=8",
                 "--trainer.max_steps=16", "--model.eval_episodes=4", "--trainer.val_check_interval=1",
                 "--runs_dir", str(tmp_path), "--progress_refresh=0"])
    assert code == 0
    (last,) = tmp_path.glob("ppo/version_*/checkpoints/last.ckpt")
    weights = torch.load(last, weights_only=False)["state_dict"]
    assert weights["policy.vector_mlp.0.weight"].shape == (64, 12)       # 3 fields + the 3 x 3 grid
    assert weights["policy.lstm.weight_hh_l0"].shape == (64, 16)         # 4 gates x 16
