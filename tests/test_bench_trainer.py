"""tools/bench_trainer.py's --config: the module it times is the config's own (module class, env options, learner
settings, policy), a variant changes only the policy's options, and list values survive the comma split."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import bench_trainer  # noqa: E402
from gbx_lightning.algos import A2CModule, PPOModule  # noqa: E402


def _args(config: str, **over) -> argparse.Namespace:
    base = dict(config=str(ROOT / "configs" / config), sizes=None, variants=["hidden=64"], base=None, num_envs=None,
                rollout_steps=None, update_every=None, epochs=4, minibatches=4, policy=None, policy_args={},
                stack_k=None, algo="a2c", torch_threads=1)
    return argparse.Namespace(**{**base, **over})


def test_items_split_outside_brackets():
    assert bench_trainer._split_items("channels=[8,16],hidden=128") == ["channels=[8,16]", "hidden=128"]
    assert bench_trainer._key_values("channels=[8,16],hidden=128,channels_last=true", "--variants") == \
        {"channels": [8, 16], "hidden": 128, "channels_last": True}
    assert bench_trainer._key_values("a={\"b\":1,\"c\":2},d=x", "--variants") == {"a": {"b": 1, "c": 2}, "d": "x"}


def test_config_module_is_the_configs_own():
    args = _args("orchard_l7_ppo.yaml", num_envs=2)
    bench_trainer.apply_config(args)
    assert (args.algo, args.num_envs, args.rollout_steps, args.epochs, args.minibatches) == ("ppo", 2, 32, 4, 4)
    assert args.policy == "PixelVectorPolicy"
    module = bench_trainer.build_module(bench_trainer._variant_args(args, "channels=[8,16],hidden=64"), seed=3)
    assert isinstance(module, PPOModule)
    hp = module.hparams
    assert (hp.gamma, hp.num_envs, hp.rollout_steps, hp.seed) == (0.995, 2, 32, 3)
    env = hp.env["init_args"]
    assert env["task"]["base"] == "orchard/level7" and env["frames_per_step"] == 8 and env["stack_k"] == 2
    assert hp.policy["class_path"].endswith("PixelVectorPolicy")
    assert hp.policy["init_args"] == {"vector_bits": True, "channels": [8, 16], "hidden": 64}
    baseline = bench_trainer.build_module(bench_trainer._variant_args(args, ""), seed=3)
    assert baseline.hparams.policy["init_args"] == {"vector_bits": True}


def test_config_a2c_and_refusals():
    args = _args("a2c.yaml")
    bench_trainer.apply_config(args)
    assert (args.algo, args.num_envs, args.update_every) == ("a2c", 32, 5) and \
        isinstance(bench_trainer.build_module(args, 0), A2CModule)
    with pytest.raises(SystemExit, match="policy=NAME does not combine with --config"):
        bench_trainer._variant_args(args, "policy=mlp")
    with pytest.raises(SystemExit, match="use it with --variants or --base"):
        bench_trainer.apply_config(_args("a2c.yaml", variants=None))
    with pytest.raises(SystemExit, match="--config and --sizes"):
        bench_trainer.apply_config(_args("a2c.yaml", sizes="your_game_ppo"))
    with pytest.raises(SystemExit, match="not a training config"):
        bench_trainer.apply_config(_args("does_not_exist.yaml"))
