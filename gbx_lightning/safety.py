"""Nothing lost: a run stops between whole updates when asked to, and non-finite numbers never reach a checkpoint.

``GracefulStop`` (a Lightning ``Checkpoint`` callback). SIGTERM (what SLURM, Kubernetes and ``timeout``
send) and SIGINT (Ctrl-C) only set a flag. The run goes on to the end of the update in flight
(the rollout being collected and its whole ``training_step``: all of a PPO update's epochs x
minibatches) and stops at the next ``on_train_batch_end``, the point where periodic checkpoints are
taken, so a resume from it is exact. It raises ``RunStopped`` there; Lightning's exception path
calls ``on_exception``, which writes ``last.ckpt`` (atomically, ``callbacks.AtomicCheckpointIO``)
unless that step is saved already. The CLI then prints how to resume and exits 0. A second signal
before the save is done quits at once (``os._exit``) without writing: ``last.ckpt`` is the previous
complete checkpoint or the new complete one, never a torn file. When training ends on its own, it
also writes ``last.ckpt`` if ``ModelCheckpoint`` left it behind the last step (Lightning's
``save_last`` does not, once it has saved anything). Why our own handlers rather than
Lightning's SIGTERM notifier: its stop comes after a scheduled evaluation, it leaves Ctrl-C to
``KeyboardInterrupt`` (raised anywhere, mid-update), and it ignores a second Ctrl-C.

``NonFiniteGuard``. The module accumulates, on device, the first optimizer step at which a loss term
or the gradient norm was non-finite (``metrics.LossMetrics``) and reads it with the log interval's
numbers (``RLModule.interval_metrics``: one host read per log record, shared with ``TrainingLog``,
whichever asks first); the guard stops the run at that record with ``NonFiniteError`` (the JSONL's
``{"error": ...}`` record names what and at which step, after the record itself, in any callback
order). Before every checkpoint write it also checks the parameters (``RLModule.find_nonfinite``:
one host read per checkpoint) and refuses to write, so the last good checkpoint stays.

``trainer.max_time`` stops the run the same way (the CLI hands it to ``GracefulStop`` instead of Lightning's
``Timer``): checked after every update, the time of the run's training so far (summed over resumed segments,
as Lightning counts it) against the limit; at the limit the run saves ``last.ckpt`` and stops, with no
evaluation after (Lightning's own stop runs one, and it and anything after the last update it checked make
the run overshoot the limit).

A crash (any other exception) saves nothing: the state mid-update is not one a resume can continue
exactly, and it may be the poisoned one; the last periodic checkpoint stays.
"""

from __future__ import annotations

import os
import signal
import time
from datetime import timedelta
from typing import Any

from lightning.pytorch.callbacks import Callback, Checkpoint
from lightning.pytorch.utilities.exceptions import SIGTERMException

__all__ = ["GracefulStop", "NonFiniteError", "NonFiniteGuard", "RunStopped", "StopOnSignal", "max_time_seconds",
           "resume_command"]

_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class RunStopped(SIGTERMException):
    """A signal asked the run to stop; raised between two updates. Lightning's ``SIGTERMException``, so code
    written for Lightning's own SIGTERM handling (``OnExceptionCheckpoint``) treats it the same way."""

    def __init__(self, signal_name: str, opt_steps: int, env_steps: int):
        super().__init__()
        self.signal_name, self.opt_steps, self.env_steps = signal_name, opt_steps, env_steps
        self.checkpoint: str | None = None   # set once last.ckpt holds this step
        self.saved = False                   # True if this stop wrote it (False: it was saved already)

    def __str__(self) -> str:
        return f"{self.signal_name}: stopped after optimizer step {self.opt_steps} (env step {self.env_steps})"


def max_time_seconds(value) -> float | None:
    """``trainer.max_time`` as Lightning takes it ("DD:HH:MM:SS", a ``timedelta`` or a dict of its fields) in
    seconds; None for None. ValueError for anything else."""
    if value is None:
        return None
    if isinstance(value, str):
        parts = value.split(":")
        try:
            if len(parts) != 4:
                raise ValueError
            value = timedelta(**dict(zip(("days", "hours", "minutes", "seconds"), map(int, parts))))
        except ValueError:
            raise ValueError(f"must be DD:HH:MM:SS (e.g. 00:12:00:00), got {value!r}") from None
    elif isinstance(value, dict):
        try:
            value = timedelta(**value)
        except (TypeError, ValueError, OverflowError) as err:
            raise ValueError(f"must be DD:HH:MM:SS or a mapping of timedelta fields, got {value!r} ({err})") from None
    if not isinstance(value, timedelta) or value.total_seconds() <= 0:
        raise ValueError(f"must be a time > 0 (DD:HH:MM:SS), got {value!r}")
    return value.total_seconds()


