"""The per-batch shortcuts that keep Lightning's overhead small change nothing a user can observe."""

import json

import pytest
import torch
from lightning.pytorch import Callback, Trainer
from lightning.pytorch.loggers import TensorBoardLogger

from gbx_lightning.callbacks import TrainingLog, write_scalars
from gbx_lightning.module import A2CModule, PPOModule

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

ENV_KWARGS = {"obs_mode": "ground_truth", "max_steps": 12, "grid_size": 8, "view_size": 5,
              "food_range": [2, 3], "poison_range": [1, 2], "start_energy": 3.0, "step_cost": 0.5}


class _CountsOptimizerSteps(Callback):
    """Overrides on_before_optimizer_step, so the module must take Lightning's optimizer path (hooks and all)."""

    def __init__(self):
        self.calls = 0

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        self.calls += 1


def _fit(module, max_steps, callbacks=(), progress_bar=False):
    torch.manual_seed(0)  # the policy's initial weights
    trainer = Trainer(max_steps=max_steps, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                      enable_progress_bar=progress_bar, enable_model_summary=False, num_sanity_val_steps=0,
                      limit_val_batches=0, callbacks=list(callbacks))
    trainer.fit(module)
    return trainer


@pytest.mark.parametrize("algo", ["a2c", "ppo"])
def test_direct_optimizer_steps_equal_lightnings_path(algo):
    """Without listeners for the backward/optimizer hooks the module calls torch directly; global_step still
    counts every optimizer step, and the weights are those Lightning's own path gives."""
    common = dict(env="foraging", env_kwargs=ENV_KWARGS, num_envs=4, policy="mlp", policy_kwargs={"hidden": [16]},
                  seed=3)

    def make():
        if algo == "a2c":
            return A2CModule(update_every=3, **common)
        return PPOModule(rollout_steps=3, epochs=2, minibatches=2, anneal_lr=True, **common)

    direct, hooked, counter = make(), make(), _CountsOptimizerSteps()
    t_direct = _fit(direct, 8)
    t_hooked = _fit(hooked, 8, [counter])
    assert direct._direct_steps and not hooked._direct_steps
    assert t_direct.global_step == direct.opt_steps == 8 == t_hooked.global_step == hooked.opt_steps
    assert counter.calls == 8  # the hooked path still calls the hook on every step
    for (name, a), b in zip(direct.policy.state_dict().items(), hooked.policy.state_dict().values()):
        torch.testing.assert_close(a, b, msg=name)


def test_write_scalars_reads_back_as_add_scalar_does(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from torch.utils.tensorboard import SummaryWriter

    one, per_key = SummaryWriter(str(tmp_path / "one")), SummaryWriter(str(tmp_path / "per_key"))
    records = [(12, {"loss": 0.5, "sps": 1000.0}), (24, {"loss": 0.25, "sps": 2000.0})]
    for step, scalars in records:
        write_scalars(one, scalars, step)
        for k, v in scalars.items():
            per_key.add_scalar(k, v, step)
    one.close()
    per_key.close()
    read = []
    for name in ("one", "per_key"):
        acc = EventAccumulator(str(tmp_path / name))
        acc.Reload()
        read.append({tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]})
    assert read[0] == read[1] == {"loss": [(12, 0.5), (24, 0.25)], "sps": [(12, 1000.0), (24, 2000.0)]}


def test_training_log_tensorboard_scalars_match_jsonl(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    module = A2CModule(env="foraging", env_kwargs=ENV_KWARGS, num_envs=4, policy="mlp", policy_kwargs={"hidden": [16]},
                       update_every=2, seed=1)
    log = TrainingLog(tmp_path / "train.jsonl", config={}, log_every=2)
    trainer = Trainer(max_steps=6, accelerator="cpu", devices=1, callbacks=[log], enable_checkpointing=False,
                      logger=TensorBoardLogger(str(tmp_path), name="tb", version=""), enable_progress_bar=False,
                      enable_model_summary=False, limit_val_batches=0)
    trainer.fit(module)
    records = [json.loads(x) for x in (tmp_path / "train.jsonl").read_text().splitlines()][1:]
    assert [r["opt_steps"] for r in records] == [2, 4, 6]
    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    for key in ("loss", "grad_norm", "reward_mean", "opt_steps", "sps"):
        assert [(e.step, e.value) for e in acc.Scalars(key)] == [
            (r["env_steps"], pytest.approx(r[key], rel=1e-5)) for r in records], key


def test_progress_bar_redraws_every_refresh_rate_batches_and_at_the_end(tmp_path, monkeypatch):
    from lightning.pytorch.callbacks import RichProgressBar

    from gbx_lightning.callbacks import EnvStepsProgressBar

    drawn = []
    monkeypatch.setattr(RichProgressBar, "on_train_batch_end",
                        lambda self, trainer, pl_module, outputs, batch, batch_idx: drawn.append(batch_idx + 1))
    module = A2CModule(env="foraging", env_kwargs=ENV_KWARGS, num_envs=2, policy="mlp", policy_kwargs={"hidden": [8]},
                       update_every=1, seed=0)
    log = TrainingLog(tmp_path / "train.jsonl", config={}, log_every=1)
    _fit(module, 7, [log, EnvStepsProgressBar(log, refresh_rate=3)], progress_bar=True)
    assert drawn == [3, 6, 7]
