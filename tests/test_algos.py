"""The algorithms' shared parts: one metric table and accumulator, log records that do not depend on the callbacks'
order, the shared arguments defined once and seen whole by LightningCLI."""

import inspect
import json
import re
from functools import partial

import pytest
import torch
from lightning.pytorch import Trainer
from lightning.pytorch.loggers import CSVLogger

from gbx_lightning.algos import A2CModule, PPOModule, REINFORCEModule, RLModule
from gbx_lightning.callbacks import TrainingLog, read_training_log
from gbx_lightning.envs import ForagingEnv
from gbx_lightning.cli import main
from gbx_lightning.metrics import LOGGER_NAMES, LossMetrics
from gbx_lightning.models import MLPPolicy
from gbx_lightning.safety import NonFiniteGuard, StopOnSignal

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

ENV_KWARGS = {"obs_mode": "ground_truth", "max_steps": 12, "grid_size": 8, "view_size": 5,
              "food_range": [2, 3], "poison_range": [1, 2], "start_energy": 3.0, "step_cost": 0.5}
COMMON = dict(env=partial(ForagingEnv, **ENV_KWARGS), num_envs=4, policy=partial(MLPPolicy, hidden=[16]), seed=3)
# the same in a config: env and policy by class_path
CONFIG = dict(env={"class_path": "gbx_lightning.envs.ForagingEnv", "init_args": ENV_KWARGS}, num_envs=4,
              policy={"class_path": "gbx_lightning.models.MLPPolicy", "init_args": {"hidden": [16]}})
WALL = {"wall_time_s", "sps", "time_env_s", "time_act_s", "time_update_s", "time_other_s"}


def _modules():
    return {"a2c": A2CModule(update_every=3, **COMMON),
            "ppo": PPOModule(rollout_steps=3, epochs=2, minibatches=2, **COMMON),
            "reinforce": REINFORCEModule(rollout_steps=12, accumulate=2, **COMMON)}


def _fit(module, max_steps, callbacks, logger=False):
    torch.manual_seed(0)
    trainer = Trainer(max_steps=max_steps, accelerator="cpu", devices=1, logger=logger, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
                      limit_val_batches=0, callbacks=callbacks)
    trainer.fit(module)
    return trainer


def _records(path):
    """The log without what differs between two runs anyway (wall clock, the run id)."""
    out = []
    for r in read_training_log(path):
        if "meta" in r:
            continue
        body = r.get("error") or r.get("stop")
        if body is not None:
            body.pop("wall_time_s", None)
        out.append({k: v for k, v in r.items() if k not in WALL})
    return out


# ---------------------------------------------------------------- one table of names
@pytest.mark.parametrize("algo", ["a2c", "ppo", "reinforce"])
def test_every_record_key_of_every_algorithm_has_a_logger_name(algo, tmp_path):
    """What REINFORCE's complete_fraction once missed: every key of a step record reaches the loggers."""
    module = _modules()[algo]
    _fit(module, 4, [TrainingLog(tmp_path / "train.jsonl", config={}, log_every=2)])
    steps = [r for r in read_training_log(tmp_path / "train.jsonl") if "loss" in r]
    assert steps
    for key in steps[0]:
        assert key in LOGGER_NAMES or re.fullmatch(r"episode_\w+_mean", key), key
    assert "complete_fraction" in steps[0] if algo == "reinforce" else "complete_fraction" not in steps[0]


def test_a_loss_term_without_a_row_in_the_table_is_an_error_at_its_first_step():
    metrics = LossMetrics()
    with pytest.raises(KeyError, match=r"\['my_term'\] have no row in gbx_lightning.metrics.METRICS"):
        metrics.add(1, {"loss": torch.tensor(1.0), "my_term": torch.tensor(2.0)}, torch.tensor(0.5))


