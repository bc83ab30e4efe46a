"""``python -m gbx_lightning fit|validate|test|play --config configs/X.yaml`` (LightningCLI), one file per layer:

* ``app.py``     the LightningCLI subclass and the ``play`` subcommand: options, the checks before anything is
                 built, the Trainer's callbacks and loggers;
* ``runs.py``    run directories, versions, which checkpoint ``last``/``best``/a file means, ``config.yaml``;
* ``launch.py``  strategies, and the check that every DDP process runs the same run;
* ``errors.py``  every refusal as one line and an exit status;
* ``quiet.py``   startup noise (Lightning's tip, Warp's CUDA-driver message on a machine without one);
* ``main.py``    the entry point.

Run directories: ``<runs_dir>/<run_name>/version_N/`` (defaults: ``lightning_logs`` and the stem of the last
``--config`` file): TensorBoard events, ``train.jsonl``, ``config.yaml`` (reusable: ``--config .../config.yaml``
names the same run), ``clips/`` and ``checkpoints/{last.ckpt, stepNNNNNNNN.ckpt}``. Every fresh ``fit`` starts the
next version; ``--ckpt_path last`` takes the newest version that has a ``last.ckpt`` (``--version N`` picks one),
and the logs continue in place. Every evaluation of ``fit`` is recorded in ``checkpoints/registry.jsonl`` with a
checkpoint file of the evaluated step (``gbx_lightning.registry``); ``validate``/``test``/``play --ckpt_path best``
take the best one by ``--best_metric``; ``fit --ckpt_path best`` is refused (it names the file to pass instead).

Guards, all checked before any env or network is built, each a one-line message and exit status 2 (no
traceback): values out of range or of the wrong type (``config error: model.gamma must be a number in (0, 1],
got 1.5``), what the parser refuses, a missing file the env needs, ``--ckpt_path last`` with nothing to resume
(never a silent fresh start), ``--ckpt_path best`` with no registry, ``validate``/``test`` with nothing to
evaluate. SIGTERM and Ctrl-C stop ``fit`` between two updates, save and print how to resume (exit status 0); a
non-finite loss, gradient or parameter stops it with exit status 1 (``gbx_lightning.safety``).
"""

from gbx_lightning.cli.app import GbxCLI, GbxTrainer
from gbx_lightning.cli.launch import ProcessCheck
from gbx_lightning.cli.main import main
from gbx_lightning.cli.runs import RunError, resolve_run_dir

__all__ = ["GbxCLI", "GbxTrainer", "ProcessCheck", "RunError", "main", "resolve_run_dir"]
