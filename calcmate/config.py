"""Config files for every stage: YAML, ``--set key=value`` dotted overrides, pydantic validation.

One way to configure a stage: ``load_config(path, overrides, Model)``. Errors name the field.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


class ConfigError(ValueError):
    """A config that cannot be used; the message names the offending field."""


def parse_override(item: str) -> tuple[list[str], Any]:
    if "=" not in item:
        raise ConfigError(f"override {item!r} is not key=value")
    key, raw = item.split("=", 1)
    if not key.strip():
        raise ConfigError(f"override {item!r} has an empty key")
    return key.strip().split("."), yaml.safe_load(raw) if raw != "" else ""


def apply_overrides(data: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """Apply ``a.b.c=value`` overrides; values are parsed as YAML scalars (numbers, bools, lists)."""
    for item in overrides:
        path, value = parse_override(item)
        node = data
        for p in path[:-1]:
            nxt = node.get(p)
            if nxt is None:
                nxt = node[p] = {}
            if not isinstance(nxt, dict):
                raise ConfigError(f"override {item!r}: {p!r} is not a mapping")
            node = nxt
        node[path[-1]] = value
    return data


def read_yaml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file {str(p)!r} does not exist")
    data = yaml.safe_load(p.read_text()) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {str(p)!r} must hold a mapping at top level")
    return data


def format_validation_error(e: ValidationError, source: str = "config") -> str:
    lines = [f"invalid {source}:"]
    for err in e.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "<root>"
        lines.append(f"  {loc}: {err['msg']}")
    return "\n".join(lines)


def load_config(path: str | Path | None, overrides: Sequence[str], model: type[M],
                context: dict[str, Any] | None = None) -> M:
    """Read YAML (optional), apply overrides, validate with ``model``; raise ConfigError naming fields.

    ``context`` reaches the model's validators (pydantic validation context), e.g. ``{"plan_only": True}``
    for a dry run that only plans and so need not reach the model or the dataset."""
    data = read_yaml(path) if path else {}
    data = apply_overrides(data, overrides or [])
    try:
        return model.model_validate(data, context=context)
    except ValidationError as e:
        raise ConfigError(format_validation_error(e, str(path) if path else "config")) from None


def add_config_args(parser: argparse.ArgumentParser, *, out: bool = True, config_required: bool = False) -> None:
    """The arguments every stage script shares: --config, --set, and --out where it writes results."""
    parser.add_argument("--config", type=Path, required=config_required, help="YAML config file")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", nargs="+",
        help="override a config value with a dotted key, e.g. --set num_tasks=20 teacher.concurrency=8",
    )
    if out:
        parser.add_argument("--out", type=Path, help="output directory (overrides the config's out/output_dir)")


def flat_overrides(args: argparse.Namespace) -> list[str]:
    return [x for group in (args.overrides or []) for x in (group if isinstance(group, list) else [group])]


def exit_on_config_error(e: ConfigError) -> None:
    print(f"error: {e}", file=sys.stderr)
    raise SystemExit(2)
