"""W&B as a logger (Lightning's WandbLogger, the optional `wandb` extra), offline: the training curves a config's
`trainer.logger` sends it, at env_steps, and AgentView's observation grid and evaluation clip as W&B media."""

import io
import json
import struct
import types

import numpy as np
import pytest

wandb = pytest.importorskip("wandb", reason="the optional wandb extra (pip install -e '.[wandb]')")

from test_trainer import TINY_A2C, _fit, _records  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


def _history(run_file):
    """The history rows of an offline run's ``.wandb`` file: a LevelDB-style log (7-byte file header, 32 KiB blocks,
    records chunked with a 7-byte header: crc32, length, type 1 full / 2 first / 3 middle / 4 last) of protobuf
    ``Record``s."""
    from wandb.proto import wandb_internal_pb2 as pb

    data, block = run_file.read_bytes(), 32768
    assert data[:4] == b":W&B"
    pos, pending, rows = 7, b"", []
    while pos + 7 <= len(data):
        if block - pos % block < 7:   # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        if kind == 0 and length == 0:
            continue
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            rec = pb.Record()
            rec.ParseFromString(pending)
            if rec.WhichOneof("record_type") == "history":
                rows.append({i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in rec.history.item})
    return rows


def test_a_config_logger_wandb_offline_gets_the_training_curves_at_env_steps(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_SILENT", "true")
    cfg = tmp_path / "tiny.yaml"
    logger = (f"  logger:\n    - class_path: lightning.pytorch.loggers.WandbLogger\n      init_args: "
              f"{{offline: true, project: gbx-test, save_dir: {tmp_path / 'wb'}}}\n")
    cfg.write_text(TINY_A2C.replace("  devices: 1\n", "  devices: 1\n" + logger, 1))
    runs = tmp_path / "runs"
    assert _fit(cfg, runs) == 0
    wandb.finish()     # the run a CLI process leaves open is finished at its exit: here, by hand,
    wandb.teardown()   # and the service that writes the run file shut down (all written)
    _, steps, _ = _records(runs / "tiny" / "version_0" / "train.jsonl")
    (run_file,) = (tmp_path / "wb" / "wandb").glob("offline-run-*/run-*.wandb")
    rows = [r for r in _history(run_file) if "losses/loss" in r]
    # one row per JSONL record, the same numbers at the same x (Lightning's WandbLogger logs step as trainer/global_step)
    assert [r["trainer/global_step"] for r in rows] == [s["env_steps"] for s in steps]
    assert [r["losses/loss"] for r in rows] == pytest.approx([s["loss"] for s in steps], rel=1e-6)


def test_agent_view_sends_the_observation_grid_and_the_clip_to_wandb(tmp_path, monkeypatch):
    """The PNG W&B stores has the grid's pixels; the clip is stored as the very GIF written for TensorBoard."""
    from lightning.pytorch.loggers import WandbLogger
    from PIL import Image

    from gbx_lightning.callbacks import AgentView
    from gbx_lightning.media import encode_gif, encode_png

    monkeypatch.setenv("WANDB_SILENT", "true")
    logger = WandbLogger(save_dir=str(tmp_path), offline=True, project="gbx-test")
    trainer = types.SimpleNamespace(is_global_zero=True, loggers=[logger])
    frames = (np.arange(3 * 8 * 10).reshape(3, 8, 10) % 4).astype(np.uint8)
    gif, png = encode_gif(frames, 1, 10), encode_png(frames[0], 2)
    view = AgentView()
    view._write(trainer, "eval/clip", gif, 8, 10, 123)
    view._write(trainer, "agent/observations", png, 16, 20, 124)
    logger.experiment.finish()
    wandb.teardown()
    (run_dir,) = (tmp_path / "wandb").glob("offline-run-*")
    (clip,) = (run_dir / "files" / "media" / "videos" / "eval").glob("clip_*.gif")
    assert clip.read_bytes() == gif
    (image,) = (run_dir / "files" / "media" / "images" / "agent").glob("observations_*.png")
    np.testing.assert_array_equal(np.asarray(Image.open(image)), np.asarray(Image.open(io.BytesIO(png))))
    rows = _history(next(run_dir.glob("run-*.wandb")))
    # media rows are flattened: <tag>/_type, <tag>/path, ... at the env_steps given
    assert [(r["trainer/global_step"], r["eval/clip/_type"], r["eval/clip/path"]) for r in rows
            if "eval/clip/path" in r] == [(123, "video-file", str(clip.relative_to(run_dir / "files")))]
    assert [(r["trainer/global_step"], r["agent/observations/_type"], r["agent/observations/width"]) for r in rows
            if "agent/observations/path" in r] == [(124, "image-file", 20)]
