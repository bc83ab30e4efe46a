"""The task's dataclasses (what ``envs/task.py`` documents and ``load_task`` returns) and their config types.

Each dataclass is one part of a task (``Start``, ``Template``, ``Counter``, ``Milestone``, ``Swarm``, ``Pool``,
``Heatmap``, ``Task``); ``TaskFields`` and friends are TypedDicts made from them, so the config parser checks every
key and value type of a task mapping against the dataclasses themselves. The values' ranges and the files are
``task_checks.py``'s.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal, Required, TypedDict, Union, get_type_hints

from .ram_map import RamMap

__all__ = ["Adapt", "AdaptFields", "Counter", "CounterFields", "Heatmap", "HeatmapFields", "MILESTONE_KINDS",
           "Milestone", "MilestoneFields", "Pool", "PoolFields", "RamGoal", "RamGoalFields", "Start", "StartFields", "Swarm", "SwarmFields", "Task", "TaskFields", "Template",
           "TemplateFields", "TrainStarts", "TrainStartsFields", "start_recipes", "start_states"]


@dataclass
class Start:
    """How episodes start: run once per start state, at construction, on a one-env machine; the states
    sit in a cache on the device and ended envs are restored from it."""
    state: str | list[str] | None = None
    inputs: str | list | None = None
    frames: int = 0
    variants: int = 4
    variant_frames: int | None = None
    ram: dict | None = None     # {RAM map field or WRAM address: value} written after ``frames``, before the variants
    score: float = 0.0          # a pool's score for its states (envs/features/pool.py): what reaching it is worth


@dataclass
class Adapt:
    """Train starts drawn by need (envs/features/curriculum.py): each start's pass rate over its recent training
    episodes (an episode from it passes where ``milestone`` rose by ``at_least``; no milestone: where it succeeded),
    and draws weighted to the starts that pass least, ``mix`` of them uniform so that a learnt stage keeps some."""
    milestone: str | None = None
    at_least: int = 1
    window: float = 100.0     # episodes per start the pass rate forgets over (exponentially)
    mix: float = 0.25


@dataclass
class TrainStarts:
    """Start states that only training episodes use: a curriculum (later stages of a game beside its start, so that
    every stage trains from the first update on, not only after the agent first reaches it); evaluation episodes
    start from the task's ``start`` alone, as a player plays. A training reset starts from one of ``starts`` (each a
    Start recipe, or a task whose ``start`` it is; uniformly over their states) with probability ``share``, else from
    ``start``; the pool's draw (``pool.sample``) comes on top of both."""
    starts: list = field(default_factory=list)
    share: float = 0.5
    adapt: Adapt | None = None   # draws among ``starts`` weighted by need, not uniform


@dataclass
class Template:
    """A screen that ends an episode: the PNG of ``tools/capture_goal.py`` (its JSON beside it gives the
    defaults); matched when mean |screen - template| / 3 over its region < ``tau`` for ``k_consecutive``
    steps (``envs/rewards.py``)."""
    path: str
    tau: float | None = None
    k_consecutive: int | None = None


@dataclass
class Counter:
    """A WRAM number counted per episode: its increase (mod ``2**bits``, ``bits`` default ``8 * size``)
    summed step by step, reported as ``info[name]`` on the step the episode ends. ``field`` (a RAM map name)
    instead of ``address``: its address and size."""
    name: str
    address: int | None = None
    size: Literal[1, 2] = 1
    bits: int | None = None
    field: str | None = None


MILESTONE_KINDS = ("distinct", "peak", "bits", "increase")


@dataclass
class Milestone:
    """Progress of an episode, reported as ``info[name]`` when it ends (``envs/features/milestones.py``):

        distinct  ``fields``: how many different tuples of their values the episode showed at step ends (its start
                  included; a bitset of ``bits`` cells, exact when the fields fit, else hashed): maps visited
        peak      ``field``: the highest rise of its value (the sum of its numbers) over the episode's start
        bits      ``field``: its 1 bits that were 0 at the episode's start (badges, event flags); ``count: now``
                  (the default): those set now, so the report is what the episode's end still holds (a flag a game
                  sets for a moment and clears, as Pokemon's starter screen does with the Pokedex, is not counted);
                  ``count: peak``: the highest rise of its number of 1 bits at any step
        increase  ``field``: the sum of its step-to-step increases (mod 2**bits: a counter that wraps)

    ``at_least: k``: report 1 where the value reached k, else 0 (a flag: "got the first badge"). ``world: true``
    (distinct, no fields): the cells are world tiles of the RAM map's world layout (``envs/world.py``)."""
    name: str
    kind: str
    field: str | int | None = None
    fields: list | None = None
    at_least: int | None = None
    bits: int = 4096
    count: str = "now"
    world: bool = False


@dataclass
class RamGoal:
    """A goal read from RAM (``envs/features/ram_goal.py``): the episode ends as a success at the step the RAM map
    ``field``'s value (the sum of its numbers) is at least ``at_least`` - where no one screen marks the goal
    (orchard's full game: four mazes cleared; Pokemon: a badge). A sibling of the goal template; either, or both."""
    field: str | int
    at_least: int


@dataclass
class Swarm:
    """Every ``every`` steps, the best env (highest score, not terminated) is copied to up to ``fraction`` of the
    envs, drawn at random among those scoring less: their episodes end as truncated and restart from its state."""
    every: int = 1000
    fraction: float = 0.25