def test_loss_metrics_means_leave_out_non_finite_values_and_resume_exactly():
    """Known answers: loss 1, 2, NaN, 4 -> mean 7/3; explained variance NaN throughout -> NaN (no values), not a
    failure; the first non-finite step of `loss` is 3. A state saved mid-interval (pending rows unfolded) and loaded
    gives the same sums as the uninterrupted accumulator, bit for bit."""
    def feed(m, steps):
        for step in steps:
            loss = [1.0, 2.0, float("nan"), 4.0][step - 1]
            m.add(step, {"loss": torch.tensor(loss), "explained_variance": torch.tensor(float("nan"))},
                  torch.tensor(0.1 * step))

    straight, first, second = LossMetrics(), LossMetrics(), LossMetrics()
    straight.fold_every = first.fold_every = second.fold_every = 3
    feed(straight, [1, 2, 3, 4])
    feed(first, [1, 2, 3, 4][:2])
    second.load_state_dict(first.state_dict(), torch.device("cpu"))
    feed(second, [3, 4])
    assert straight.names == second.names == ["loss", "explained_variance", "grad_norm"]
    assert straight.first_nonfinite_steps().tolist() == [3, LossMetrics.NEVER, LossMetrics.NEVER]
    a, b = straight.take(), second.take()
    assert torch.equal(a, b)
    means = straight.means(a)
    assert means[0].item() == pytest.approx(7 / 3) and means[1].isnan() and means[2].item() == pytest.approx(0.25)


def test_loss_metrics_load_a_checkpoint_of_the_module_before_them():
    """The earlier format (rows [S, K] of the loss dict's keys, sums and counts apart) resumes into the same read."""
    old = {"names": ["loss", "policy_loss"], "rows": torch.tensor([[1.0, 2.0, 0.5], [3.0, float("nan"), 1.5]]),
           "first_step": 7, "sums": torch.tensor([2.0, 2.0, 1.0]), "counts": torch.tensor([2, 2, 2]),
           "first_nonfinite": torch.tensor([LossMetrics.NEVER] * 3)}
    m = LossMetrics()
    m.load_state_dict(old, torch.device("cpu"))
    assert m.names == ["loss", "loss_policy", "grad_norm"]
    assert m.first_nonfinite_steps().tolist() == [LossMetrics.NEVER, 8, LossMetrics.NEVER]
    assert m.means(m.take()).tolist() == pytest.approx([6 / 4, 4 / 3, 3 / 4])


# ---------------------------------------------------------------- callbacks in any order
def _poison_step_4(monkeypatch):
    """A NaN reward in the 11th env step: A2C (update_every 3) optimizer step 4's loss."""
    from gbx_lightning.envs.foraging import ForagingEnv

    calls, env_step = [], ForagingEnv.step

    def step(self, actions):
        calls.append(1)
        obs, reward, *rest = env_step(self, actions)
        return (obs, reward * float("nan") if len(calls) == 11 else reward, *rest)

    monkeypatch.setattr(ForagingEnv, "step", step)


@pytest.mark.parametrize("log_every", [1, 2])
def test_reversing_the_callbacks_gives_the_same_logs_and_the_same_stop(tmp_path, monkeypatch, log_every):
    """TrainingLog, NonFiniteGuard and StopOnSignal in one order and in the reverse: the same JSONL and CSV
    records, and the guard stops both at optimizer step 4, where the loss went NaN, after that step's record."""
    from gbx_lightning.safety import NonFiniteError

    logs = {}
    for order in ("forward", "reverse"):
        monkeypatch.undo()
        _poison_step_4(monkeypatch)   # counting env steps from 0 again
        out = tmp_path / order
        callbacks = [TrainingLog(out / "train.jsonl", config={}, log_every=log_every), NonFiniteGuard(),
                     StopOnSignal()]
        if order == "reverse":
            callbacks.reverse()
        module = A2CModule(update_every=3, **COMMON)
        with pytest.raises(NonFiniteError):
            _fit(module, 8, callbacks, logger=CSVLogger(str(out), name="csv", version=""))
        assert module.opt_steps == 4
        logs[order] = (_records(out / "train.jsonl"), (out / "csv" / "metrics.csv").read_text())
    records, csv = logs["forward"]
    assert [r.get("opt_steps") for r in records[:-1]] == list(range(log_every, 5, log_every))
    assert records[-1]["error"]["nonfinite_opt_step"] == 4 and records[-1]["error"]["opt_steps"] == 4
    assert logs["reverse"][0] == records
    wall = {name for key, name in LOGGER_NAMES.items() if key in WALL}
    keep = lambda text: [{k: v for k, v in row.items() if k not in wall} for row in  # noqa: E731
                         __import__("csv").DictReader(text.splitlines())]
    assert keep(logs["reverse"][1]) == keep(csv) and keep(csv)


