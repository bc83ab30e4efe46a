"""``python -m gbx_lightning play --config CFG --ckpt_path last --out clip.gif``: watch an agent.

Loads the policy weights of a checkpoint into the configured module, plays ``episodes``
episodes one after another in a single env of the configured kind (the evaluation seed, then
the next ones), acting as evaluation does unless ``--greedy true|false`` says otherwise, and writes
every screen the agent saw as one animated GIF (pixel envs only).
"""
from __future__ import annotations

import os
import sys

import torch

from gbx_lightning.data import EvalEpisodes
from gbx_lightning.media import save_gif

__all__ = ["play"]


def play(module, device: torch.device, ckpt_path: str | None, out: str, episodes: int = 1,
         greedy: bool | None = None, max_steps: int = 10_000, scale: int = 2, delay_cs: int = 12) -> list[dict]:
    """Play and record; returns one summary dict per episode (return, length, success). ``greedy`` None acts as
    evaluation does (the module's ``eval_greedy``: sampling unless set), so the clip shows what the scores measure."""
    hp = module.hparams
    if greedy is None:
        greedy = bool(hp.eval_greedy)
    how = "greedily (argmax)" if greedy else "by sampling from the policy"
    print(f"play: acting {how}, " + ("as evaluation does" if greedy == bool(hp.eval_greedy) else
                                     f"not as evaluation does (model.eval_greedy: {str(hp.eval_greedy).lower()})"),
          file=sys.stderr)
    env = module.env_factory(1, device)
    module.build_policy(env)
    if ckpt_path is not None:
        ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=False)
        module.load_state_dict(ckpt["state_dict"])
    else:
        print("play: no --ckpt_path: playing the untrained (initial) policy", file=sys.stderr)
    module.policy.to(device).eval()
    frames, summaries = [], []
    for i in range(episodes):
        batch = next(iter(EvalEpisodes(env, module.policy, hp.eval_seed + i, greedy=greedy, max_steps=max_steps,
                                       check_every=1, record_clip=True)))
        if "clip" not in batch:
            raise ValueError(f"play: {type(env).__name__} has no pixel observations to record (uint8 [K, H, W])")
        frames.append(batch["clip"].cpu())
        summaries.append({"episode": i + 1, "return": float(batch["episode_return"][0]),
                          "length": int(batch["episode_length"][0]), "success": bool(batch["success"][0]),
                          "finished": bool(batch["finished"][0])})
    clip = torch.cat(frames).numpy()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    save_gif(out, clip, scale=scale, delay_cs=delay_cs)
    for s in summaries:
        state = "success" if s["success"] else ("ended" if s["finished"] else "unfinished")
        print(f"play: episode {s['episode']}: {state} after {s['length']} steps, return {s['return']:.3f}")
    print(f"play: wrote {out} ({len(clip)} frames)")
    return summaries
