"""Observers of a run: the training log (JSONL + every Lightning logger), what the agent sees, the progress bar,
atomic checkpoint writes (what torch.compile does with the update: ``compile_notice.py``).

Training log (one JSON object per line, appended; schema stable):

* ``{"meta": {...}}`` at the start of every fit segment: ``run_id`` (kept across resumes),
  ``segment`` ("start" or "resume"), ``resumed_from`` (checkpoint path), ``env_steps`` and
  ``opt_steps`` at segment start, ``run_name``, ``config`` (the resolved CLI config, or the
  module's hyper-parameters), ``seed``, ``versions`` (python, torch, lightning, warp,
  numpy, gbx_lightning), ``rom_sha256`` (when the env has a ROM, else null), ``started_at``
  (UTC ISO time), ``log_every``, ``env_state`` (on resume: what the checkpoint held of the envs,
  ``{"saved", "bytes", "num_envs", "max_bytes"}``; ``saved: false`` = the state was over the size
  cap and the envs restarted from their reset states), ``random_baseline`` (a uniformly random policy's
  ``eval/random_*`` figures on the evaluation episodes, measured once per run: ``baseline.py``; null when
  ``--random_baseline false``). On resume, records of the previous
  segment with ``env_steps`` beyond the resume point (written after its last checkpoint) are
  superseded; a torn last line (a write cut short by kill -9) is dropped.
* One record each time ``opt_steps`` reaches a multiple of ``log_every`` (PPO takes
  epochs x minibatches steps per batch: a record is written after the batch that crossed one),
  with the keys of ``gbx_lightning.metrics.METRICS``. Device statistics are read once per record.
* ``{"eval": {...}}`` after every validate/test: ``stage``, ``env_steps``, ``opt_steps`` and the
  ``eval/*`` or ``test/*`` metrics (episodes, return_mean, success_rate, steps_to_success,
  length_mean, extras).
* ``{"error": {...}}`` if the run dies (``type``, ``message``, ``env_steps``, ``opt_steps``; for a
  non-finite loss, gradient or parameter also ``nonfinite``, what went non-finite, and
  ``nonfinite_opt_step``, where: see ``gbx_lightning.safety``).
* ``{"stop": {...}}`` when SIGTERM or Ctrl-C stopped the run between two updates (``signal``,
  ``env_steps``, ``opt_steps``, ``wall_time_s``); ``last.ckpt`` holds that step.

Every logger of the Trainer (TensorBoard, and any the user adds: CSV, W&B, MLflow, ...) gets the
same numbers through ``Logger.log_metrics`` at ``step = env_steps`` (CleanRL's x-axis), under
names grouped as CleanRL and SB3 do; eval metrics keep their ``eval/``/``test/`` names. Every
record key, its logger name and its meaning: ``gbx_lightning.metrics.METRICS`` (the one table;
``metrics_table()`` renders it). A record's numbers come from ``RLModule.interval_metrics`` (one
read per record, shared with ``safety.NonFiniteGuard``), with the wall time, env steps per second
and the phase times measured here.

Under DDP every rank computes each record at the same optimizer step (statistics and losses summed
over the ranks, env_steps counting all of them) and rank 0 alone writes it: one JSONL, one set of
logger curves; ``time_*_s`` are rank 0's.

Loss means leave out non-finite values (explained variance is undefined when the returns did not
vary); a key with nothing to average is null in the JSONL and absent for the loggers. On CUDA the
phase times measure launch time unless the work synchronises. TensorBoard also gets the run's
hyper-parameters with the eval metrics in its HParams tab (at the first evaluation of a fit).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import tempfile
import time
import uuid
from typing import Any

import torch
from lightning.pytorch import Callback, LightningModule, Trainer
from lightning.pytorch.callbacks import RichProgressBar
from lightning.pytorch.loggers import TensorBoardLogger, WandbLogger
from lightning.pytorch.plugins.io import TorchCheckpointIO

from gbx_lightning.metrics import LOGGER_NAMES

__all__ = ["TrainingLog", "EnvStepsProgressBar", "AtomicCheckpointIO", "AgentView", "package_versions",
           "logger_metrics", "observation_grid", "drop_torn_line", "read_training_log"]


def package_versions() -> dict[str, str | None]:
    import importlib.metadata as md

    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in ("torch", "lightning", "warp-lang", "numpy", "jsonargparse", "gbx_lightning"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    if out["gbx_lightning"] is None:  # running from a source checkout
        import gbx_lightning

        out["gbx_lightning"] = gbx_lightning.__version__
    return out


def logger_metrics(record: dict[str, Any]) -> dict[str, float]:
    """A JSONL record's finite numbers under the loggers' names (``gbx_lightning.metrics.METRICS``)."""
    out = {}
    for key, value in record.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            continue
        if key in LOGGER_NAMES:
            out[LOGGER_NAMES[key]] = float(value)
        elif key.startswith("episode_") and key.endswith("_mean"):
            out[f"charts/episodic_{key[len('episode_'):-len('_mean')]}"] = float(value)
        elif "/" in key:  # eval/..., test/...
            out[key] = float(value)
    return out


def _image_summary(tag: str, encoded: bytes, height: int, width: int):
    """An encoded PNG or GIF as a TensorBoard image summary (an animated GIF plays in the Images tab).

    Built as the proto directly: SummaryWriter.add_image would re-encode arrays with an imaging library,
    and add_video needs moviepy; the bytes here come from media.py.
    """
    from tensorboard.compat.proto.summary_pb2 import Summary

    image = Summary.Image(height=height, width=width, colorspace=1, encoded_image_string=encoded)
    return Summary(value=[Summary.Value(tag=tag, image=image)])


def _wandb_media(encoded: bytes):
    """A PNG as a ``wandb.Image``, an animated GIF as a ``wandb.Video`` (it plays in the W&B run page)."""
    import io

    import wandb

    if encoded[:4] == b"GIF8":
        return wandb.Video(io.BytesIO(encoded), format="gif")
    from PIL import Image   # wandb's own dependency

    return wandb.Image(Image.open(io.BytesIO(encoded)))


def observation_grid(obs: torch.Tensor, envs: int = 4) -> "np.ndarray":
    """uint8 pixel stacks [N, K, H, W] -> one shade image: a row per env (the first ``envs``), its K
    frames left to right (oldest first), separated by 1-pixel lines of shade 2."""
    import numpy as np

    stacks = obs[:envs].detach().cpu().numpy()
    n, k, h, w = stacks.shape
    grid = np.full((n * (h + 1) - 1, k * (w + 1) - 1), 2, np.uint8)
    for i in range(n):
        for j in range(k):
            grid[i * (h + 1):i * (h + 1) + h, j * (w + 1):j * (w + 1) + w] = stacks[i, j]
    return grid


def _clean(v: Any) -> Any:
    """JSON has no NaN/inf: write them as null."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