class NonFiniteError(RuntimeError):
    """A loss term, the gradient norm or the parameters went NaN or infinite."""

    def __init__(self, what: str, opt_step: int | None):
        at = f"at optimizer step {opt_step}" if opt_step is not None else "(step unknown)"
        super().__init__(f"{what} went non-finite {at}; the run stopped and the last good checkpoint is kept")
        self.what, self.opt_step = what, opt_step

    @property
    def record(self) -> dict[str, Any]:
        """Extra fields for the JSONL error record."""
        return {"nonfinite": self.what, "nonfinite_opt_step": self.opt_step}


class StopOnSignal(Callback):
    """Stops the run at the end of the update in flight on SIGTERM/SIGINT (module docstring); saves ``last_ckpt``
    if one is given (``GracefulStop``, the same with checkpoints on), also when training ends, if
    ``ModelCheckpoint`` left ``last_ckpt`` behind the last step.

    Args:
        last_ckpt: where the stop's checkpoint goes (the run's ``checkpoints/last.ckpt``); None: stop without saving.
        max_time: seconds of training (summed over the run's segments) after which to stop the same way; None: no
            limit. Its clock is kept in checkpoints (this callback's state).
    """

    def __init__(self, last_ckpt: str | os.PathLike | None = None, max_time: float | None = None):
        self.last_ckpt = None if last_ckpt is None else os.fspath(last_ckpt)
        self.max_time = max_time
        self._time_before = 0.0   # training seconds of the run's earlier segments (from the checkpoint)
        self._train_start: float | None = None
        self.requested: str | None = None   # name of the first signal received
        self.stop: RunStopped | None = None
        self._previous: dict[int, Any] = {}
        self._start_step = 0

    # ---- signal handlers: set a flag; the second signal quits --------------------------------------
    def _handle(self, signum: int, frame) -> None:
        name = signal.Signals(signum).name
        if self.requested is None:
            self.requested = name
            _say(f"\n{name}: finishing the update in flight, then saving "
                 f"{self.last_ckpt or 'nothing (checkpointing is off)'} (send it again to quit at once without saving)")
            return
        _say(f"\n{name} again: quitting without saving; "
             f"{self.last_ckpt or 'the run directory'} holds the previous complete checkpoint")
        os._exit(128 + signum)

    def _install(self) -> None:
        for sig in _SIGNALS:
            previous = signal.signal(sig, self._handle)
            self._previous.setdefault(sig, previous)

    def _restore(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous if previous is not None else signal.SIG_DFL)
        self._previous = {}

    # ---- the training clock: kept in checkpoints, one key whichever of the two classes saved it -----------
    @property
    def state_key(self) -> str:
        return "StopOnSignal"

    def state_dict(self) -> dict[str, Any]:
        return {"train_time_s": self.train_time_s}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._time_before = float(state.get("train_time_s", 0.0))

    @property
    def train_time_s(self) -> float:
        """Seconds of training of the whole run so far (this segment's since ``on_train_start``)."""
        return self._time_before + (time.monotonic() - self._train_start if self._train_start is not None else 0.0)

    # ---- hooks -------------------------------------------------------------------------------------
    def setup(self, trainer, pl_module, stage: str) -> None:
        # from here on a signal is a stop request, also while envs are built and kernels compile
        if stage == "fit":
            self.requested, self.stop = None, None
            self._install()

    def on_train_start(self, trainer, pl_module) -> None:
        # Lightning put its own SIGTERM notifier in front of ours meanwhile: ours alone decides when to stop
        signal.signal(signal.SIGTERM, self._handle)
        self._start_step = trainer.global_step
        self._train_start = time.monotonic()
        if self._asked(trainer):   # asked to stop before the first update: nothing new to save
            raise self._stopped(pl_module, trainer)

    def _asked(self, trainer) -> bool:
        """Whether to stop here. Under DDP a collective (one all-reduce per update): the ranks stop at the same
        update when any of them got the signal, or the others would wait for it in the next collective."""
        if self.requested is None and self.max_time is not None and self.train_time_s >= self.max_time:
            self.requested = "max_time"
        asked = self.requested is not None
        if trainer.world_size > 1:
            asked = bool(trainer.strategy.reduce_boolean_decision(asked, all=False))
            if asked and self.requested is None:
                self.requested = "a signal to another process"
        return asked

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self._asked(trainer):
            raise self._stopped(pl_module, trainer)

    def on_train_end(self, trainer, pl_module) -> None:
        self._time_before, self._train_start = self.train_time_s, None
        # Lightning's save_last writes last.ckpt when training ends only if it wrote none before: a max_steps that
        # is not a multiple of checkpoint_every would leave last.ckpt behind the steps trained
        self._save_last(trainer)

    def on_exception(self, trainer, pl_module, exception: BaseException) -> None:
        try:
            if isinstance(exception, RunStopped) and self.last_ckpt is not None:
                exception.saved = self._save_last(trainer)
                exception.checkpoint = self.last_ckpt if os.path.isfile(self.last_ckpt) else None
        finally:
            self._restore()

    def _save_last(self, trainer) -> bool:
        """Write last.ckpt unless it holds this step already (or nothing was trained); True if written."""
        if self.last_ckpt is None or trainer.global_step <= self._start_step:
            return False
        written = _saved_step(trainer, self.last_ckpt) == trainer.global_step
        if trainer.world_size > 1:   # only rank 0 writes (and knows); saving is a collective: all ranks or none
            written = bool(trainer.strategy.broadcast(written, src=0))
        if written:
            return False
        trainer.save_checkpoint(self.last_ckpt, weights_only=False)
        return True

    def teardown(self, trainer, pl_module, stage: str) -> None:
        self._restore()

    def _stopped(self, pl_module, trainer) -> RunStopped:
        self.stop = RunStopped(self.requested, trainer.global_step, int(getattr(pl_module, "env_steps", 0)))
        return self.stop


