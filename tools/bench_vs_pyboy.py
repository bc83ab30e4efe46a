"""The stack users run today against ours: the same CleanRL-style PPO loop (examples/cleanrl_ppo.py)
through gymnasium's vector API, on PyBoy behind an AsyncVectorEnv (one process per PyBoy) and on our
GameBoyEnv, in one run; env steps/s of both and the ratio.

    python tools/bench_vs_pyboy.py [--pyboy-envs 2] [--envs 32] [--steps 20000] [--repeats 2]

Same task on both sides: the built-in game orchard, level 1, started through its level-select
screen (PyBoy plays the select inputs after its boot ROM and keeps a savestate of the level start;
ours uses GameBoyEnv's start-state cache), 24-frame steps with the D-pad held 8 frames, the last
frame rendered, the 72x80 observation (every other pixel, 4 shades), the same goal/fail banner
templates and reward formula (computed with numpy on the PyBoy side), a 50-step time limit, the
same network and PPO settings. By default PyBoy runs one env per core (2 here: more processes than
cores only add switching), ours 32 envs; both are settable. Repeats alternate the two sides. The
figure is the whole loop's env steps/s (acting, env, update), as a user would see it.
"""
from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "examples"))

BUTTONS = (None, "right", "left", "up", "down")     # the dpad_noop codec
GREYS = (0xFF, 0xAA, 0x55, 0x00)


def _pyboy_env_factory(rom_path: str, frames_per_step: int = 24, release_after: int = 8, max_steps: int = 50):
    """A gymnasium.Env over one PyBoy playing orchard level 1 (built in the worker process)."""

    def make():
        import logging
        import warnings

        import gymnasium as gym
        from gymnasium import spaces

        from gbx_lightning.envs.goal import load_goal
        from gbx_lightning.roms import ROM_DIR, orchard

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from pyboy import PyBoy
        logging.getLogger("pyboy").setLevel(logging.ERROR)

        class PyBoyOrchard(gym.Env):
            metadata = {"render_modes": []}

            def __init__(self):
                self.pb = PyBoy(rom_path, window="null", sound_emulated=False, cgb=False, log_level="ERROR",
                                color_palette=(0xFFFFFF, 0xAAAAAA, 0x555555, 0x000000))
                self.pb.set_emulation_speed(0)
                self.lut = np.zeros(256, np.uint8)
                for shade, grey in enumerate(GREYS):
                    self.lut[grey] = shade
                mem = self.pb.memory
                # hold SELECT through the boot ROM until the level select opens, then START: level 1
                self.pb.button_press("select")
                while mem[orchard.GAME_STATE] != orchard.STATE_SELECT:
                    self.pb.tick(1, False, False)
                self.pb.button_release("select")
                self.pb.tick(16, False, False)
                self.pb.button_press("start")
                self.pb.tick(4, False, False)
                self.pb.button_release("start")
                while mem[orchard.GAME_STATE] != orchard.STATE_PLAY:
                    self.pb.tick(1, False, False)
                self.pb.tick(2, True, False)
                self.start = io.BytesIO()
                self.pb.save_state(self.start)
                self.goal, self.fail = (load_goal(ROM_DIR / f"orchard_{n}.png") for n in ("clear", "gameover"))
                self.observation_space = spaces.Box(0, 3, (1, 72, 80), np.uint8)
                self.action_space = spaces.Discrete(len(BUTTONS))

            def _obs(self):
                red = np.asarray(self.pb.screen.ndarray)[::2, ::2, 0]
                return self.lut[red][None]

            def _dist(self, frame, template):
                w = template.weights
                return float((np.abs(frame.astype(np.int16) - template.image) * w).sum() / (3 * w.sum()))

            def reset(self, *, seed=None, options=None):
                super().reset(seed=seed)
                self.start.seek(0)
                self.pb.load_state(self.start)
                self.t = 0
                obs = self._obs()
                self.prev = self._dist(obs[0], self.goal)
                return obs, {}

            def step(self, action):
                name = BUTTONS[int(action)]
                if name:
                    self.pb.button_press(name)
                self.pb.tick(release_after, False, False)
                if name:
                    self.pb.button_release(name)
                self.pb.tick(frames_per_step - release_after - 1, False, False)
                self.pb.tick(1, True, False)
                obs = self._obs()
                dist = self._dist(obs[0], self.goal)
                success = dist < self.goal.reward["tau"]
                failed = (not success) and self._dist(obs[0], self.fail) < self.fail.reward["tau"]
                r = self.goal.reward
                reward = r["step_cost"] + r["alpha"] * (self.prev - dist) + r["goal_bonus"] * success - 1.0 * failed
                self.prev, self.t = dist, self.t + 1
                truncated = self.t >= max_steps and not (success or failed)
                return obs, reward, success or failed, truncated, {"success": success}

        return PyBoyOrchard()

    return make


