"""A callback the DDP tests add to a CLI run (``--trainer.callbacks+=_ddp_probe.Probe``): every rank writes what
it saw to ``$GBX_PROBE_DIR/<segment>_rank<R>.json`` when fit ends, for the test to compare across ranks and runs.

Per optimizer step: a digest of the parameters and of the gradients about to be applied (after DDP's all-reduce:
equal on every rank if the gradients were averaged). Per evaluation: this rank's episodes. At the end: this
rank's stream (own env steps, observation and sampling-RNG digests), torch's threads and the env's CPU shards.
"""

import hashlib
import json
import os
from pathlib import Path

import torch
from lightning.pytorch import Callback


def digest(tensors) -> str:
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


class Probe(Callback):
    def setup(self, trainer, pl_module, stage):
        self.record = {"rank": trainer.global_rank, "world_size": trainer.world_size, "steps": [], "evals": []}

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        params = list(pl_module.policy.parameters())
        self.record["steps"].append({"opt_steps": pl_module.opt_steps, "params": digest(params),
                                     "grads": digest(p.grad for p in params)})

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        self.record["evals"].append({k: v.tolist() for k, v in batch.items() if k != "clip"})

    def on_validation_end(self, trainer, pl_module):
        state = pl_module.eval_env.state_dict()
        self.record["eval_env"] = digest(v for _, v in sorted(state.items()) if isinstance(v, torch.Tensor))

    def on_train_end(self, trainer, pl_module):
        stream, env = pl_module.stream, pl_module.env
        self.record.update(
            final_params=digest(pl_module.policy.parameters()), env_steps=pl_module.env_steps,
            stream_env_steps=stream.env_steps, obs=digest([stream.obs]),
            generator=digest([stream.generator.get_state()]), torch_threads=torch.get_num_threads(),
            env_shards=len(getattr(env, "machines", [env])))  # GameBoyEnv: one VecGameBoy per CPU shard
        out = Path(os.environ["GBX_PROBE_DIR"])
        segment = "resume" if trainer.ckpt_path else "start"
        (out / f"{segment}_rank{trainer.global_rank}.json").write_text(json.dumps(self.record))


class SignalOneRank(Callback):
    """Sends SIGTERM to this process on rank ``$GBX_SIGNAL_RANK`` just before its optimizer step
    ``$GBX_SIGNAL_STEP`` (from 0): a scheduler's signal that reached one rank only, in the middle of an update."""

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        if (trainer.global_rank == int(os.environ["GBX_SIGNAL_RANK"])
                and pl_module.opt_steps == int(os.environ["GBX_SIGNAL_STEP"])):
            import signal

            os.kill(os.getpid(), signal.SIGTERM)
