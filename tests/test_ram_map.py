"""A game's RAM map as data (envs/ram_map.py): orchard's map against the assembler's symbols, Pokemon Red's against
the party struct layout of the disassembly, numbers decoded from hand-written bytes (little and big endian, BCD,
arrays with a stride), names used by reward items, counters and milestones, one-line errors for bad fields, and a
map refused on another game's ROM."""

import pytest
import torch

from gbx_lightning.envs import GameBoyEnv, load_task
from gbx_lightning.envs.base import OptionError
from gbx_lightning.envs.ram_map import FieldReader, RamField, builtin_ram_maps, load_ram_map
from gbx_lightning.roms import asm, orchard, rom_source_path

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def test_orchard_map_is_the_assemblers_symbols():
    """Every field's meaning starts with the orchard.asm label it stands for; its address is that label's
    (hazard_y, hazard_dir: the second and third byte of each wHazards entry)."""
    path = rom_source_path("orchard")
    _, symbols = asm.assemble_with_symbols(path.read_text(), origin_file=str(path), include_dirs=(str(path.parent),))
    ram_map = load_ram_map("orchard")
    assert ram_map.titles == ["ORCHARD"] and len(ram_map.fields) == 24
    for f in ram_map.fields.values():
        label = f.meaning.split(":")[0]
        assert f.address == symbols[label] + {"hazard_y": 1, "hazard_dir": 2}.get(f.name, 0), f.name
    assert ram_map.fields["player_x"].address == orchard.PLAYER_X == 0xC107
    assert ram_map.fields["maze"].span == orchard.MAP_ROWS * orchard.MAP_STRIDE


def test_pokered_map_follows_the_disassembly_layout():
    """The party struct is 44 bytes (wPartyMon2 $D197 - wPartyMon1 $D16B in pokered.sym); the event flags are
    $D747-$D886 (wEventFlags up to wGrassRate $D887); HP big endian, money BCD."""
    ram_map = load_ram_map("pokered")
    f = ram_map.fields
    assert builtin_ram_maps() == ["hamlet", "orchard", "pokered"]
    assert ram_map.titles == ["POKEMON RED", "POKEMON BLUE"]
    assert (f["map"].address, f["y"].address, f["x"].address, f["badges"].address) == (0xD35E, 0xD361, 0xD362, 0xD356)
    assert f["event_flags"].address == 0xD747 and f["event_flags"].address + f["event_flags"].span == 0xD887
    for name in ("party_levels", "party_hp", "party_max_hp", "party_exp"):
        assert f[name].count == 6 and f[name].step == 0xD197 - 0xD16B == 44
    assert f["party_levels"].address == 0xD18C and f["party_hp"].address == 0xD16C
    assert f["party_hp"].endian == "big" and f["money"].bcd and f["money"].endian == "big"


def _raw(*rows):
    return torch.tensor(rows, dtype=torch.uint8)


def test_field_reader_decodes_hand_written_bytes():
    cpu = torch.device("cpu")
    little = FieldReader(RamField("w", 0xC000, size=2), cpu)
    big = FieldReader(RamField("hp", 0xC000, size=2, endian="big"), cpu)
    bcd_big = FieldReader(RamField("money", 0xC000, size=3, endian="big", bcd=True), cpu)
    bcd_little = FieldReader(RamField("score", 0xC000, size=2, bcd=True), cpu)
    raw = _raw([0x34, 0x12, 0x56], [0xFF, 0x00, 0x99])
    assert little.decode(raw[:, :2]).tolist() == [[0x1234], [0x00FF]]
    assert big.decode(raw[:, :2]).tolist() == [[0x3412], [0xFF00]]
    assert bcd_big.decode(raw).tolist() == [[341256], [1650099]]       # "34" "12" "56"; 0xFF reads 10*15+15 = 165
    assert bcd_little.decode(raw[:, :2]).tolist() == [[1234], [165]]   # low digits first: 34 + 100 * 12
    # an array of 3 one-byte numbers 4 bytes apart (orchard's beetles' x): bytes 0, 4, 8 of the span
    beetles = FieldReader(RamField("hx", 0xC000, count=3, stride=4), cpu)
    assert beetles.field.span == 9
    assert beetles.decode(_raw(list(range(9)))).tolist() == [[0, 4, 8]]
    # 2-byte big-endian numbers 3 bytes apart
    pairs = FieldReader(RamField("p", 0xC000, size=2, count=2, stride=3, endian="big"), cpu)
    assert pairs.decode(_raw([1, 2, 9, 3, 4])).tolist() == [[0x0102, 0x0304]]


def test_an_env_reads_fields_by_name():
    """The task's map on a real env: orchard level 2 in play, eight seeds left, the player at its start tile (9, 7)."""
    env = GameBoyEnv(2, task={"base": "orchard/level2", "start": {"variants": 1}}, cpu_threads=1)
    f = env.task.ram_map.fields
    assert FieldReader(f["seeds_left"], env.device)(env).tolist() == [[8], [8]]
    assert FieldReader(f["player_x"], env.device)(env).tolist() == [[72], [72]]
    assert FieldReader(f["player_y"], env.device)(env).tolist() == [[56], [56]]
    assert FieldReader(f["ladder_level"], env.device)(env).tolist() == [[2], [2]]


