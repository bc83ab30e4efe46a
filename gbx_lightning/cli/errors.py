"""Every refusal the CLI reports, as one line and an exit status: the one place an exception becomes a message.

``config error: <field> <what was expected, what came>`` (exit status 2) for a bad config value, whoever found it
(the parser, an algorithm's or env's own check, Lightning's Trainer); ``error: <what>`` (exit status 2) for a run
that cannot start as asked (no checkpoint to resume, a damaged registry) and for what the parser refuses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from jsonargparse import ArgumentError
from lightning.fabric.utilities.exceptions import MisconfigurationException

from gbx_lightning.algos.config import old_layout_problem
from gbx_lightning.checks import ConfigError
from gbx_lightning.cli.runs import RunError
from gbx_lightning.envs.base import StateError
from gbx_lightning.registry import RegistryError

__all__ = ["error_line", "first_line", "old_layout_error", "parse_error_line"]


def error_line(err: BaseException) -> str | None:
    """The one line to print for a refusal (exit status 2), or None for an exception that is not one."""
    if isinstance(err, ConfigError):
        return f"config error: {err}"
    if isinstance(err, (RunError, RegistryError)):
        return f"error: {err}"
    if isinstance(err, StateError):   # a checkpoint's env state that this env cannot load
        return f"error: --ckpt_path: {err}"
    if isinstance(err, MisconfigurationException):  # a Trainer setting Lightning rejects once the run starts
        return f"config error: trainer rejected by Lightning: {first_line(err)}"
    if isinstance(err, ArgumentError):  # the parser's refusal
        return parse_error_line(str(err))
    return None


def old_layout_error(args: list[str]) -> ConfigError | None:
    """A ConfigError saying what changed when the model config in ``args`` (its ``--config`` files and the
    ``--model...`` options after them) is of an earlier layout: ``gbx_lightning.module.X`` class paths, ``env:
    gameboy`` with ``env_kwargs``. The parser refuses such a config anyway; this says why in one line."""
    import yaml

    model: dict = {}
    init: dict = {}
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if not eq and i + 1 < len(args):
            value = args[i + 1]
        if name == "--config":
            try:
                with open(value, encoding="utf-8") as f:
                    data = yaml.safe_load(f)
            except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError, MemoryError):
                continue   # the parser says what is wrong with the file
            given = data.get("model") if isinstance(data, dict) else None
            if isinstance(given, dict):
                model.update({k: v for k, v in given.items() if k != "init_args"})
                init.update(given.get("init_args") if isinstance(given.get("init_args"), dict) else {})
        elif name == "--model.class_path":
            model["class_path"] = value
        elif name.startswith(("--model.init_args.", "--model.")):
            key, _, option = name.removeprefix("--model.").removeprefix("init_args.").partition(".")
            if key.endswith("_kwargs"):
                init[key] = init.get(key) if isinstance(init.get(key), dict) else {}
                if option:
                    try:
                        init[key][option] = yaml.safe_load(value)
                    except yaml.YAMLError:
                        init[key][option] = value
            elif key in ("env", "policy") and not option and not value.lstrip().startswith("{"):
                init[key] = value
    problem = old_layout_problem(init)
    class_path = model.get("class_path")
    if isinstance(class_path, str) and class_path.startswith("gbx_lightning.module."):
        name = class_path.rpartition(".")[2]
        return ConfigError("model.class_path", f"{class_path} is of the old config layout: the algorithms live in "
                           f"gbx_lightning.algos now (class_path: gbx_lightning.algos.{name})"
                           + (f"; and the model {problem}" if problem else ""))
    return ConfigError("model", problem) if problem else None


def first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


# ---- the parser's refusals ------------------------------------------------------------------------------------
# jsonargparse reports a refusal as indented text only (no structured error): a tree of ``Parser key "K":`` levels,
# ``Problem with given class_path 'X':`` for a class's init args, and for a union every alternative's error as a
# "- " item. ``parse_error_line`` reads that tree back and keeps the leaf that got furthest (the longest key path),
# which names the field a user must fix; the text's wording is jsonargparse 4.x's (tests/test_cli.py pins it).
_KEY = re.compile(r'Parser key "([^"]+)":$')
_CLASS = re.compile(r"Problem with given class_path '([^']+)':$")
_GOT = ". Got value: "
_STRUCTURE = ("Does not validate against any of the Union subtypes", "Errors:", "Given value type:")


@dataclass
class _Leaf:
    keys: tuple[str, ...]    # the field, in the short spelling (model.env.stack_k: no init_args)
    text: str                # jsonargparse's complaint
    got: str | None          # the value it was given, as jsonargparse prints it
    owner: str | None        # the class whose option the field is (for an unknown option: what it offers)
    union: tuple[str, ...]   # the union's alternative it is one of, as printed ("<class '...StartFields'>")
    option: tuple[tuple[str, ...], str | None]   # the innermost field jsonargparse named, and its given value


def _tree(lines: list[str]) -> list[tuple[str, list]]:
    """Indented lines as (text, children) nodes."""
    nodes, i = [], 0
    while i < len(lines):
        indent = len(lines[i]) - len(lines[i].lstrip())
        j = i + 1
        while j < len(lines) and len(lines[j]) - len(lines[j].lstrip()) > indent:
            j += 1
        nodes.append((lines[i].strip(), _tree(lines[i + 1:j])))
        i = j
    return nodes


def _given(nodes) -> str | None:
    for text, _ in nodes:
        if text.startswith("Given value:"):
            return text.removeprefix("Given value:").strip().partition(_GOT)[0]
    return None


def _leaves(nodes, keys=(), owner=None, union=(), option=((), None), given=None) -> list[_Leaf]:
    out: list[_Leaf] = []
    subtypes: tuple[str, ...] = ()
    given = _given(nodes) or given
    for text, children in nodes:
        item = text.startswith("- ")
        text = text.removeprefix("- ")
        if text.startswith("Subtypes: ["):
            subtypes = tuple(part.strip() for part in text[len("Subtypes: ["):-1].split(", <"))
            continue
        if text.startswith(_STRUCTURE) or text.startswith("Given value:"):
            if text == "Errors:":
                for i, (alt, grandchildren) in enumerate(children):
                    out += _leaves([(alt, grandchildren)], keys, owner, subtypes[i:i + 1], option, given)
            continue
        head, _, tail = text.partition(" expects a function or a callable class: ")
        if tail:   # a class spec's own init args follow (model.env's, model.policy's); jsonargparse ends the
            text = tail   # block with the spec it was given: "Got value: Namespace(class_path='...', ...)"
            owner = _owner_of(_flat(children) or tail) or owner
        got = None
        if _GOT in text:
            text, _, got = text.partition(_GOT)
            got, _, spec = got.partition(_GOT)
            owner = _owner_of(spec or got) or owner
            if got.startswith("Namespace("):
                got = None
        key, cls = _KEY.search(text), _CLASS.match(text)
        if key:
            inner = keys + tuple(key.group(1).split("."))
            out += _leaves(children, inner, owner, union, (inner, _given(children)))
        elif cls:
            out += _leaves(children, keys, cls.group(1), union, option, given)
        elif item and children:
            out += _leaves(children, keys, owner, union, option, given)
        elif text:
            out.append(_Leaf(keys, text.rstrip("."), got if got is not None else given, owner, union, option))
    return out


def _flat(nodes) -> str:
    return " ".join(text + " " + _flat(children) for text, children in nodes)


def _owner_of(spec: str) -> str | None:
    found = re.search(r"class_path='([^']+)'", spec)
    return found.group(1) if found else None


def parse_error_line(message: str) -> str:
    """jsonargparse's parse error (often a dozen lines: a union's every alternative) as one line naming the field
    in the spelling of the command line: ``config error: model.env.stack_k must be an int, got abc``; a refusal
    that names no field (``unrecognized arguments: ...``) as it is, ``error: ...``."""
    lines = [line.rstrip() for line in message.strip().splitlines() if line.strip()]
    leaves = _leaves(_tree(lines))
    if not leaves or not leaves[0].keys:
        return f"error: {' '.join(line.strip() for line in lines) or message}"
    real = [leaf for leaf in leaves if "NoneType" not in leaf.text] or leaves
    depth = max(len(leaf.keys) for leaf in real)
    deepest = [leaf for leaf in real if len(leaf.keys) == depth]
    own = _owners_words(deepest[0])
    if own is not None:
        return f"config error: {own}"
    unknown = next((leaf for leaf in deepest if _unknown_key(leaf.text)), None)
    if unknown is not None:
        return f"config error: {_unknown_option(unknown)}"
    expected = [kind for kind in dict.fromkeys(_expected(leaf.text) for leaf in deepest) if kind]
    got = next((leaf.got for leaf in deepest if leaf.got is not None), None)
    text = f"must be {' or '.join(expected)}" if expected else f"is invalid: {deepest[0].text}"
    text = text if len(text) <= 300 else text[:300] + "..."
    return f"config error: {'.'.join(deepest[0].keys)} {text}" + (f", got {got}" if got is not None else "")


def _owners_words(leaf: _Leaf) -> str | None:
    """The refusal as the option's class words it, when it has its own check (``check_options``) and that refuses
    the value too: it names the field inside a mapping (``model.env.task.start.framez is not a field of Start``),
    where jsonargparse's text for a typed mapping names none."""
    keys, given = leaf.option
    cls = _import(leaf.owner)
    check = getattr(cls, "check_options", None)
    if check is None or given is None or len(keys) < 2:
        return None
    import ast

    from gbx_lightning.envs.base import OptionError

    try:
        value = ast.literal_eval(given)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    try:
        check(**{keys[-1]: value})
    except OptionError as err:
        if err.option == keys[-1] or err.option.startswith((f"{keys[-1]}.", f"{keys[-1]}[")):
            return f"{'.'.join(keys[:-1])}.{err.option} {err.message}"
    except Exception:  # noqa: BLE001 - only wording: the parser's own text stands
        return None
    return None


