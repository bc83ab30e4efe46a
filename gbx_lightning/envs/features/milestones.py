"""Milestones (a feature): what a long episode achieved, counted per env on the device from the task's RAM map.

One success flag says little about a Pokemon episode of 20,000 steps; the maps it visited, the badges and events
it got and the levels it gained say how far it came. Each milestone of the task (``envs/task.py`` Milestone) is
updated at every step's end and reported as ``info[name]`` (int32, 0 where no episode ended) on the step its episode
ends, so the training log shows ``episode_<name>_mean`` and evaluation ``<name>_mean``:

    milestones:
      - {name: maps_visited, kind: distinct, fields: [map]}     # different maps seen, the start's included
      - {name: badges, kind: bits, field: badges}              # badge bits newly set (and still set)
      - {name: events, kind: bits, field: event_flags}
      - {name: seen, kind: bits, field: dex_seen, count: peak}  # the most new bits at any step
      - {name: levels, kind: peak, field: party_levels}        # highest rise of the party's level sum
      - {name: first_badge, kind: bits, field: badges, at_least: 1}   # a flag
      - {name: world_tiles, kind: distinct, world: true}        # world tiles (the RAM map's world layout)

Per kind, with v the field's value at a step's end (the sum of its numbers; ``bits``: its number of 1 bits) and
v0 the value at the episode's start:

    distinct   progress = number of different cells (tuples of the fields) seen, the start's included
    peak       progress = max over the episode's steps of v - v0 (0 at the start)
    bits       progress = popcount(b & ~b0): b the field's bytes now, b0 at the start (count: now, the default:
               the new flags still set, so a flag set for a moment and cleared again counts only while set);
               count: peak, max over the episode's steps of popcount(b) - popcount(b0)
    increase   progress = sum over steps of (v - v_before) mod 2**(8 * size)     (a wrapping counter)

``at_least: k`` reports 1 where progress >= k, else 0. ``progress`` ([M, N] int64) is what a state pool scores.
Torch ops on the env's device, no host sync; the state is in the env's checkpoints.
"""
from __future__ import annotations

import torch

from ..base import StateError
from ..ram_map import FieldReader, RamMap, resolve_field
from ..rewards import cell_index, popcount_bytes, visit_cells
from ..world import WorldTransform
from .base import Feature, Step

__all__ = ["MilestoneTracker"]