@dataclass
class Pool:
    """A pool of states harvested from training envs (``envs/features/pool.py``). ``score``: milestone name -> weight, a
    state's progress (the milestones' sum, carried over from the state an episode started from). A state is
    harvested on a step its score rose (``when: rise``) or rose above every state harvested so far (``record``), at
    most ``per_step`` a step (the best), into ``max_mb`` MB on the device (the lowest-scored, then oldest, state is
    replaced when full). A reset starts from a pooled state with probability ``sample`` (weight
    ``(1 + score) ** priority``), else from the task's start states. ``swarm``: see Swarm (null: off)."""
    score: dict = field(default_factory=dict)
    max_mb: float = 64.0
    per_step: int = 4
    when: str = "rise"
    sample: float = 0.5
    priority: float = 0.0
    swarm: Swarm | None = None


@dataclass
class Heatmap:
    """A map-visit heatmap for the dashboards (``envs/features/heatmap.py``): visits counted at each (``y``, ``x``) of
    the RAM map's fields, over all training envs, drawn as the image ``agent/visit_heatmap``; with ``map``, only
    where that field equals ``map_value`` (one map of a game with many). ``cell``: coordinates per grid cell (8 for
    pixel coordinates on 8x8 tiles). ``world: true`` (no y, x, map): one picture of the RAM map's world layout
    (``envs/world.py``), every listed map at its place, outlined."""
    y: str | int | None = None
    x: str | int | None = None
    map: str | int | None = None
    map_value: int = 0
    cell: int = 1
    world: bool = False


@dataclass
class Task:
    """A game's task (module docstring): start recipe, goal/fail templates, reward, counters."""
    rom: str | None = None
    start: Start = field(default_factory=Start)
    goal: Template | None = None
    fail: Template | None = None
    ram_goal: RamGoal | None = None
    reward: str | list[dict] = "goal"
    step_cost: float | None = None
    alpha: float | None = None
    goal_bonus: float | None = None
    fail_penalty: float = -1.0
    counters: list[Counter] = field(default_factory=list)
    ram_map: RamMap | None = None
    milestones: list[Milestone] = field(default_factory=list)
    pool: Pool | None = None
    heatmap: Heatmap | None = None
    train_starts: TrainStarts | None = None
    requires: list[str] = field(default_factory=list)
    name: str = ""        # a label for logs and repr (a built-in task's name, a file's path)


# ---------------------------------------------------------------------------------------------- config types
def _fields_of(cls, doc: str, replace: dict | None = None, required: tuple[str, ...] = (),
               extra: dict | None = None) -> type:
    """A TypedDict with ``cls``'s fields, each optional but ``required``: a mapping of some of the fields, as a
    config spells a task. The parser checks every key and value type against it (an unknown field, a string for
    an int), and keeps only the keys given, so a ``base`` task's fields stay where the mapping says nothing.
    Built from the dataclass, so a new field is spelt in configs at once."""
    hints = get_type_hints(cls)
    fields = {}
    for f in dataclasses.fields(cls):
        kind = (replace or {}).get(f.name, hints[f.name])
        fields[f.name] = Required[kind] if f.name in required else kind
    spec = TypedDict(f"{cls.__name__}Fields", {**fields, **(extra or {})}, total=False)
    spec.__doc__ = doc
    return spec


StartFields = _fields_of(Start, "Start's fields, as a config spells them (any of them; the rest: the base's, or "
                                "Start's defaults).", replace={"ram": Union[dict[Union[str, int], int], None]})
AdaptFields = _fields_of(Adapt, "Train starts drawn by need: the fields of Adapt (the rest: its defaults).")
TrainStartsFields = _fields_of(TrainStarts, "Training-only starts: Start recipes and their share of resets.",
                               required=("starts",), replace={"starts": list[Union[str, StartFields]],
                                                              "adapt": Union[AdaptFields, None]})
TemplateFields = _fields_of(Template, "A template's fields (over the base's template, or path required).")
CounterFields = _fields_of(Counter, "A counter's fields (name, and address or a RAM map field, required).",
                          required=("name",))
MilestoneFields = _fields_of(Milestone, "A milestone's fields (name and kind required).", required=("name", "kind"))
RamGoalFields = _fields_of(RamGoal, "A RAM goal's fields (field and at_least required).",
                           required=("field", "at_least"))
HeatmapFields = _fields_of(Heatmap, "A heatmap's fields (y and x, or world: true).")
SwarmFields = _fields_of(Swarm, "Swarm's fields (the rest: Swarm's defaults).")
PoolFields = _fields_of(Pool, "A state pool's fields (score required).", required=("score",),
                        replace={"score": dict[str, float], "swarm": Union[SwarmFields, None]})
TaskFields = _fields_of(Task, "A task as a mapping of its fields (module docstring); ``base`` names the task they "
                              "replace fields of.",
                        replace={"start": Union[StartFields, None], "goal": Union[str, TemplateFields, None],
                                 "fail": Union[str, TemplateFields, None], "counters": list[CounterFields],
                                 # a built-in map's name, a RAM map file, or one inline (ram_map.py checks it)
                                 "ram_map": Union[str, dict, None], "milestones": list[MilestoneFields],
                                 "pool": Union[PoolFields, None], "heatmap": Union[HeatmapFields, None],
                                 "ram_goal": Union[RamGoalFields, None],
                                 "train_starts": Union[TrainStartsFields, None]},
                        extra={"base": str})   # a built-in task name or a task file



def start_states(task: Task | Start) -> list:
    """The start's state files (None: power-on), one cache group each (of a task: its ``start``'s)."""
    start = task.start if isinstance(task, Task) else task
    return list(start.state) if isinstance(start.state, list) else [start.state]


def start_recipes(task: Task) -> list[tuple[str, Start]]:
    """(where, recipe) of every start recipe of the task: ``start`` first (what evaluation starts from), then the
    training-only ``train_starts`` in order, as the start cache lays out their rows."""
    extra = task.train_starts.starts if task.train_starts is not None else []
    return [("task.start", task.start)] + [(f"task.train_starts.starts[{i}]", s) for i, s in enumerate(extra)]
