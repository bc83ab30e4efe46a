"""Every refusal the CLI reports, as one line and an exit status: the one place an exception becomes a message.

``config error: <field> <what was expected, what came>`` (exit status 2) for a bad config value, whoever found it
(the parser, an algorithm's or env's own check, Lightning's Trainer); ``error: <what>`` (exit status 2) for a run
that cannot start as asked (no checkpoint to resume, a damaged registry) and for what the parser refuses.
"""

from __future__ import annotations

from jsonargparse import ArgumentError
from lightning.fabric.utilities.exceptions import MisconfigurationException

from gbx_lightning.checks import ConfigError
from gbx_lightning.cli.runs import RunError
from gbx_lightning.registry import RegistryError

__all__ = ["error_line", "first_line", "parse_error_line"]


def error_line(err: BaseException) -> str | None:
    """The one line to print for a refusal (exit status 2), or None for an exception that is not one."""
    if isinstance(err, ConfigError):
        return f"config error: {err}"
    if isinstance(err, (RunError, RegistryError)):
        return f"error: {err}"
    if isinstance(err, MisconfigurationException):  # a Trainer setting Lightning rejects once the run starts
        return f"config error: trainer rejected by Lightning: {first_line(err)}"
    if isinstance(err, ArgumentError):  # the parser's refusal
        return f"error: {parse_error_line(str(err))}"
    return None


def first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def parse_error_line(message: str) -> str:
    """jsonargparse's parse error (often a dozen lines: a union's every alternative) as one line naming the key:
    'model.init_args.lr: expected float, got nan'. A one-line message is returned as it is."""
    import re

    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    if len(lines) <= 1:
        return lines[0] if lines else message
    keys, details, given, in_class = [], [], None, False
    noise = ("Does not validate against any of", "Subtypes:", "Errors:", "Given value type:",
             "Expected a <class 'NoneType'>")
    for line in lines:
        line = line.removeprefix("- ").strip()
        key = re.match(r'^Parser key "([^"]+)":', line)
        if key:
            keys += (["init_args"] if in_class else []) + [key.group(1)]
            details, given, in_class = [], None, False
        elif line.startswith("Problem with given class_path"):
            in_class = True
        elif line.startswith("Given value:"):
            given = given or line.removeprefix("Given value:").strip()
        elif line and not line.startswith(noise):
            details.append(line)
    if in_class:
        keys.append("init_args")
    nested = re.fullmatch(r"NestedArg\(key='([^']*)', val=(.*)\)", given or "")
    if nested:
        given = nested.group(2)
    text = "; ".join(dict.fromkeys(details)) or "invalid value"
    text = re.sub(r"<class '(?:[\w.]+\.)?(\w+)'>", r"\1", text).replace(". Got value: ", ", got ")
    text = (text[:1].lower() + text[1:]).replace("a int", "an int")
    if "got" not in text and given is not None:
        text += f", got {given}"
    key = ".".join(keys) or "arguments"
    return f"{key}: {text}" if len(text) < 300 else f"{key}: {text[:300]}..."