def test_a_guard_alone_still_stops_at_the_step_that_went_non_finite(monkeypatch):
    """Without a TrainingLog the module reads every optimizer step (log_every 1)."""
    from gbx_lightning.safety import NonFiniteError

    _poison_step_4(monkeypatch)
    module = A2CModule(update_every=3, **COMMON)
    with pytest.raises(NonFiniteError, match="at optimizer step 4"):
        _fit(module, 8, [NonFiniteGuard()])
    assert module.opt_steps == 4


# ---------------------------------------------------------------- the shared arguments, defined once
@pytest.mark.parametrize("cls", [A2CModule, PPOModule, REINFORCEModule])
def test_the_cli_sees_every_argument_of_every_algorithm(cls, tmp_path, capsys):
    """The shared arguments live in RLModule.__init__ only; LightningCLI follows an algorithm's **kwargs to them,
    with the algorithm's own defaults (lr) winning."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"model:\n  class_path: gbx_lightning.algos.{cls.__name__}\n  init_args: {json.dumps(CONFIG)}\n")
    with pytest.raises(SystemExit):
        main(["fit", "--config", str(cfg), "--print_config"])
    import yaml

    printed = yaml.safe_load(capsys.readouterr().out)["model"]["init_args"]
    shared = set(inspect.signature(RLModule.__init__).parameters) - {"self"}
    own = set(inspect.signature(cls.__init__).parameters) - {"self", "kwargs"}
    assert set(printed) == shared | own
    assert printed["lr"] == {A2CModule: 7e-4, PPOModule: 2.5e-4, REINFORCEModule: 1e-3}[cls]
    assert printed["env"]["class_path"] == "gbx_lightning.envs.ForagingEnv"
    assert printed["env"]["init_args"]["view_size"] == 5 and printed["policy"]["init_args"]["hidden"] == [16]
    assert printed["env_device"] == "auto" and printed["num_envs"] == 4


def test_an_algorithm_checks_its_own_arguments_after_the_shared_ones():
    from gbx_lightning.algos import ConfigError

    with pytest.raises(ConfigError, match=r"^gamma must be a number in \(0, 1\], got 1.5$"):
        PPOModule(gamma=1.5, epochs=0, **{k: v for k, v in COMMON.items()})
    with pytest.raises(ConfigError, match=r"^epochs must be an int >= 1, got 0$"):
        PPOModule(epochs=0, **COMMON)
    assert PPOModule(epochs=3, minibatches=2, **COMMON).opt_steps_per_batch == 6


# ---------------------------------------------------------------- adding an algorithm: one file and a config
NEW_ALGO = '''
import torch

from gbx_lightning.algos.base import RLModule
from gbx_lightning.algos.config import require_number


class OneStepPG(RLModule):
    """Policy gradient on the immediate reward: loss = -mean(r * log pi(a|s)) - entropy_coef * mean(H)."""

    rollout_field = "steps"

    def __init__(self, steps: int = 2, **kwargs):
        """
        Args:
            steps: T, env steps of all N envs per update.
            **kwargs: the arguments every algorithm takes.
        """
        super().__init__(**kwargs)

    @classmethod
    def check_args(cls, hp):
        require_number("steps", hp["steps"], low=1, integer=True)

    def training_step(self, batch, batch_idx):
        logprobs, entropy, values = self.policy.evaluate(batch["obs"].flatten(0, 1), batch["actions"].flatten())
        policy_loss = -(batch["rewards"].flatten() * logprobs).mean()
        loss = policy_loss - self.hparams.entropy_coef * entropy.mean() + 0.0 * values.sum()  # DDP: all params used
        self.step_optimizer({"loss": loss, "policy_loss": policy_loss.detach(), "entropy": entropy.mean().detach()})
'''


def test_a_new_algorithm_is_one_file_and_a_config(tmp_path, monkeypatch, capsys):
    """The recipe the README gives, followed: a file with an RLModule subclass, named by class_path in a config,
    trains through the CLI with the shared arguments, config errors and logs, no registration anywhere."""
    (tmp_path / "my_algo.py").write_text(NEW_ALGO)
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = tmp_path / "my_algo.yaml"
    init = {**CONFIG, "steps": 2, "eval_episodes": 2}
    cfg.write_text("seed_everything: 1\ntrainer: {max_steps: 3, accelerator: cpu, devices: 1, limit_val_batches: 0}\n"
                   f"model:\n  class_path: my_algo.OneStepPG\n  init_args: {json.dumps(init)}\n"
                   "progress_refresh: 0\nimage_every: 0\n")
    runs = tmp_path / "runs"
    assert main(["fit", "--config", str(cfg), "--runs_dir", str(runs), "--model.init_args.steps", "0"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == "config error: model.steps must be an int >= 1, got 0"
    assert main(["fit", "--config", str(cfg), "--runs_dir", str(runs)]) == 0
    steps = [r for r in read_training_log(runs / "my_algo" / "version_0" / "train.jsonl") if "loss" in r]
    assert [r["opt_steps"] for r in steps] == [1, 2, 3] and steps[-1]["env_steps"] == 3 * 2 * 4
    assert {"loss", "loss_policy", "entropy", "grad_norm", "lr"} <= steps[0].keys()


def test_the_progress_bar_shows_this_batchs_record_also_before_the_log(tmp_path, monkeypatch):
    """The bar first in the list: what it draws at a batch is that batch's record, not the one before."""
    from lightning.pytorch.callbacks import RichProgressBar

    from gbx_lightning.callbacks import EnvStepsProgressBar

    shown = []
    monkeypatch.setattr(RichProgressBar, "on_train_batch_end", lambda self, trainer, pl_module, *args: shown.append(
        (self.training_log.last_record["opt_steps"], pl_module.opt_steps)))
    log = TrainingLog(tmp_path / "train.jsonl", config={}, log_every=1)
    torch.manual_seed(0)
    Trainer(max_steps=3, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
            enable_model_summary=False, num_sanity_val_steps=0, limit_val_batches=0,
            callbacks=[EnvStepsProgressBar(log, refresh_rate=1), log]).fit(A2CModule(update_every=3, **COMMON))
    assert shown == [(1, 1), (2, 2), (3, 3)]
    assert [r["opt_steps"] for r in read_training_log(tmp_path / "train.jsonl") if "loss" in r] == [1, 2, 3]