class _EpisodeInfo:
    """Adds what our adapter reports (info["episode"], info["final_obs"]) to a plain AsyncVectorEnv."""

    def __init__(self, envs):
        self.envs, self.num_envs = envs, envs.num_envs
        self.single_observation_space, self.single_action_space = envs.single_observation_space, \
            envs.single_action_space
        self.ret = np.zeros(self.num_envs)
        self.len = np.zeros(self.num_envs, np.int64)

    def reset(self, **kw):
        self.ret[:], self.len[:] = 0, 0
        return self.envs.reset(**kw)

    def step(self, actions):
        obs, reward, term, trunc, info = self.envs.step(actions)
        self.ret += reward
        self.len += 1
        done = term | trunc
        info["episode"] = {"r": np.where(done, self.ret, 0.0), "l": np.where(done, self.len, 0)}
        info["_episode"] = done
        final = info.get("final_obs")
        dense = obs.copy()
        if final is not None:
            for i in np.nonzero(done)[0]:
                dense[i] = final[i]
        info["final_obs"] = dense
        info["success"] = np.array([bool(x) for x in info.get("success", np.zeros(self.num_envs))])
        if "final_info" in info and "success" in info["final_info"]:
            info["success"] = np.where(done, info["final_info"]["success"], False)
        self.ret[done], self.len[done] = 0, 0
        return obs, reward, term, trunc, info

    def close(self):
        self.envs.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pyboy-envs", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--envs", type=int, default=32)
    ap.add_argument("--steps", type=int, default=20_000, help="env steps per timed run")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)

    import gymnasium as gym
    import torch
    import warp as wp
    from gymnasium.vector import AsyncVectorEnv, AutoresetMode

    import gbx_lightning.envs.gym  # noqa: F401
    from cleanrl_ppo import Args, run
    from gbx_lightning.roms import build_rom

    wp.config.quiet = True
    wp.config.log_level = wp.LOG_WARNING
    torch.set_num_threads(1)
    rom_path = str(Path(os.environ.get("TMPDIR", "/tmp")) / "gbx_orchard_bench.gb")
    Path(rom_path).write_bytes(build_rom("orchard"))

    def ours():
        return gym.make_vec("gbx_lightning/GameBoy-v0", num_envs=args.envs, vectorization_mode="vector_entry_point",
                            task="orchard/level1", stack_k=1, action_codec="dpad_noop", max_steps=50)

    def pyboy():
        return _EpisodeInfo(AsyncVectorEnv([_pyboy_env_factory(rom_path)] * args.pyboy_envs,
                                           autoreset_mode=AutoresetMode.SAME_STEP))

    rates = {"pyboy": [], "ours": []}
    for r in range(args.repeats):
        for name in (("pyboy", "ours") if r % 2 == 0 else ("ours", "pyboy")):
            envs = (pyboy if name == "pyboy" else ours)()
            t = time.perf_counter()
            hist = run(envs, Args(total_steps=args.steps, seed=r), log=None)
            sps = hist[-1]["env_steps"] / (time.perf_counter() - t)
            envs.close()
            rates[name].append(sps)
            n = args.pyboy_envs if name == "pyboy" else args.envs
            print(f"repeat {r} {name:5s} ({n} envs): {sps:7.0f} env steps/s (PPO loop, whole run)", flush=True)
    ratio = statistics.median(o / p for o, p in zip(rates["ours"], rates["pyboy"]))
    print(f"PPO loop env steps/s: PyBoy + AsyncVectorEnv ({args.pyboy_envs} processes) "
          f"{statistics.median(rates['pyboy']):.0f}, gbx_lightning GameBoyEnv ({args.envs} envs) "
          f"{statistics.median(rates['ours']):.0f}: ratio {ratio:.2f}x (median of {args.repeats} paired repeats)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
