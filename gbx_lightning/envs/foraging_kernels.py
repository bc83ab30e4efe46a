"""ForagingEnv's Warp side (``envs/foraging.py`` has the rules): the world's constants, its parameters as one struct,
and the kernels that reset, render and step every env (one thread per env), with the per-env PCG draws they use.
"""
from __future__ import annotations

import warp as wp

__all__ = ["ACTION_NAMES", "CELL_NAMES", "EMPTY", "FOOD", "ForagingParams", "GROUND_TRUTH_CHANNELS", "NUM_CHANNELS",
           "OBS_MODES", "OUT_EPISODE_LENGTH", "OUT_EPISODE_RETURN", "OUT_FOOD_EATEN", "OUT_POISON_EATEN", "OUT_REWARD",
           "OUT_SUCCESS", "OUT_TERMINATED", "OUT_TRUNCATED", "POISON", "PROXY_CHANNELS", "PROXY_POISON_VALUE", "WALL",
           "render_kernel", "reset_kernel", "step_kernel"]

EMPTY, WALL, FOOD, POISON = wp.constant(0), wp.constant(1), wp.constant(2), wp.constant(3)
CELL_NAMES = ("empty", "wall", "food", "poison")
GROUND_TRUTH_CHANNELS = ("empty", "wall", "food", "poison", "self", "out_of_bounds")
PROXY_CHANNELS = ("empty", "wall", "interestingness", "unused", "self", "out_of_bounds")
ACTION_NAMES = ("N", "NE", "E", "SE", "S", "SW", "W", "NW")
NUM_CHANNELS = wp.constant(6)
PROXY_POISON_VALUE = wp.constant(0.9)  # interestingness of poison; food is 1.0
OBS_MODES = ("ground_truth", "proxy")
# rows of the packed per-step outputs (one copy per dtype instead of one per field)
OUT_REWARD, OUT_EPISODE_RETURN = wp.constant(0), wp.constant(1)  # float32 rows
OUT_TERMINATED, OUT_TRUNCATED, OUT_SUCCESS = wp.constant(0), wp.constant(1), wp.constant(2)  # bool rows
OUT_EPISODE_LENGTH, OUT_FOOD_EATEN, OUT_POISON_EATEN = wp.constant(0), wp.constant(1), wp.constant(2)  # int32 rows
_SAMPLE_TRIES = wp.constant(32)  # rejection-sampling tries for a free cell before a (deterministic) scan


@wp.struct
class ForagingParams:
    size: int
    view: int
    start_energy: float
    step_cost: float
    food_energy: float
    poison_energy: float
    food_min: int
    food_max: int
    poison_min: int
    poison_max: int
    wall_min: int
    wall_max: int
    max_steps: int
    shaping_scale: float
    shaping_gamma: float
    proxy: int
    respawn: int


@wp.func
def _draw(rng: wp.array(dtype=wp.uint32), env: int, n: int) -> int:
    """Uniform int in [0, n) from env's own stream (n >= 1)."""
    state = rng[env]
    r = wp.randi(state, 0, n)
    rng[env] = state
    return r


@wp.func
def _move_dy(a: int) -> int:
    # N NE E SE S SW W NW
    if a == 0 or a == 1 or a == 7:
        return -1
    if a == 3 or a == 4 or a == 5:
        return 1
    return 0


@wp.func
def _move_dx(a: int) -> int:
    if a == 1 or a == 2 or a == 3:
        return 1
    if a == 5 or a == 6 or a == 7:
        return -1
    return 0


@wp.func
def _free_cell(p: ForagingParams, env: int, grid: wp.array3d(dtype=wp.int32), rng: wp.array(dtype=wp.uint32),
               ay: int, ax: int) -> int:
    """A random empty interior cell other than the agent's, as y * size + x; -1 if there is none.

    Uniform rejection sampling; after _SAMPLE_TRIES misses (a crowded grid) a cyclic scan from a
    random start finds a free cell if one exists.
    """
    inner = p.size - 2
    n = inner * inner
    for _ in range(_SAMPLE_TRIES):
        k = _draw(rng, env, n)
        y = 1 + k // inner
        x = 1 + k % inner
        if grid[env, y, x] == EMPTY and not (y == ay and x == ax):
            return y * p.size + x
    start = _draw(rng, env, n)
    for i in range(n):
        k = (start + i) % n
        y = 1 + k // inner
        x = 1 + k % inner
        if grid[env, y, x] == EMPTY and not (y == ay and x == ax):
            return y * p.size + x
    return -1


