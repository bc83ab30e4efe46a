"""The start-state cache: the rows every reset of a GameBoyEnv restores from, on the device.

Rows ``0 .. num_start_states - 1`` are the task's start states, made once at construction on a one-env machine
(``build_start_rows``: power-on or a state file, ``frames`` frames of the start inputs, its RAM writes, then
``variants`` states ``variant_frames`` idle frames apart): ``start``'s first (``num_task_starts`` rows, where
evaluation episodes start), then the training-only ``train_starts``'. A feature may add rows after them (the state
pool: ``add_rows``) and fill them from running envs (``store``). Beside each row's machine state the cache keeps its
frame stack (the first observation of an episode that starts there) and named per-row columns that features register
(``add_column``: the goal distance of the row's screen, a pooled state's score), so that one masked restore plus a
gather of the columns by slot starts an episode anywhere: no disk I/O, no Python loop over envs, no host sync.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch
import warp as wp

from gbx_lightning.emu import VecGameBoy
from gbx_lightning.emu import state as S
from gbx_lightning.emu.buttons import read_trace, trace_segments

from .task import Task, load_start_state, start_recipes, start_states
from .task_checks import ram_write

__all__ = ["StartCache", "build_start_rows", "machine_state_bytes"]


def machine_state_bytes(cart) -> int:
    """One machine's state in bytes for cartridge ``cart`` (``emu.state``'s per-env layout), nothing built."""
    return sum(int(np.prod(shape)) * np.dtype(dt).itemsize for _, shape, dt in
               S.per_env_layout(int(cart.ram_bytes), len(S.mbc_power_on_regs(cart.spec()))))


def build_start_rows(task: Task, rom_source, device: str, frames_per_step: int) -> tuple[list[dict], np.ndarray,
                                                                                        int, np.ndarray]:
    """Run each start recipe of the task (``start``, then the training-only ``train_starts``) for each of its
    states on a one-env machine on Warp ``device``: (their machine rows, their screens uint8 [S, 72, 80], how many
    rows are ``start``'s: the first ones, each row's recipe's ``score`` float32 [S])."""
    probe = VecGameBoy(rom_source, 1, device=device)
    wram = wp.to_torch(probe.state_array("wram"))
    rows, screens, scores, own = [], [], [], 0
    for recipe, (at, start) in enumerate(start_recipes(task)):
        trace = read_trace(start.inputs, f"{at}.inputs") if start.inputs is not None else [(0, 0)]
        variant_frames = frames_per_step if start.variant_frames is None else start.variant_frames
        writes = [ram_write(task.ram_map, ref, value, f"{at}.ram") for ref, value in (start.ram or {}).items()]
        for src in start_states(start):
            probe.reset()
            if src is not None:
                load_start_state(probe, src)
            for count, mask in trace_segments(trace, start.frames):
                probe.run_frames(count, buttons=np.full(1, mask, np.uint8), render="obs")
            for address, data in writes:   # the game reads them from its next instruction on
                wram[0, address - 0xC000:address - 0xC000 + len(data)] = torch.tensor(list(data), dtype=torch.uint8)
            for v in range(start.variants):
                if v:
                    probe.run_frames(variant_frames, render="obs")
                rows.append(probe.env_rows(0))
                screens.append(rows[-1]["obs"])
                scores.append(start.score)
        if recipe == 0:   # the task's own start: evaluation's rows
            own = len(rows)
    return rows, np.stack(screens), own, np.asarray(scores, np.float32)


class StartCache:
    """The cache (module docstring) for the machines of one env (its CPU shards, ``bounds`` their env ranges).

    ``snapshot``: the machine rows (``emu.machine.Snapshot``); ``stack``: uint8 [rows, K, 72, 80] and ``words``
    the same memory as int64 words for the stack kernel; ``columns``: name -> [rows] tensor."""

    def __init__(self, machines: list[VecGameBoy], bounds: list[int], rows: list[dict], screens: np.ndarray,
                 stack_k: int, device: torch.device):
        self.machines, self.bounds, self.stack_k, self.device = machines, bounds, stack_k, device
        self._rows = rows
        self.num_start_states = len(rows)
        self.snapshot = machines[0].make_cache(rows)
        self.screens = torch.from_numpy(screens).to(device)     # the start states' screens [S, 72, 80]
        self.columns: dict[str, torch.Tensor] = {}
        self._live: dict[str, Callable[[], torch.Tensor]] = {}
        self._layout()

    @property
    def num_rows(self) -> int:
        return self.snapshot.num_envs

    def _layout(self) -> None:
        """The stacks (the start screens repeated K times, zeros for added rows) and the store buffers, for
        ``num_rows`` rows."""
        rows = self.num_rows
        screens = torch.cat([self.screens, self.screens.new_zeros((rows - self.num_start_states, 72, 80))])
        self.stack = screens[:, None].expand(-1, self.stack_k, -1, -1).contiguous()
        self.words = wp.from_torch(self.stack.view(torch.int64).reshape(rows, -1))
        self._mask = torch.zeros(rows, dtype=torch.uint8, device=self.device)
        self._envs = [torch.full((rows,), -1, dtype=torch.int32, device=self.device) for _ in self.machines]
        self._mask_wp = wp.from_torch(self._mask)
        self._envs_wp = [wp.from_torch(t) for t in self._envs]

    def add_rows(self, count: int) -> int:
        """``count`` more rows after the existing ones (zeros until ``store`` fills them; columns 0); returns the
        first new row. At construction only: it reallocates the cache."""
        first = self.num_rows
        self.snapshot = self.machines[0].make_pool(self._rows, first + count)
        self._layout()
        for name, column in self.columns.items():
            self.columns[name] = torch.cat([column, column.new_zeros(count)])
        return first

    def add_column(self, name: str, start_values: torch.Tensor, live: Callable[[], torch.Tensor]) -> None:
        """A per-row value: ``start_values`` [num_start_states] for the start states (0 for added rows);
        ``live()`` -> [N] each env's value now, what ``store`` writes into the rows it fills."""
        if name in self.columns:
            raise ValueError(f"add_column: {name!r} is already a column of the start cache")
        column = start_values.new_zeros(self.num_rows)
        column[:self.num_start_states] = start_values
        self.columns[name] = column
        self._live[name] = live

    def store(self, rows: torch.Tensor, src: torch.Tensor, ok: torch.Tensor, stacks: torch.Tensor) -> None:
        """Row rows[h] <- env src[h] where ok[h]: its machine (``VecGameBoy.store_into``, one recorded launch per
        state array and shard), ``stacks[h]`` (its frame stack now) and every column's live value. Rows where ok
        is False keep what they hold; ``rows`` are distinct."""
        self._mask.zero_()
        self._mask[rows] = ok.to(torch.uint8)
        for t, lo in zip(self._envs, self.bounds):
            t[rows] = (src - lo).to(torch.int32)     # out of this shard's range: store_into copies nothing
        for gb, envs in zip(self.machines, self._envs_wp):
            gb.store_into(self.snapshot, envs, self._mask_wp)
        keep = ok.view(-1, *([1] * (stacks.dim() - 1)))
        self.stack[rows] = torch.where(keep, stacks, self.stack[rows])
        for name, column in self.columns.items():
            column[rows] = torch.where(ok, self._live[name]()[src].to(column.dtype), column[rows])

    def machine_rows(self, rows: torch.Tensor) -> dict[str, torch.Tensor]:
        """The machine state of ``rows`` (CPU copies, by state array)."""
        return {name: wp.to_torch(arr)[rows].cpu().clone() for name, arr in self.snapshot.arrays.items()}

    def put_machine_rows(self, rows: torch.Tensor, arrays: dict[str, torch.Tensor], where: str) -> None:
        """Write ``machine_rows``' output back into ``rows``; a shape that does not fit is a StateError."""
        from .base import StateError
        for name, arr in self.snapshot.arrays.items():
            view = wp.to_torch(arr)
            if name not in arrays:
                raise StateError(f"{where}: machines[{name!r}] is missing")
            src = torch.as_tensor(arrays[name])
            if tuple(src.shape[1:]) != tuple(view.shape[1:]) or src.shape[0] != rows.shape[0]:
                raise StateError(f"{where}: machines[{name!r}] must be [{rows.shape[0]}, {list(view.shape[1:])}], got "
                                 f"{list(src.shape)}")
            view[rows] = src.to(self.device, view.dtype)