def _unknown_key(text: str) -> str | None:
    found = re.match(r"(?:Option|Key) '([^']+)' is not accepted|Unexpected keys: \{'([^']+)'", text)
    return (found.group(1) or found.group(2)) if found else None


def _unknown_option(leaf: _Leaf) -> str:
    """``model.env.levle is not an option of GameBoyEnv; options: ...``: what the class or mapping offers."""
    name = _unknown_key(leaf.text)
    where = ".".join((*leaf.keys, name))
    owner = _import(leaf.union[0].removeprefix("<class '").rstrip("'>")) if leaf.union else None
    if owner is not None and hasattr(owner, "__annotations__") and hasattr(owner, "__total__"):   # a TypedDict
        kind = owner.__name__.removesuffix("Fields")
        return f"{where} is not a field of {kind}; fields: {', '.join(owner.__annotations__)}"
    cls = _import(leaf.owner) if leaf.owner else None
    if cls is None:
        return f"{where} is not an option here"
    return f"{where} is not an option of {cls.__name__}; options: {', '.join(_options(cls, leaf))}"


def _options(cls, leaf: _Leaf) -> list[str]:
    """The init args a config may give ``cls``: its constructor's, but those the module passes (an env's num_envs
    and device, a policy's obs_shape and num_actions: the first two of a factory's) and ``**kwargs``."""
    import inspect

    params = []
    for klass in cls.__mro__:   # an algorithm's **kwargs go on to RLModule's arguments
        if "__init__" in vars(klass):
            params += [p for p in inspect.signature(klass.__init__).parameters.values() if p.name != "self"]
            if not any(p.kind is p.VAR_KEYWORD for p in params):
                break
    named = [p for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if len(leaf.keys) > 1:   # a class named inside the model (env, policy): a factory, its first two are supplied
        named = named[2:]
    return sorted(dict.fromkeys(p.name for p in named))


def _import(path: str | None):
    import importlib

    module, _, name = (path or "").rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError):
        return None


def _expected(text: str) -> str | None:
    """What jsonargparse's complaint says was expected, in our words: "Expected a <class 'int'>" -> "an int";
    None for the part of a complaint that says nothing to a user."""
    text = re.sub(r"<class '(?:[\w.]+\.)?(\w+)'>", r"\1", text)
    if text.startswith("Expected a path but "):   # a class path that is also tried as a file path
        return None
    if text.startswith("Expected a dot import path string"):
        return "a class_path spec ({class_path: module.Class, init_args: {...}})"
    subclass = re.fullmatch(r"Expected '([^']+)' to be a subclass of (\w+)\.?", text)
    if subclass:
        return f"a subclass of {subclass.group(2)} (got {subclass.group(1)})"
    literal = re.fullmatch(r"Expected a typing\.Literal\[(.*)\]", text)
    if literal:
        return f"one of [{literal.group(1)}]"
    if text.startswith("Expected a "):
        kind = text.removeprefix("Expected a ")
        return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"
    if text.startswith("Expected "):
        return text.removeprefix("Expected ")
    return None