class TrainingLog(Callback):
    """Writes the JSONL training log (schema in this module's docstring) and mirrors it to TensorBoard.

    Args:
        path: the JSONL file (appended to; created with its directory).
        config: the resolved config to put in the meta line (default: the module's hyper-parameters).
        log_every: optimizer steps per record.
        run_name: recorded in the meta line.
    """

    def __init__(self, path: str | os.PathLike, config: dict | None = None, log_every: int = 1,
                 run_name: str | None = None):
        if isinstance(log_every, bool) or not isinstance(log_every, int) or log_every < 1:
            raise ValueError(f"TrainingLog: log_every must be an int >= 1, got {log_every!r}")
        self.path = os.fspath(path)
        self.config = config
        self.log_every = log_every
        self.run_name = run_name
        self.baseline = None   # a baseline.RandomBaseline that runs before this: its figures go in the meta line
        self.run_id = uuid.uuid4().hex[:12]
        self.wall_time_base = 0.0  # training seconds of earlier segments (restored from the checkpoint)
        self.last_record: dict[str, Any] = {}
        self.last_eval_opt_steps: int | None = None  # opt_steps of the latest evaluation (the CLI's final-eval check)
        self._last_opt_step: int | None = None  # opt_steps of the latest record
        self._hparams_logged = False
        self._file = None
        self._t_start = 0.0

    # ---- state kept in checkpoints -----------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "wall_time_s": self._wall_time()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.run_id = state.get("run_id", self.run_id)
        self.wall_time_base = float(state.get("wall_time_s", 0.0))

    def _wall_time(self) -> float:
        return self.wall_time_base + (time.perf_counter() - self._t_start if self._t_start else 0.0)

    @property
    def wall_time_s(self) -> float:
        """Training wall time so far, summed over fit segments (the records' ``wall_time_s``)."""
        return self._wall_time()

    # ---- output (rank 0 only: under DDP every rank computes the records, reduced over ranks) ------------
    def _write(self, trainer: Trainer, obj: dict[str, Any]) -> None:
        if not trainer.is_global_zero:
            return
        if self._file is None:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            drop_torn_line(self.path)
            self._file = open(self.path, "a", encoding="utf-8")
        self._file.write(json.dumps(obj, default=str) + "\n")
        self._file.flush()

    @staticmethod
    def _log(trainer: Trainer, metrics: dict[str, float], step: int) -> None:
        if not trainer.is_global_zero:  # Lightning's loggers are rank-zero-only; a user's own may not be
            return
        for logger in trainer.loggers:
            logger.log_metrics(metrics, step=step)

    # ---- hooks -----------------------------------------------------------------------------------
    def setup(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        pl_module.log_every = self.log_every   # the module reads the interval's numbers on this schedule

    def on_fit_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        resumed = trainer.ckpt_path is not None
        env = getattr(pl_module, "env", None)
        seed = os.environ.get("PL_GLOBAL_SEED")
        self._write(trainer, {"meta": {
            "run_id": self.run_id, "run_name": self.run_name,
            "segment": "resume" if resumed else "start",
            "resumed_from": str(trainer.ckpt_path) if resumed else None,
            "env_steps": pl_module.env_steps, "opt_steps": pl_module.opt_steps,
            "seed": int(seed) if seed is not None else None,
            "stream_seed": pl_module.process_seed,
            "config": self.config if self.config is not None else dict(pl_module.hparams),
            "versions": package_versions(),
            "rom_sha256": getattr(env, "rom_sha256", None),
            "device": str(trainer.strategy.root_device),
            "world_size": trainer.world_size,
            "log_every": self.log_every,
            "started_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "env_state": getattr(pl_module, "restored_env_state", None) if resumed else None,
            "random_baseline": self.baseline.metrics if self.baseline is not None else None,
        }})
        self._t_start = time.perf_counter()
        self._interval_start = self._t_start
        self._interval_env_steps = pl_module.env_steps
        self._last_opt_step = pl_module.opt_steps
        self._phase_base = (0.0, 0.0, 0.0)
        self._hparams_logged = False

    def _phase_times(self, pl_module) -> tuple[float, float, float]:
        stream = pl_module.stream
        return ((stream.time_act_s if stream else 0.0), (stream.time_env_s if stream else 0.0),
                pl_module.time_update_s)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.record(trainer, pl_module)

    def record(self, trainer, pl_module) -> dict[str, Any]:
        """Write the record of the log interval that ends at this batch, if one does and it is not written yet
        (a callback that shows it may ask first: the progress bar); returns the latest record."""
        metrics = pl_module.interval_metrics()   # under DDP a collective, at the same batch on every rank
        opt_steps = pl_module.opt_steps
        if metrics is None or opt_steps == self._last_opt_step:
            return self.last_record
        self._last_opt_step = opt_steps
        now = time.perf_counter()
        env_steps = pl_module.env_steps
        dt = now - self._interval_start
        phases = self._phase_times(pl_module)
        act, env_t, upd = (p - b for p, b in zip(phases, self._phase_base))
        record: dict[str, Any] = {
            "env_steps": env_steps, "opt_steps": opt_steps, "wall_time_s": self._wall_time(),
            "sps": (env_steps - self._interval_env_steps) / dt if dt > 0 else None,
        }
        record.update(metrics)
        record.update({"time_act_s": act, "time_env_s": env_t, "time_update_s": upd,
                       "time_other_s": max(0.0, dt - act - env_t - upd)})
        record = {k: _clean(v) for k, v in record.items()}
        self._write(trainer, record)
        self._log(trainer, logger_metrics(record), env_steps)
        self.last_record = record
        self._interval_start, self._interval_env_steps, self._phase_base = now, env_steps, phases
        return record

    def _eval_record(self, trainer, pl_module, stage: str) -> None:
        if trainer.sanity_checking:
            return
        metrics = {k: _clean(float(v)) for k, v in trainer.callback_metrics.items()
                   if k.startswith(("eval/", "test/"))}
        if not metrics:
            return
        self._write(trainer, {"eval": {"stage": stage, "env_steps": pl_module.env_steps,
                                       "opt_steps": pl_module.opt_steps, **metrics}})
        self.last_eval_opt_steps = pl_module.opt_steps
        if not trainer.is_global_zero:
            return
        numbers = logger_metrics(metrics)
        for logger in trainer.loggers:
            if isinstance(logger, TensorBoardLogger) and trainer.state.fn == "fit" and not self._hparams_logged:
                # HParams tab: the hyper-parameters with the eval metrics, whose later values TensorBoard follows
                logger.log_hyperparams(self._hparams(trainer, pl_module), metrics=numbers, step=pl_module.env_steps)
            else:
                logger.log_metrics(numbers, step=pl_module.env_steps)
        self._hparams_logged = True
        if trainer.state.fn in ("validate", "test"):  # during fit the progress bar owns the console
            body = "  ".join(f"{k.split('/', 1)[1]} " + ("n/a" if v is None else f"{v:.4g}") for k, v in metrics.items())
            print(f"{stage}: {body}  (env_steps {pl_module.env_steps}, opt_steps {pl_module.opt_steps})", flush=True)

    @staticmethod
    def _hparams(trainer, pl_module) -> dict[str, Any]:
        """The module's hyper-parameters (dicts flattened by the logger) and the Trainer's step budget."""
        return {**dict(pl_module.hparams), "max_steps": trainer.max_steps}

    def on_validation_end(self, trainer, pl_module) -> None:
        self._eval_record(trainer, pl_module, "validate")

    def on_test_end(self, trainer, pl_module) -> None:
        self._eval_record(trainer, pl_module, "test")

    def on_exception(self, trainer, pl_module, exception: BaseException) -> None:
        from gbx_lightning.safety import NonFiniteError, RunStopped

        if isinstance(exception, (RunStopped, NonFiniteError)):
            # raised between updates (by a callback that ran before this one at the batch's end): the record due
            # there is written first, so the log does not depend on the callbacks' order
            self.record(trainer, pl_module)
        where = {"env_steps": pl_module.env_steps, "opt_steps": pl_module.opt_steps, "wall_time_s": self._wall_time()}
        if isinstance(exception, RunStopped):   # asked to stop (SIGTERM, Ctrl-C): not an error
            self._write(trainer, {"stop": {"signal": exception.signal_name, **where}})
            return
        self._write(trainer, {"error": {"type": type(exception).__name__, "message": str(exception), **where,
                                        **getattr(exception, "record", {})}})

    def teardown(self, trainer, pl_module, stage: str) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if stage == "fit" and self._t_start:
            self.wall_time_base = self._wall_time()
            self._t_start = 0.0


class AgentView(Callback):
    """What the agent sees, in TensorBoard (pixel envs only: uint8 observations [K, H, W]).

    * Every ``image_every`` optimizer steps: ``agent/observations``, a grid of the first ``envs``
      envs' current observation stacks (``observation_grid``), at the run's env_steps.
    * At the same steps and after every evaluation, for a task with a ``heatmap`` (``envs/features/heatmap.py``):
      ``agent/visit_heatmap``, where the training envs have stood so far (``VisitHeatmap.picture``: one map, or a
      whole world with its maps outlined).
    * After every evaluation: ``eval/clip``, env 0's evaluation episode as an animated GIF (the
      screens it saw, ``delay_cs`` hundredths of a second each), also written to
      ``clip_dir/eval_step{opt_steps:08d}.gif``.

    Images go to an event file of their own in each TensorBoardLogger's ``log_dir`` (torch's public
    ``FileWriter``; TensorBoard reads every event file of a run directory), and to each ``WandbLogger``'s run
    under the same tags (the clip as a W&B video), at the same env_steps. A resumed fit purges the
    images a crashed segment wrote after its checkpoint, as the logger's ``purge_step`` does for scalars.
    """

    def __init__(self, clip_dir: str | os.PathLike | None = None, image_every: int = 500, envs: int = 4,
                 scale: int = 2, delay_cs: int = 12):
        if isinstance(image_every, bool) or not isinstance(image_every, int) or image_every < 0:
            raise ValueError(f"AgentView: image_every must be an int >= 0 (0: no images), got {image_every!r}")
        self.clip_dir = None if clip_dir is None else os.fspath(clip_dir)
        self.image_every, self.envs, self.scale, self.delay_cs = image_every, envs, scale, delay_cs
        self._next_image = 0
        self._purge_step: int | None = None
        self._writers: dict[str, Any] = {}
        self.last_clip_path: str | None = None

    def _write(self, trainer, tag: str, encoded: bytes, height: int, width: int, step: int) -> None:
        from torch.utils.tensorboard.writer import FileWriter

        if not trainer.is_global_zero:
            return
        summary = _image_summary(tag, encoded, height, width)
        for logger in trainer.loggers:
            if not isinstance(logger, TensorBoardLogger):
                continue
            writer = self._writers.get(logger.log_dir)
            if writer is None:
                writer = self._writers[logger.log_dir] = FileWriter(logger.log_dir, filename_suffix=".images")
                if self._purge_step is not None:
                    from tensorboard.compat.proto.event_pb2 import Event, SessionLog

                    # what SummaryWriter(purge_step=...) writes: TensorBoard hides older events from this step on
                    writer.add_event(Event(step=self._purge_step, file_version="brain.Event:2"))
                    writer.add_event(Event(step=self._purge_step, session_log=SessionLog(status=SessionLog.START)))
            writer.add_summary(summary, step)
        for logger in trainer.loggers:
            if isinstance(logger, WandbLogger):
                logger.log_metrics({tag: _wandb_media(encoded)}, step=step)

    def on_train_start(self, trainer, pl_module) -> None:
        self._next_image = pl_module.opt_steps
        self._purge_step = pl_module.env_steps + 1 if trainer.ckpt_path is not None else None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        stream = pl_module.stream
        if (not self.image_every or not trainer.is_global_zero or pl_module.opt_steps < self._next_image
                or stream is None or stream.obs is None):
            return
        self._next_image = pl_module.opt_steps + self.image_every
        obs = stream.obs
        if obs.dtype != torch.uint8 or obs.dim() != 4:
            return
        if getattr(pl_module.env, "obs_vector", 0):
            obs = obs[:, 1:]    # the frames: GameBoyEnv's obs puts a data plane (bytes, not shades) in front
        from gbx_lightning.media import encode_png

        grid = observation_grid(obs, self.envs)
        self._write(trainer, "agent/observations", encode_png(grid, self.scale), grid.shape[0] * self.scale,
                    grid.shape[1] * self.scale, pl_module.env_steps)
        self._write_heatmap(trainer, pl_module)

    def _write_heatmap(self, trainer, pl_module) -> None:
        feature = getattr(getattr(pl_module, "env", None), "feature", None)   # GameBoyEnv's features (envs/features/)
        heatmap = feature("heatmap") if callable(feature) else None
        picture = None if heatmap is None else heatmap.picture()
        if picture is not None:
            self._write(trainer, "agent/visit_heatmap", *picture, pl_module.env_steps)

    def on_validation_end(self, trainer, pl_module) -> None:
        if trainer.sanity_checking or not trainer.is_global_zero:
            return
        if self.image_every:
            self._write_heatmap(trainer, pl_module)     # the heatmap as the evaluation found it
        clip = getattr(pl_module, "last_eval_clip", None)
        if clip is None:
            return
        from gbx_lightning.media import encode_gif

        frames = clip.detach().cpu().numpy()
        data = encode_gif(frames, self.scale, self.delay_cs)
        if self.clip_dir is not None and trainer.is_global_zero:
            os.makedirs(self.clip_dir, exist_ok=True)
            self.last_clip_path = os.path.join(self.clip_dir, f"eval_step{pl_module.opt_steps:08d}.gif")
            with open(self.last_clip_path, "wb") as f:
                f.write(data)
        self._write(trainer, "eval/clip", data, frames.shape[1] * self.scale, frames.shape[2] * self.scale,
                    pl_module.env_steps)

    def teardown(self, trainer, pl_module, stage: str) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers = {}


class EnvStepsProgressBar(RichProgressBar):
    """Lightning's Rich bar counting training batches of the whole run, with env steps, env steps/s, return.

    One bar for the run, named "train": the stream is a single epoch whose length is the run's batch budget
    (max_steps / optimizer steps per batch), so the bar's total is that budget rather than Lightning's
    max_steps-based guess, and its count is the run's batches so far (the stream's, restored on resume; a
    resumed run's batch_idx counts from the resume), so a resumed run continues the bar where it was.
    """

    def __init__(self, training_log: TrainingLog | None = None, refresh_rate: int = 1):
        super().__init__(refresh_rate=refresh_rate, leave=True)
        self.training_log = training_log

    @property
    def total_train_batches(self):
        return self.trainer.num_training_batches

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        # Lightning's Rich bar updates its task, rebuilds its metrics and redraws after every batch whatever
        # refresh_rate says (~0.1 ms a batch on CPU); here that happens every refresh_rate batches and at the last.
        stream = getattr(pl_module, "stream", None)
        done = stream.iterations if stream is not None else batch_idx + 1   # the run's batches, not the segment's
        if done % self.refresh_rate == 0 or done >= self.total_train_batches:
            if self.training_log is not None:   # this batch's record, whether the log's hook ran before or not
                self.training_log.record(trainer, pl_module)
            super().on_train_batch_end(trainer, pl_module, outputs, batch, done - 1)

    def _get_train_description(self, current_epoch: int) -> str:
        # the run is one epoch (the stream's length is the batch budget): "Epoch 0/-2" would say nothing; also
        # what a resumed run's bar is made with (Lightning builds it at the first batch, no epoch start)
        return f"{'train':{len(self.validation_description)}}"

    def get_metrics(self, trainer, pl_module) -> dict[str, Any]:
        items = super().get_metrics(trainer, pl_module)
        items.pop("v_num", None)
        rec = self.training_log.last_record if self.training_log is not None else {}
        if rec:
            items["env_steps"] = str(rec["env_steps"])
            if rec.get("sps") is not None:
                items["env_steps/s"] = f"{rec['sps']:.0f}"
            if rec.get("episode_return_mean") is not None:
                items["return"] = f"{rec['episode_return_mean']:.2f}"
        return items


class AtomicCheckpointIO(TorchCheckpointIO):
    """torch.save to a temporary file in the target directory, fsync, then os.replace (and fsync the directory).

    A reader (or a resumed run) sees the previous complete checkpoint or the new complete one,
    never a torn file, even if the process is killed mid-write. (Lightning's default writes via
    an fsspec transaction whose temporary file lives in the system temp dir, so its final move
    is a copy, not an atomic rename, whenever that is another filesystem.) A temporary file left
    by a killed writer is removed by the next save into that directory. ``saved_steps`` maps each
    path written to the ``global_step`` it holds (``safety.GracefulStop`` skips a save already made).
    """

    _TMP_PREFIX = ".tmp-"

    def __init__(self) -> None:
        super().__init__()
        self.saved_steps: dict[str, int | None] = {}
        self._swept: set[str] = set()

    def save_checkpoint(self, checkpoint: dict[str, Any], path, storage_options=None) -> None:
        if storage_options is not None:
            raise TypeError(f"AtomicCheckpointIO: storage_options are not supported, got {storage_options!r}")
        path = os.path.abspath(os.fspath(path))
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        if directory not in self._swept:
            self._swept.add(directory)
            for name in os.listdir(directory):
                if name.startswith(self._TMP_PREFIX) and name.endswith(".ckpt"):
                    os.unlink(os.path.join(directory, name))
        fd, tmp = tempfile.mkstemp(prefix=self._TMP_PREFIX, suffix=".ckpt", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        _fsync_dir(directory)   # the rename itself survives a power cut
        self.saved_steps[path] = checkpoint.get("global_step")


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def drop_torn_line(path: str | os.PathLike) -> int:
    """Cut a last line without its newline (a write cut short by kill -9 or a full disk) from a JSONL file, so
    appending continues on a line of its own. Returns the bytes dropped."""
    try:
        f = open(path, "rb+")
    except FileNotFoundError:
        return 0
    with f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return 0
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return 0
        keep, pos = 0, size
        while pos > 0:   # find the last newline, reading backwards in blocks
            step = min(65536, pos)
            pos -= step
            f.seek(pos)
            block = f.read(step)
            nl = block.rfind(b"\n")
            if nl >= 0:
                keep = pos + nl + 1
                break
        f.truncate(keep)
        return size - keep


def read_training_log(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of a ``train.jsonl``; a torn last line (kill -9 mid-write) is left out, any other bad line raises."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    records = []
    for i, line in enumerate(lines):
        if not line:
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:   # no newline after it: a write cut short
                break
            raise ValueError(f"{path}: line {i + 1} is not JSON: {line[:80]!r}") from None
    return records