# ---------------------------------------------------------------- env and policy: factories the parser makes
def test_the_cli_hands_the_module_factories_and_the_hparams_plain_data(tmp_path, monkeypatch):
    """The parser instantiates model.env/model.policy as factories (jsonargparse's partial of the class with the
    config's options): the module reads their class and options (``factory_parts``: pinned here, as its form is
    jsonargparse's), builds with num_envs/device itself, and keeps plain {class_path, init_args} in hparams."""
    from gbx_lightning.algos.build import factory_parts
    from gbx_lightning.cli import GbxTrainer

    built = []
    monkeypatch.setattr(GbxTrainer, "fit", lambda self, model, **kw: built.append(model))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"model:\n  class_path: gbx_lightning.algos.A2CModule\n  init_args: {json.dumps(CONFIG)}\n"
                   "progress_refresh: 0\n")
    assert main(["fit", "--config", str(cfg), "--runs_dir", str(tmp_path / "runs")]) == 0
    module = built[0]
    env_class, options = factory_parts(module.env_factory)
    assert env_class is ForagingEnv and options["view_size"] == 5 and options["obs_mode"] == "ground_truth"
    assert factory_parts(module.policy_factory) == (MLPPolicy, {"hidden": (16,)})
    assert module.hparams.env["class_path"] == "gbx_lightning.envs.ForagingEnv"
    assert module.hparams.env["init_args"]["view_size"] == 5
    env = module.env_factory(3, torch.device("cpu"))
    assert isinstance(env, ForagingEnv) and env.num_envs == 3 and env.view_size == 5
    json.dumps(dict(module.hparams))   # plain data: logs, checkpoints' hyper_parameters
    # a module built in Python from a class or a functools.partial: the same plain spelling
    direct = A2CModule(**COMMON)
    assert direct.hparams.env == {"class_path": "gbx_lightning.envs.foraging.ForagingEnv", "init_args": ENV_KWARGS}
    assert direct.hparams.policy == {"class_path": "gbx_lightning.models.MLPPolicy", "init_args": {"hidden": [16]}}