class MilestoneTracker(Feature):
    """The task's milestones for N envs (module docstring). As a feature: ``after_step`` reads the step's end
    (``update``), ``report`` puts the ended episodes' values in ``info``, ``reset`` starts the restarted ones
    (``begin``); ``progress`` is what the state pool scores."""
    name = "milestones"
    title = "the milestone trackers"

    @classmethod
    def build(cls, task, env) -> "MilestoneTracker | None":
        if not task.milestones:
            return None
        tracker = cls(task.milestones, task.ram_map, env.num_envs, env.device)
        tracker.env = env
        return tracker

    def __init__(self, milestones: list, ram_map: RamMap | None, num_envs: int, device: torch.device):
        self.milestones = list(milestones)
        self.names = [m.name for m in self.milestones]
        self.num_envs, self.device = num_envs, device
        self.readers: list[list[FieldReader]] = []
        self.worlds: dict[int, WorldTransform] = {}     # distinct milestones over world tiles (world: true)
        for i, m in enumerate(self.milestones):
            if m.world:
                self.worlds[i] = WorldTransform(ram_map.world, device)
                self.readers.append(self.worlds[i].readers)
                continue
            refs = (m.fields if m.fields is not None else [m.field]) if m.kind == "distinct" else [m.field]
            where = f"task.milestones[{i}]"
            self.readers.append([FieldReader(resolve_field(ram_map, ref, where), device) for ref in refs])
        m_count = len(self.milestones)
        i64 = dict(dtype=torch.int64, device=device)
        self.start = torch.zeros((m_count, num_envs), **i64)      # v0 (peak, bits), v_before (increase)
        self.progress = torch.zeros((m_count, num_envs), **i64)
        self.cells = {i: torch.zeros((num_envs, m.bits // 64), **i64)
                      for i, m in enumerate(self.milestones) if m.kind == "distinct"}
        # bits milestones counted "now": the field's bytes at the episode's start (b0)
        self.start_bytes = {i: torch.zeros((num_envs, self.readers[i][0].field.span), dtype=torch.uint8,
                                           device=device)
                            for i, m in enumerate(self.milestones) if m.kind == "bits" and m.count == "now"}

    def __bool__(self) -> bool:
        return bool(self.milestones)

    def _value(self, i: int, env) -> torch.Tensor:
        """v of milestone i (int64 [N]); for distinct, the cell index."""
        m, readers = self.milestones[i], self.readers[i]
        if i in self.worlds:
            return cell_index(self.worlds[i].cells(env), self.worlds[i].cell_widths, m.bits.bit_length() - 1)
        if m.kind == "distinct":
            values = torch.stack([r(env)[:, 0] for r in readers], 1)
            return cell_index(values, [r.field.bits for r in readers], m.bits.bit_length() - 1)
        f = readers[0].field
        if i in self.start_bytes:   # bits, count now: the bytes themselves (begin keeps them, update compares)
            return env.read_ram(f.address, f.span)
        if m.kind == "bits":
            return popcount_bytes(env.read_ram(f.address, f.span))
        return readers[0](env).sum(1)

    def _new_bits(self, i: int, now: torch.Tensor) -> torch.Tensor:
        """int64 [N]: the 1 bits of ``now`` (uint8 [N, span]) that were 0 in the episode's start bytes."""
        return popcount_bytes(now & ~self.start_bytes[i])

    def begin(self, env, mask: torch.Tensor | None = None) -> None:
        """Start the episodes of the envs in ``mask`` (bool [N]; None: all) from the machines as they are now."""
        for i, m in enumerate(self.milestones):
            v = self._value(i, env)
            if i in self.start_bytes:
                self.start_bytes[i] = v.clone() if mask is None else torch.where(mask.unsqueeze(1), v,
                                                                                 self.start_bytes[i])
                v = torch.zeros(v.shape[0], dtype=torch.int64, device=v.device)   # start: nothing new
                start_progress = torch.zeros_like(v)
            elif m.kind == "distinct":   # the new episodes' cells: cleared, then the start's marked
                cleared = torch.zeros_like(self.cells[i]) if mask is None else \
                    self.cells[i].masked_fill(mask.unsqueeze(1), 0)
                _, marked = visit_cells(cleared, v)
                self.cells[i] = marked if mask is None else torch.where(mask.unsqueeze(1), marked, self.cells[i])
                start_progress = torch.ones_like(v)
            else:
                start_progress = torch.zeros_like(v)
            if mask is None:
                self.start[i] = v
                self.progress[i] = start_progress
            else:
                self.start[i] = torch.where(mask, v, self.start[i])
                self.progress[i] = torch.where(mask, start_progress, self.progress[i])

    def update(self, env) -> torch.Tensor:
        """Read the step's end; returns progress int64 [M, N] (module docstring)."""
        for i, m in enumerate(self.milestones):
            v = self._value(i, env)
            if m.kind == "distinct":
                first, self.cells[i] = visit_cells(self.cells[i], v)
                self.progress[i] = self.progress[i] + first.to(torch.int64)
            elif i in self.start_bytes:
                self.progress[i] = self._new_bits(i, v)
            elif m.kind == "increase":
                bits = self.readers[i][0].field.bits
                self.progress[i] = self.progress[i] + torch.remainder(v - self.start[i], 1 << bits)
                self.start[i] = v
            else:
                self.progress[i] = torch.maximum(self.progress[i], v - self.start[i])
        return self.progress

    def episode_values(self, done: torch.Tensor) -> dict[str, torch.Tensor]:
        """{name: int32 [N]}: each milestone of the episodes that ended (0 elsewhere); ``at_least`` as 0/1."""
        out = {}
        for i, m in enumerate(self.milestones):
            value = self.progress[i] if m.at_least is None else (self.progress[i] >= m.at_least).to(torch.int64)
            out[m.name] = torch.where(done, value, 0).to(torch.int32)
        return out

    # ---- the feature's hooks
    def after_step(self, step: Step) -> None:
        self.update(step.env)

    def report(self, step: Step) -> None:
        step.info.update(self.episode_values(step.done))

    def reset(self, step: Step | None) -> None:
        if step is not None and step.none_ended:   # begin(all False) changes nothing
            return
        self.begin(self.env, None if step is None else step.done)

    # ---- checkpoints
    @property
    def state_nbytes(self) -> int:
        tensors = [self.start, self.progress, *self.cells.values(), *self.start_bytes.values()]
        return sum(t.numel() * t.element_size() for t in tensors)

    def state_dict(self) -> dict:
        return {"names": list(self.names), "start": self.start.cpu().clone(), "progress": self.progress.cpu().clone(),
                "cells": {self.names[i]: c.cpu().clone() for i, c in self.cells.items()},
                "start_bytes": {self.names[i]: b.cpu().clone() for i, b in self.start_bytes.items()}}

    def load_state_dict(self, state: dict | None, where: str = "milestones") -> None:
        state = state if state is not None else {}
        if list(state.get("names", [])) != self.names:
            raise StateError(f"{where}: milestones must be {self.names} (this env's task), got {state.get('names')}")
        for key in ("start", "progress"):
            src = torch.as_tensor(state[key])
            if src.shape != getattr(self, key).shape:
                raise StateError(f"{where}: {key} must have shape {list(getattr(self, key).shape)}, got "
                                 f"{list(src.shape)}")
            setattr(self, key, src.to(self.device, torch.int64).clone())
        for i in self.cells:
            src = torch.as_tensor(state["cells"][self.names[i]])
            if src.shape != self.cells[i].shape:
                raise StateError(f"{where}: cells[{self.names[i]!r}] must have shape {list(self.cells[i].shape)} "
                                 f"(its bits as saved), got {list(src.shape)}")
            self.cells[i] = src.to(self.device, torch.int64).clone()
        for i in self.start_bytes:
            saved = state.get("start_bytes", {})
            if self.names[i] not in saved:
                raise StateError(f"{where}: start_bytes[{self.names[i]!r}] is missing: the state was saved before "
                                 f"bits milestones counted the flags still set (count: now); resume with the code "
                                 f"that saved it, or set count: peak on {self.names[i]!r}")
            src = torch.as_tensor(saved[self.names[i]])
            if src.shape != self.start_bytes[i].shape:
                raise StateError(f"{where}: start_bytes[{self.names[i]!r}] must have shape "
                                 f"{list(self.start_bytes[i].shape)}, got {list(src.shape)}")
            self.start_bytes[i] = src.to(self.device, torch.uint8).clone()
