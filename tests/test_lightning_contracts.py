"""What the trainer relies on from Lightning, pinned: a Lightning upgrade that changes one of these fails here
loudly instead of silently changing training."""

import json
from functools import partial

import pytest
import torch
from lightning.pytorch import Callback, Trainer
from lightning.pytorch.callbacks import LearningRateMonitor
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

from gbx_lightning.algos import A2CModule, PPOModule
from gbx_lightning.callbacks import TrainingLog, logger_metrics
from gbx_lightning.envs import ForagingEnv
from gbx_lightning.models import MLPPolicy

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

ENV_KWARGS = {"obs_mode": "ground_truth", "max_steps": 12, "grid_size": 8, "view_size": 5,
              "food_range": [2, 3], "poison_range": [1, 2], "start_energy": 3.0, "step_cost": 0.5}
COMMON = dict(env=partial(ForagingEnv, **ENV_KWARGS), num_envs=4, policy=partial(MLPPolicy, hidden=[16]), seed=3)


def _module(algo, **kw):
    if algo == "a2c":
        return A2CModule(update_every=3, **COMMON, **kw)
    return PPOModule(rollout_steps=3, epochs=2, minibatches=2, **COMMON, **kw)


def _fit(module, max_steps, callbacks=(), logger=False, progress_bar=False):
    torch.manual_seed(0)  # the policy's initial weights
    trainer = Trainer(max_steps=max_steps, accelerator="cpu", devices=1, logger=logger, enable_checkpointing=False,
                      enable_progress_bar=progress_bar, enable_model_summary=False, num_sanity_val_steps=0,
                      limit_val_batches=0, callbacks=list(callbacks), log_every_n_steps=1)
    trainer.fit(module)
    return trainer


class _Events(Callback):
    """The order of acting and updating: ("act", opt_steps) per rollout step, ("update", opt_steps) per batch."""

    def __init__(self):
        self.events, self.in_step = [], False

    def on_train_start(self, trainer, pl_module):
        policy, events = pl_module.policy, self.events
        forward = policy.forward

        def spy(obs):
            # acting: no grad, one row per env, outside training_step (which bootstraps V(s') of the last step)
            if not torch.is_grad_enabled() and obs.shape[0] == pl_module.hparams.num_envs and not self.in_step:
                events.append(("act", pl_module.opt_steps))
            return forward(obs)

        policy.forward = spy

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.events.append(("update", pl_module.opt_steps))
        self.in_step = True

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.in_step = False