@pytest.mark.parametrize("recurrent", [False, True])
def test_bootstrap_runs_the_policy_on_the_ended_steps_and_the_last_and_takes_the_rest_from_acting(recurrent):
    """V(final_obs) of a rollout equals the policy run on every row (a recurrent one from its state after each step),
    but the policy sees only the last step's N rows and the rows where an episode ended: elsewhere final_obs[t] is
    obs[t + 1], whose value acting already computed. A row whose final_obs was changed (not the next obs) is run."""
    from gbx_lightning.data import RolloutStream
    from gbx_lightning.models import MLPLSTMPolicy

    torch.manual_seed(0)
    n, T = 4, 6
    env = ForagingEnv(n, "cpu", **ENV_KWARGS)
    policy = (MLPLSTMPolicy(env.obs_shape, env.num_actions, hidden=[16], lstm_size=8) if recurrent
              else MLPPolicy(env.obs_shape, env.num_actions, hidden=[16]))
    stream = RolloutStream(env, policy, seed=5, rollout_steps=T)
    module = PPOModule(rollout_steps=T, **{**COMMON, "policy": type(policy)})
    module.policy = policy
    seen = []
    policy.value_head.register_forward_hook(lambda mod, inp, out: seen.append(inp[0].shape[0]))
    it = iter(stream)
    batches = [next(it) for _ in range(4)]   # 24 steps: episodes (max 12 steps, energy 3) end inside rollouts
    ended = [int((b["terminated"][:-1] | b["truncated"][:-1]).sum()) for b in batches]
    assert sum(ended) > 0
    for b, k in zip(batches, ended):
        seen.clear()
        got = module.bootstrap_values(b)
        assert seen == [n + k]   # one forward pass: the last step's n rows and the k ended steps
        with torch.no_grad():
            s_next = b["final_obs"].flatten(0, 1)
            full = (policy.step(s_next, b["policy_states"][1:].flatten(0, 1))[1] if recurrent else policy(s_next)[1])
        torch.testing.assert_close(got, full, rtol=1e-5, atol=1e-6)
    b = dict(batches[0])
    b["final_obs"] = b["final_obs"].clone()
    assert not bool(b["terminated"][1, 2] | b["truncated"][1, 2])
    b["final_obs"][1, 2] += 1.0   # no longer obs[2] of env 2
    seen.clear()
    got = module.bootstrap_values(b)
    assert seen == [n + ended[0] + 1]
    with torch.no_grad():
        s_next = b["final_obs"][1, 2:3]
        v = policy.step(s_next, b["policy_states"][2, 2:3])[1] if recurrent else policy(s_next)[1]
    torch.testing.assert_close(got[1 * n + 2], v[0])