class GracefulStop(StopOnSignal, Checkpoint):
    """``StopOnSignal`` for runs with checkpoints. A ``Checkpoint`` so that Lightning runs it after
    ``ModelCheckpoint``: its batch-end check comes after the periodic save of that step, and its saves are
    skipped when that step is on disk already. (Lightning refuses any ``Checkpoint`` callback when
    ``enable_checkpointing`` is off: then ``StopOnSignal`` stops without saving.)"""


def _saved_step(trainer, path: str) -> int | None:
    """global_step of the last checkpoint this process wrote to ``path`` (AtomicCheckpointIO records it)."""
    saved = getattr(trainer.strategy.checkpoint_io, "saved_steps", {})
    return saved.get(os.path.abspath(path))


def _say(text: str) -> None:
    # os.write, not print: a signal can arrive while the main thread is inside sys.stderr's own write
    try:
        os.write(2, (text + "\n").encode())
    except OSError:
        pass


class NonFiniteGuard(Callback):
    """Stops the run when a loss term, the gradient norm or a parameter goes non-finite; never lets such a
    state be checkpointed (module docstring). Its place among the callbacks does not matter: it asks for the
    log interval's numbers itself (the read is shared, ``RLModule.interval_metrics``)."""

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        read = getattr(pl_module, "interval_metrics", None)
        if read is not None:
            read()   # at a batch that ends a log interval: the read that finds what went non-finite
        found = getattr(pl_module, "nonfinite", None)
        if found is not None:
            raise NonFiniteError(*found)

    def on_save_checkpoint(self, trainer, pl_module, checkpoint: dict[str, Any]) -> None:
        find = getattr(pl_module, "find_nonfinite", None)
        found = find() if find is not None and trainer.state.fn == "fit" else None
        if found is not None:
            raise NonFiniteError(*found)


def resume_command(args: list[str], version: str | None) -> str:
    """The command line that resumes this run: ``args`` without any ``--ckpt_path``, plus ``--ckpt_path last``
    (and the run's ``--version``, so that a newer version of the same run name is not taken instead)."""
    import shlex

    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in ("--ckpt_path", "--version"):
            skip = True
            continue
        if arg.startswith(("--ckpt_path=", "--version=")):
            continue
        out.append(arg)
    out += ["--ckpt_path", "last"]
    if version is not None:
        out += ["--version", version]
    return "python -m gbx_lightning " + shlex.join(out)