@wp.func
def _place(p: ForagingParams, env: int, grid: wp.array3d(dtype=wp.int32), rng: wp.array(dtype=wp.uint32),
           ay: int, ax: int, kind: int):
    c = _free_cell(p, env, grid, rng, ay, ax)
    if c >= 0:
        grid[env, c // p.size, c % p.size] = kind


@wp.func
def _draw_count(rng: wp.array(dtype=wp.uint32), env: int, low: int, high: int) -> int:
    return low + _draw(rng, env, high - low + 1)


@wp.func
def _new_episode(p: ForagingParams, env: int, grid: wp.array3d(dtype=wp.int32), agent: wp.array2d(dtype=wp.int32),
                 energy: wp.array(dtype=float), step_count: wp.array(dtype=wp.int32),
                 episode_return: wp.array(dtype=float), food_eaten: wp.array(dtype=wp.int32),
                 poison_eaten: wp.array(dtype=wp.int32), rng: wp.array(dtype=wp.uint32)):
    """Draw a fresh world for one env: border walls, agent, then interior walls, food and poison."""
    last = p.size - 1
    for y in range(p.size):
        for x in range(p.size):
            cell = EMPTY
            if y == 0 or x == 0 or y == last or x == last:
                cell = WALL
            grid[env, y, x] = cell
    inner = p.size - 2
    k = _draw(rng, env, inner * inner)
    ay = 1 + k // inner
    ax = 1 + k % inner
    agent[env, 0] = ay
    agent[env, 1] = ax
    for _ in range(_draw_count(rng, env, p.wall_min, p.wall_max)):
        _place(p, env, grid, rng, ay, ax, WALL)
    for _ in range(_draw_count(rng, env, p.food_min, p.food_max)):
        _place(p, env, grid, rng, ay, ax, FOOD)
    for _ in range(_draw_count(rng, env, p.poison_min, p.poison_max)):
        _place(p, env, grid, rng, ay, ax, POISON)
    energy[env] = p.start_energy
    step_count[env] = 0
    episode_return[env] = 0.0
    food_eaten[env] = 0
    poison_eaten[env] = 0


@wp.func
def _potential(p: ForagingParams, env: int, grid: wp.array3d(dtype=wp.int32), ay: int, ax: int) -> float:
    """Phi(s) = -shaping_scale * Chebyshev distance to the nearest food (0 without food)."""
    best = p.size * 2
    for y in range(p.size):
        for x in range(p.size):
            if grid[env, y, x] == FOOD:
                best = wp.min(best, wp.max(wp.abs(y - ay), wp.abs(x - ax)))
    if best == p.size * 2:
        return 0.0
    return -p.shaping_scale * float(best)


@wp.func
def _render(p: ForagingParams, env: int, grid: wp.array3d(dtype=wp.int32), ay: int, ax: int, e: float,
            out: wp.array4d(dtype=float), out2: wp.array4d(dtype=float), both: int):
    """Write env's egocentric C x V x V view (channel layout in the module docstring) into out[env],
    and into out2[env] as well if `both` (one pass instead of render + copy)."""
    half = p.view // 2
    for i in range(p.view):
        for j in range(p.view):
            gy = ay - half + i
            gx = ax - half + j
            c_empty = 0.0
            c_wall = 0.0
            c_food = 0.0
            c_poison = 0.0
            c_self = 0.0
            c_out = 0.0
            if gy < 0 or gx < 0 or gy >= p.size or gx >= p.size:
                c_out = 1.0
            elif i == half and j == half:
                c_self = e / p.start_energy
            else:
                cell = grid[env, gy, gx]
                if cell == EMPTY:
                    c_empty = 1.0
                elif cell == WALL:
                    c_wall = 1.0
                elif cell == FOOD:
                    c_food = 1.0
                elif p.proxy != 0:
                    c_food = PROXY_POISON_VALUE
                else:
                    c_poison = 1.0
            out[env, 0, i, j] = c_empty
            out[env, 1, i, j] = c_wall
            out[env, 2, i, j] = c_food
            out[env, 3, i, j] = c_poison
            out[env, 4, i, j] = c_self
            out[env, 5, i, j] = c_out
            if both != 0:
                out2[env, 0, i, j] = c_empty
                out2[env, 1, i, j] = c_wall
                out2[env, 2, i, j] = c_food
                out2[env, 3, i, j] = c_poison
                out2[env, 4, i, j] = c_self
                out2[env, 5, i, j] = c_out


@wp.kernel(enable_backward=False)
def reset_kernel(p: ForagingParams, seed: int, reseed: int, grid: wp.array3d(dtype=wp.int32),
                  agent: wp.array2d(dtype=wp.int32), energy: wp.array(dtype=float),
                  step_count: wp.array(dtype=wp.int32), episode_return: wp.array(dtype=float),
                  food_eaten: wp.array(dtype=wp.int32), poison_eaten: wp.array(dtype=wp.int32),
                  rng: wp.array(dtype=wp.uint32), obs: wp.array4d(dtype=float)):
    env = wp.tid()
    if reseed != 0:
        rng[env] = wp.rand_init(seed, env)
    _new_episode(p, env, grid, agent, energy, step_count, episode_return, food_eaten, poison_eaten, rng)
    _render(p, env, grid, agent[env, 0], agent[env, 1], energy[env], obs, obs, 0)


@wp.kernel(enable_backward=False)
def render_kernel(p: ForagingParams, grid: wp.array3d(dtype=wp.int32), agent: wp.array2d(dtype=wp.int32),
                   energy: wp.array(dtype=float), obs: wp.array4d(dtype=float)):
    env = wp.tid()
    _render(p, env, grid, agent[env, 0], agent[env, 1], energy[env], obs, obs, 0)


@wp.kernel(enable_backward=False)
def step_kernel(p: ForagingParams, actions: wp.array(dtype=wp.int32),
                 # state
                 grid: wp.array3d(dtype=wp.int32), agent: wp.array2d(dtype=wp.int32), energy: wp.array(dtype=float),
                 step_count: wp.array(dtype=wp.int32), episode_return: wp.array(dtype=float),
                 food_eaten: wp.array(dtype=wp.int32), poison_eaten: wp.array(dtype=wp.int32),
                 invalid_actions: wp.array(dtype=wp.int32), rng: wp.array(dtype=wp.uint32),
                 # outputs (rows: OUT_* constants)
                 obs: wp.array4d(dtype=float), final_obs: wp.array4d(dtype=float),
                 out_f32: wp.array2d(dtype=float), out_bool: wp.array2d(dtype=wp.bool),
                 out_i32: wp.array2d(dtype=wp.int32)):
    env = wp.tid()
    ay = agent[env, 0]
    ax = agent[env, 1]
    phi_before = 0.0
    if p.shaping_scale != 0.0:
        phi_before = _potential(p, env, grid, ay, ax)

    a = actions[env]
    if a < 0 or a > 7:
        invalid_actions[env] = invalid_actions[env] + 1
    else:
        ny = ay + _move_dy(a)
        nx = ax + _move_dx(a)
        if grid[env, ny, nx] != WALL:
            ay = ny
            ax = nx
    agent[env, 0] = ay
    agent[env, 1] = ax

    e_before = energy[env]
    e = e_before - p.step_cost
    cell = grid[env, ay, ax]
    if cell == FOOD or cell == POISON:
        grid[env, ay, ax] = EMPTY
        if cell == FOOD:
            e = e + p.food_energy
            food_eaten[env] = food_eaten[env] + 1
        else:
            e = e - p.poison_energy
            poison_eaten[env] = poison_eaten[env] + 1
        if p.respawn != 0:
            _place(p, env, grid, rng, ay, ax, cell)
    e = wp.max(e, 0.0)
    energy[env] = e
    t = step_count[env] + 1
    step_count[env] = t

    term = e <= 0.0
    trunc = (not term) and t >= p.max_steps
    r = e - e_before
    if p.shaping_scale != 0.0:
        phi_after = 0.0  # Phi(terminal) = 0
        if not term:
            phi_after = _potential(p, env, grid, ay, ax)
        r = r + p.shaping_gamma * phi_after - phi_before
    ret = episode_return[env] + r
    episode_return[env] = ret
    out_f32[OUT_REWARD, env] = r
    out_bool[OUT_TERMINATED, env] = term
    out_bool[OUT_TRUNCATED, env] = trunc
    out_bool[OUT_SUCCESS, env] = trunc

    if term or trunc:
        _render(p, env, grid, ay, ax, e, final_obs, obs, 0)
        out_f32[OUT_EPISODE_RETURN, env] = ret
        out_i32[OUT_EPISODE_LENGTH, env] = t
        out_i32[OUT_FOOD_EATEN, env] = food_eaten[env]
        out_i32[OUT_POISON_EATEN, env] = poison_eaten[env]
        _new_episode(p, env, grid, agent, energy, step_count, episode_return, food_eaten, poison_eaten, rng)
        _render(p, env, grid, agent[env, 0], agent[env, 1], energy[env], obs, obs, 0)
    else:
        _render(p, env, grid, ay, ax, e, final_obs, obs, 1)  # nothing ended: obs == final_obs
        out_f32[OUT_EPISODE_RETURN, env] = 0.0
        out_i32[OUT_EPISODE_LENGTH, env] = 0
        out_i32[OUT_FOOD_EATEN, env] = 0
        out_i32[OUT_POISON_EATEN, env] = 0