@pytest.mark.parametrize("ram_map, message", [
    ({"fields": {"x": 0x8000}}, "task.ram_map.fields.x.address must be a WRAM address, an int in 0xC000..0xDFFF, got "
                                "32768"),
    ({"fields": {"x": {"address": 0xC000, "size": 5}}}, "task.ram_map.fields.x.size must be an int in 1..4, got 5"),
    ({"fields": {"x": {"address": 0xDFFF, "size": 2}}}, "task.ram_map.fields.x ends at 0xE000, past WRAM's end 0xDFFF"),
    ({"fields": {"x": {"address": 0xC000, "endian": "middle"}}}, "task.ram_map.fields.x.endian must be one of "
                                                                 "['little', 'big'], got 'middle'"),
    ({"fields": {"x": {"adress": 0xC000}}}, "task.ram_map.fields.x.adress is not a field key; keys: address, size, "
                                            "count, stride, endian, bcd, meaning"),
    ({"fields": {"x": {"address": 0xC000, "size": 2, "stride": 1, "count": 2}}},
     "task.ram_map.fields.x.stride must be an int in 2..8192, got 1"),
    ({"fields": {}}, "task.ram_map.fields must be a mapping of names to fields ({address: ...} or an address), got {}"),
    ({"fields": {"x": 0xC000}, "titel": "X"}, "task.ram_map.titel is not a RAM map key; keys: game, titles, source, "
                                              "fields, world"),
    ("nosuchgame", "task.ram_map is neither a built-in RAM map (hamlet, orchard, pokered) nor a RAM map file: no "
                   "file at 'nosuchgame'"),
])
def test_bad_ram_map_fields_are_one_line_errors(ram_map, message):
    with pytest.raises(OptionError) as err:
        load_task({"ram_map": ram_map})
    assert str(err.value) == message


@pytest.mark.parametrize("task, message", [
    ({"base": "orchard/level1", "reward": [{"name": "explore", "fields": ["player_y", "playr_x"]}]},
     "task.reward[0].fields[1] is not a field of the task's RAM map (orchard): 'playr_x'; fields: game_state, "
     "game_over, level_clear, level, score, seeds_left, player_x, player_y, player_dir, facing, frame_count, rng, ... "
     "(24 fields)"),
    ({"reward": [{"name": "ram_bits", "field": "badges"}]},
     "task.reward[0].field names the field 'badges', but the task has no ram_map: add one (ram_map: FILE or a "
     "built-in, hamlet, orchard, pokered) or give a WRAM address"),
    ({"base": "orchard/level1", "reward": [{"name": "explore", "fields": ["hazard_x"]}]},
     "task.reward[0].fields[0] must be one number per env (a cell is a tuple of numbers), got hazard_x (0xC120, "
     "4 x 1 B) with count 4"),
    ({"base": "orchard/level1", "reward": [{"name": "ram", "field": "seeds_left", "address": 0xC106}]},
     "task.reward[0].address or field (a RAM map name): give exactly one of them"),
    ({"base": "orchard/level1", "counters": [{"name": "c", "field": "maze"}]},
     "task.counters[0].field must be one binary number of 1 or 2 bytes, little endian, got maze (0xC200, 512 x 1 B) "
     "(a milestone of kind increase reads any field)"),
    ({"base": "orchard/level1", "milestones": [{"name": "m", "kind": "peak", "field": "nope"}]},
     "task.milestones[0].field is not a field of the task's RAM map (orchard): 'nope'; fields: game_state, game_over, "
     "level_clear, level, score, seeds_left, player_x, player_y, player_dir, facing, frame_count, rng, ... "
     "(24 fields)"),
])
def test_names_that_are_not_in_the_map_are_one_line_errors(task, message):
    with pytest.raises(OptionError) as err:
        load_task(task)
    assert str(err.value) == message


def test_a_map_made_for_another_game_is_refused_on_this_rom(tmp_path):
    """Pokemon's map on orchard's ROM would read orchard's memory as Pokemon's: refused in one line."""
    env = GameBoyEnv(1, task="orchard/level1", cpu_threads=1)
    env.machines[0].save_state(tmp_path / "start.npz")
    with pytest.raises(OptionError) as err:
        GameBoyEnv.check_options(rom="orchard", task={"base": "pokered/explore", "start": {"state": str(tmp_path /
                                                                                                       "start.npz")}})
    assert str(err.value) == ("task.ram_map is for Pokemon Red/Blue (US) (cartridge titles ['POKEMON RED', "
                              "'POKEMON BLUE']), but orchard is 'ORCHARD': its addresses would read another game's "
                              "memory")


def test_the_pokered_task_names_the_files_its_user_supplies():
    """No ROM ships: the task refuses to run without the user's ROM and start state, naming which is missing."""
    with pytest.raises(OptionError, match=r"^rom is required by the task pokered/explore: a game that cannot ship"):
        GameBoyEnv.check_options(task="pokered/explore")
    with pytest.raises(OptionError, match=r"^task.start.state is required by the task pokered/explore"):
        GameBoyEnv.check_options(task="pokered/explore", rom="orchard")


def test_the_pokered_config_names_its_placeholder_rom():
    """configs/pokered_explore_ppo.yaml's env options pass every check up to the user's own ROM file."""
    from pathlib import Path

    import yaml
    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "configs" / "pokered_explore_ppo.yaml").read_text())
    options = config["model"]["init_args"]["env"]["init_args"]
    assert options["task"]["base"] == "pokered/explore"
    with pytest.raises(OptionError) as err:
        GameBoyEnv.check_options(**options)
    assert str(err.value) == ("rom is not a ROM we can run: no ROM file at 'roms/pokered.gb' "
                              "(built-in ROMs: hamlet, orchard)")