@pytest.mark.parametrize("algo", ["a2c", "ppo"])
def test_every_batch_is_acted_with_the_just_updated_weights(algo):
    """Lightning fetches a batch from a loader with __len__ only when the previous training_step is done
    (no pre-fetch): every rollout is acted after the last update, with its weights."""
    module, spy = _module(algo), _Events()
    _fit(module, 8, [spy])
    per_batch, cycle = (3, 1) if algo == "a2c" else (3, 4)  # T acting steps and optimizer steps per batch
    expected = []
    for b in range(8 // cycle):
        expected += [("act", b * cycle)] * per_batch + [("update", b * cycle)]
    assert spy.events == expected


class _CountsHooks(Callback):
    def __init__(self):
        self.before_backward = self.before_step = 0

    def on_before_backward(self, trainer, pl_module, loss):
        self.before_backward += 1

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        self.before_step += 1


@pytest.mark.parametrize("algo", ["a2c", "ppo"])
def test_every_optimizer_step_goes_through_lightning(algo):
    """manual_backward and LightningOptimizer.step: callbacks see every backward and step, global_step counts them."""
    module, hooks = _module(algo), _CountsHooks()
    trainer = _fit(module, 8, [hooks])
    assert trainer.global_step == module.opt_steps == hooks.before_backward == hooks.before_step == 8


def test_ppo_anneal_is_a_scheduler_lightning_knows(tmp_path):
    """anneal_lr: LambdaLR(LinearAnneal) in configure_optimizers, stepped after each optimizer step:
    lr_k = lr * (1 - k / max_steps) for the k-th step, as LearningRateMonitor reports it."""
    module = _module("ppo", anneal_lr=True, lr=0.01)
    seen = []

    class _Lr(Callback):
        def on_before_optimizer_step(self, trainer, pl_module, optimizer):
            seen.append(optimizer.param_groups[0]["lr"])

    monitor = LearningRateMonitor(logging_interval="step")
    trainer = _fit(module, 8, [_Lr(), monitor], logger=CSVLogger(str(tmp_path), name="lr"))
    assert seen == pytest.approx([0.01 * (1 - k / 8) for k in range(8)])
    assert len(trainer.lr_scheduler_configs) == 1
    assert monitor.lrs["lr-Adam"] == pytest.approx([0.01, 0.01 * (1 - 4 / 8)])  # read before each batch (rollout)


def test_ppo_anneal_from_holds_the_rate_then_falls():
    """anneal_from 0.5 of 8 steps: lr for steps 0..4, then lr * (8 - k) / 4."""
    module = _module("ppo", anneal_lr=True, anneal_from=0.5, lr=0.01)
    seen = []

    class _Lr(Callback):
        def on_before_optimizer_step(self, trainer, pl_module, optimizer):
            seen.append(optimizer.param_groups[0]["lr"])

    _fit(module, 8, [_Lr()])
    assert seen == pytest.approx([0.01] * 5 + [0.0075, 0.005, 0.0025])


def test_loggers_get_the_jsonl_numbers_under_cleanrl_names(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    module = _module("ppo")
    log = TrainingLog(tmp_path / "train.jsonl", config={}, log_every=4)
    tb, csv = TensorBoardLogger(str(tmp_path), name="tb", version=""), CSVLogger(str(tmp_path), name="csv", version="")
    _fit(module, 12, [log], logger=[tb, csv])
    records = [json.loads(x) for x in (tmp_path / "train.jsonl").read_text().splitlines()][1:]
    assert [r["opt_steps"] for r in records] == [4, 8, 12]
    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    rows = [json.loads(json.dumps(r)) for r in __import__("csv").DictReader(open(tmp_path / "csv" / "metrics.csv"))]
    for jsonl_key, name in (("loss", "losses/loss"), ("loss_value", "losses/value_loss"),
                            ("approx_kl", "losses/approx_kl"), ("explained_variance", "losses/explained_variance"),
                            ("grad_norm", "losses/grad_norm"), ("lr", "charts/learning_rate"), ("sps", "charts/SPS"),
                            ("reward_mean", "charts/reward_mean"), ("opt_steps", "charts/opt_steps")):
        want = [(r["env_steps"], pytest.approx(r[jsonl_key], rel=1e-5)) for r in records]
        assert [(e.step, e.value) for e in acc.Scalars(name)] == want, name
        assert [(int(row["step"]), float(row[name])) for row in rows] == want, name


def test_logger_metrics_groups_names_and_drops_what_is_not_a_number():
    record = {"env_steps": 12, "episode_return_mean": 1.5, "episode_food_eaten_mean": 2.0, "loss_policy": -0.1,
              "success_rate": None, "explained_variance": float("nan"), "eval/success_rate": 0.5, "flag": True}
    assert logger_metrics(record) == {"charts/env_steps": 12.0, "charts/episodic_return": 1.5,
                                      "charts/episodic_food_eaten": 2.0, "losses/policy_loss": -0.1,
                                      "eval/success_rate": 0.5}


def test_progress_bar_redraws_every_refresh_rate_batches_and_at_the_end(tmp_path, monkeypatch):
    from lightning.pytorch.callbacks import RichProgressBar

    from gbx_lightning.callbacks import EnvStepsProgressBar

    drawn = []
    monkeypatch.setattr(RichProgressBar, "on_train_batch_end",
                        lambda self, trainer, pl_module, outputs, batch, batch_idx: drawn.append(batch_idx + 1))
    module = A2CModule(env=partial(ForagingEnv, **ENV_KWARGS), num_envs=2, policy=partial(MLPPolicy, hidden=[8]),
                       update_every=1, seed=0)
    log = TrainingLog(tmp_path / "train.jsonl", config={}, log_every=1)
    _fit(module, 7, [log, EnvStepsProgressBar(log, refresh_rate=3)], progress_bar=True)
    assert drawn == [3, 6, 7]
