"""One config loader for the three stages: defaults <- profile <- YAML file <- overrides.

Each stage's config is a dataclass subclassing TRL's own config (SFTConfig, GRPOConfig, ...),
so every TRL/transformers training field works in a hatkit YAML file unchanged; this module
only layers the sources and rejects mistakes early: an unknown key is named with its file,
line and the closest field name, a bad profile or a value of the wrong type says which.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ..harness.yaml_lines import YamlSyntaxError, load_with_lines

STAGES = ("sft", "opd", "rl")


class ConfigError(ValueError):
    """A training config that cannot be used; the message names the source and the key."""


def stage_module(stage: str) -> Any:
    """`hatkit.train.<stage>` (imported lazily: each pulls in torch and TRL)."""
    if stage not in STAGES:
        raise ConfigError(f"unknown stage '{stage}': expected one of {', '.join(STAGES)}")
    return importlib.import_module(f"hatkit.train.{stage}")


def field_names(config_class: type) -> set[str]:
    return {f.name for f in dataclasses.fields(config_class) if f.init}


def _check_keys(data: Mapping[str, Any], names: set[str], source: str,
                lines: Mapping[tuple[str | int, ...], int] | None = None) -> None:
    for key in data:
        if key in names:
            continue
        where = source
        if lines is not None and (key,) in lines:
            where = f"{source}:{lines[(key,)]}"
        close = difflib.get_close_matches(str(key), sorted(names), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ConfigError(f"{where}: unknown key '{key}'{hint}")


def _kinds(ftype: Any) -> set[str]:
    """The scalar kinds a field's annotation admits ({'bool', 'int', 'float', 'str'})."""
    text = ftype if isinstance(ftype, str) else getattr(ftype, "__name__", str(ftype))
    text = str(ftype) if "[" in str(ftype) or "|" in str(ftype) else text
    if "list" in text or "dict" in text:
        return set()
    return set(re.findall(r"\b(bool|int|float|str)\b", text))


def _coerce(value: Any, ftype: Any, key: str, source: str) -> Any:
    """Match a scalar to its field's annotation: YAML reads `1e-5` as a string and `--set`
    values arrive as strings."""
    kinds = _kinds(ftype)
    if value is None or not kinds:
        return value
    try:
        if isinstance(value, str) and "str" not in kinds:
            if "bool" in kinds and value.lower() in ("true", "false", "yes", "no", "on", "off"):
                return value.lower() in ("true", "yes", "on")
            if "float" in kinds:
                return float(value)
            if "int" in kinds:
                return int(value)
            raise ValueError(value)
        if isinstance(value, bool):
            if "bool" not in kinds:
                raise ValueError(value)
            return value
        if isinstance(value, int) and "int" not in kinds and "float" in kinds:
            return float(value)
        if isinstance(value, float) and "float" not in kinds and "int" in kinds:
            if not value.is_integer():
                raise ValueError(value)
            return int(value)
    except (TypeError, ValueError):
        want = " or ".join(sorted(kinds))
        raise ConfigError(f"{source}: '{key}' must be {want}, not {value!r}") from None
    return value


def read_yaml(file: Path) -> tuple[dict[str, Any], dict[tuple[str | int, ...], int]]:
    """A YAML file holding one mapping of field names, with the line of every key."""
    try:
        data, lines = load_with_lines(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read ({exc.strerror})") from None
    except YamlSyntaxError as exc:
        raise ConfigError(f"{file}:{exc.line or '?'}: {exc}") from None
    if data is None:
        return {}, lines
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: expected a mapping of config fields, got {type(data).__name__}")
    return data, lines


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """`key=value` strings (CLI `--set`) -> a dict; values are parsed as YAML scalars/lists."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {pair!r}: expected key=value")
        try:
            out[key.strip()] = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            out[key.strip()] = raw
    return out


def load_config(stage: str, file: Path | None = None, profile: str = "quick",
                overrides: dict[str, Any] | None = None) -> Any:
    """The stage's CONFIG_CLASS instance built from: its defaults <- PROFILES[profile] <- the
    YAML `file` (a mapping of field names) <- `overrides`. Raises ConfigError naming the
    source and key for an unknown key, a bad profile or a value of the wrong type."""
    module = stage_module(stage)
    config_class: type = module.CONFIG_CLASS
    profiles: Mapping[str, Mapping[str, Any]] = module.PROFILES
    if profile not in profiles:
        raise ConfigError(f"unknown profile '{profile}' for stage {stage}: expected one of "
                          f"{', '.join(sorted(profiles))}")
    names = field_names(config_class)
    types = {f.name: f.type for f in dataclasses.fields(config_class) if f.init}
    layers: list[tuple[str, Mapping[str, Any], Mapping[tuple[str | int, ...], int] | None]] = [
        (f"profile '{profile}'", profiles[profile], None)]
    if file is not None:
        layers.append((str(file), *read_yaml(Path(file))))
    if overrides:
        layers.append(("--set", overrides, None))
    merged: dict[str, Any] = {}
    for source, data, lines in layers:
        _check_keys(data, names, source, lines)
        for key, value in data.items():
            merged[key] = _coerce(value, types.get(key), key, source)
    try:
        return config_class(**merged)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"invalid {stage} config: {exc}") from None
