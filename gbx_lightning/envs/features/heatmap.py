"""Where the envs go (a feature): a map-visit heatmap for the dashboards, counted on the device from the task's RAM map.

A task with ``heatmap: {y: FIELD, x: FIELD}`` (optionally ``map: FIELD, map_value: V`` to count one map of a
game with many, e.g. Pokemon Red's wCurMap; ``cell: C`` to count C x C coordinates as one cell) gets a counts grid
[2**bits(y) / C, 2**bits(x) / C]: at every step's end
each training env adds one at the (y, x) it stands on. AgentView draws it as the image ``agent/visit_heatmap``
every ``image_every`` optimizer steps (``media.heatmap_grey``: log-scaled grey, cropped to the cells visited). The
counts are one tensor per env object (rank 0's envs under DDP), kept in the env's checkpoints so a resumed run
continues the same picture. One scatter-add per step, no host sync; the image is the one host read.

``heatmap: {world: true}`` counts world tiles of the RAM map's world layout (``envs/world.py``) instead: a grid of
the world's size (``cell`` tiles a cell), each env's (map, y, x) mapped to the world on the device; positions off
the world (a map not in the layout) count nowhere. The image is the whole world with every listed map outlined
(``media.world_heatmap_rgb``), the same place from picture to picture.
"""
from __future__ import annotations

import torch

from ..base import StateError
from ..ram_map import FieldReader, RamMap
from ..task_checks import check_heatmap
from ..world import WorldTransform
from .base import Feature, Step

__all__ = ["VisitHeatmap"]

class VisitHeatmap(Feature):
    """The counts grid of a task's ``heatmap`` (module docstring) for the envs of one env object; as a feature,
    ``after_step`` counts the training envs' visits (an env in ``eval()`` counts none)."""
    name = "heatmap"
    title = "the heatmap's visit counts"

    @classmethod
    def build(cls, task, env) -> "VisitHeatmap | None":
        if task.heatmap is None:
            return None
        heatmap = cls(task.heatmap, task.ram_map, env.device)
        heatmap.env = env
        return heatmap

    def __init__(self, spec, ram_map: RamMap | None, device: torch.device):
        fields = check_heatmap(spec, ram_map)
        self.cell = int(spec.cell)
        self.world = WorldTransform(ram_map.world, device) if spec.world else None
        if self.world is not None:
            height, self.width = (-(-side // self.cell) for side in (self.world.height, self.world.width))
        else:
            self.readers = [FieldReader(fields["y"], device), FieldReader(fields["x"], device)]
            self.map_reader = None if fields["map"] is None else FieldReader(fields["map"], device)
            self.map_value = int(spec.map_value)
            height, self.width = (-(-(1 << fields[a].bits) // self.cell) for a in ("y", "x"))
        self.counts = torch.zeros((height, self.width), dtype=torch.int64, device=device)

    def cells(self, env) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Every env's cell now: int64 row and column [N] in the counts grid, and bool [N] whether it counts
        (``map`` equals ``map_value`` where given; with a world, on the world)."""
        if self.world is not None:
            y, x, inside = self.world.positions(env)
            return y // self.cell, x // self.cell, inside
        y, x = self.readers[0](env)[:, 0] // self.cell, self.readers[1](env)[:, 0] // self.cell
        inside = torch.ones_like(y, dtype=torch.bool)
        if self.map_reader is not None:
            inside = self.map_reader(env)[:, 0] == self.map_value
        return y, x, inside

    def update(self, env) -> None:
        """One visit at every env's (y, x) now (only where ``map`` equals ``map_value``, when given; with a world:
        at its world tile, none off the world)."""
        y, x, inside = self.cells(env)
        self.counts.view(-1).index_add_(0, y * self.width + x, inside.to(torch.int64))

    def picture(self) -> tuple[bytes, int, int] | None:
        """The image of the counts so far as (PNG bytes, height, width), None before any visit (one host read):
        grey log-scaled visits cropped to the visited cells (``media.heatmap_grey``), or the whole world with its
        maps outlined."""
        from gbx_lightning.media import encode_png_grey, encode_png_rgb, heatmap_grey, world_heatmap_rgb

        counts = self.counts.cpu().numpy()
        if self.world is not None:
            if not counts.any():
                return None
            c = self.cell
            boxes = [(r.y // c, r.x // c, -(-(r.y + r.h) // c) - r.y // c, -(-(r.x + r.w) // c) - r.x // c)
                     for r in self.world.world.rects.values()]
            rgb = world_heatmap_rgb(counts, boxes, max(2, 512 // max(counts.shape)))
            return encode_png_rgb(rgb), rgb.shape[0], rgb.shape[1]
        image = heatmap_grey(counts)
        if image is None:
            return None
        scale = max(1, 256 // max(image.shape))   # a small map drawn at least ~256 pixels wide
        return encode_png_grey(image, scale), image.shape[0] * scale, image.shape[1] * scale

    def after_step(self, step: Step) -> None:
        if self.env.training:
            self.update(self.env)

    def state_dict(self) -> dict:
        return {"counts": self.counts.cpu().clone()}

    def load_state_dict(self, state: dict | None, where: str) -> None:
        if state is None:   # saved before the task had a heatmap: counting starts here
            self.counts.zero_()
            return
        counts = state.get("counts")
        if not isinstance(counts, torch.Tensor) or counts.shape != self.counts.shape:
            shape = None if not isinstance(counts, torch.Tensor) else tuple(counts.shape)
            raise StateError(f"{where}: counts must be a tensor of shape {tuple(self.counts.shape)} (this task's "
                             f"heatmap), got {shape}")
        self.counts.copy_(counts.to(self.counts.device))

    @property
    def state_nbytes(self) -> int:
        return self.counts.numel() * self.counts.element_size()
