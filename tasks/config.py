"""How a configuration file (config/*.toml) is read and how its problems are said; nothing here knows what
any file means. Each domain owns the typed model of its file or section (tasks/prices/config.py,
tasks/ranking/config.py, ...); tasks/config_files.py puts them together; entry points load them once and
pass the typed sections down.

A file is validated whole when it is read: an unknown key is a typo, a value of the wrong type or out of
range is refused, and the problem is said in ONE line naming the file, the key path and what was wrong, e.g.
`config/settings.toml: ingest.runner.kind: must be one of 'threads', 'sequential', 'dask' (got 'dsak')`, raised as
ConfigError (the command line's exit code 2). Environment overrides (GPUCOST_INGEST_RUNNER, ...) are read by
`tasks.settings.Environment` and applied over the file before it is validated, so a bad override is named by
its variable.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from difflib import get_close_matches
from functools import cache
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, TypeVar, Union, cast, get_args, get_origin

from pydantic import AfterValidator, BaseModel, Field, ValidationError

from tasks.settings import ConfigError, Environment, Strict, config_dir, what_was_wrong

__all__ = ["ConfigError", "Count", "Fraction", "MemoryLimit", "NonNegative", "Positive", "Strict", "load",
           "memory_limit_problem", "read_toml"]

NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=1)]
M = TypeVar("M", bound=BaseModel)

# A DuckDB memory cap: a size above 0 in a unit DuckDB reads. DuckDB takes "-1GB" (and any negative) as no cap
# at all, and "lots" fails only when the setting is applied, deep in a flow: both are refused where they are given.
MEMORY_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*", re.IGNORECASE)


def memory_limit_problem(text: str) -> str | None:
    """Why `text` is not a memory cap (a size above 0, e.g. 600MB, 4GiB), or None."""
    size = MEMORY_SIZE.fullmatch(text)
    if size is None or float(size.group(1)) <= 0:
        return f"must be a size above 0 such as 600MB or 4GiB (got {text!r})"
    return None


def _memory_limit(text: str) -> str:
    problem = memory_limit_problem(text)
    if problem is not None:
        raise ValueError(problem)
    return text


MemoryLimit = Annotated[str, AfterValidator(_memory_limit)]


def config_file(name: str) -> Path:
    return config_dir() / f"{name}.toml"


def shown(path: Path) -> str:
    """A config file as the user would type it: relative to the working folder when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _key_path(error: Mapping[str, Any], data: Any) -> tuple[str, int]:
    """The key path of an error in the file's own terms, and how many of its parts the file holds. Union
    member tags that pydantic adds to `loc` (e.g. 'str', 'PrecisionSpec') are dropped: a part is kept when the
    data has it, or when it is a missing key. List entries count from 1, as a person counts [[tables]]."""
    loc = tuple(error["loc"])
    parts: list[str] = []
    depth = 0
    for index, part in enumerate(loc):
        if isinstance(data, dict) and part in data:
            parts.append(str(part))
            data = data[part]
            depth += 1
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            parts[-1:] = [f"{parts[-1] if parts else ''}[{part + 1}]"]
            data = data[part]
            depth += 1
        elif index == len(loc) - 1 and error["type"] == "missing":
            parts.append(str(part))
    return ".".join(parts) or "(top level)", depth


def _inner(annotation: Any) -> Any:
    """Annotated[X, ...] -> X; a union -> its first table-like member (a model, list or dict), else None."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _inner(get_args(annotation)[0])
    if origin in (Union, UnionType):
        members = [_inner(a) for a in get_args(annotation)]
        return next((m for m in members if _is_model(m) or get_origin(m) in (list, dict)), None)
    return annotation


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def keys_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str] | None:
    """The keys the table holding `loc`'s last part may have (for an unknown key), or None if not a fixed set."""
    current: Any = model
    for part in loc[:-1]:
        if _is_model(current):
            field = next((f for n, f in current.model_fields.items() if part in (n, f.alias)), None)
            current = None if field is None else _inner(field.annotation)
        elif get_origin(current) in (list, dict):
            current = _inner(get_args(current)[-1])
        else:
            return None
    if _is_model(current) and current.model_config.get("extra") == "forbid":
        return [f.alias or n for n, f in current.model_fields.items()]
    return None


def describe(error: ValidationError, file: str, data: Any, overrides: dict[tuple[str, ...], str] | None = None,
             model: type[BaseModel] | None = None, prefix: str = "") -> str:
    """ONE line for a ValidationError: the file (or the environment variable that set the value), the key
    path, what was wrong (for an unknown key, the keys that table may hold); further problems are counted,
    not listed."""
    problems = [(p, *_key_path(p, data)) for p in error.errors(include_url=False)]
    # an unknown key first: a misspelt key is also reported as the real one missing, and the typo is the cause
    problems.sort(key=lambda p: p[0]["type"] != "extra_forbidden")
    where = problems[0][1]
    # a union's value is reported by the member that got furthest into it (the recipe of a precision table)
    related = [p for p in problems if p[1] == where or p[1].startswith(where + ".")]
    first, where, _ = max(related, key=lambda p: p[2])
    source = file
    for path, variable in (overrides or {}).items():
        if where == ".".join(path):
            source = f"{variable} (environment, over {file})"
    others = {p[1] for p in problems if p[1] != where and not where.startswith(p[1] + ".")}
    more = f" (and {len(others)} more problem(s) in the file)" if others else ""
    what = what_was_wrong(first)
    keys = keys_at(model, tuple(first["loc"])) if model and first["type"] == "extra_forbidden" else None
    if keys:
        close = get_close_matches(str(first["loc"][-1]), keys, n=1)
        what = (f"unknown key (did you mean {close[0]}?)" if close
                else f"unknown key (a typo? the keys here are {', '.join(keys)})")
    return f"{source}: {prefix}{where}: {what}{more}"


class _NotUtf8(ValueError):
    """A config file holds a byte that is not UTF-8 (TOML is UTF-8): where, in the file's own terms."""


@cache
def _read(path: str, mtime_ns: int) -> dict[str, Any]:
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:  # tomllib.load's own decode raised it as a bare traceback
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise _NotUtf8(f"not valid TOML (byte 0x{data[error.start]:02x} at line {line}, column {column} is not "
                       "UTF-8)") from None
    return tomllib.loads(text)


def read_toml(name: str) -> dict[str, Any]:
    """The file's raw tables, or ConfigError: missing, unreadable or not TOML (said in one line)."""
    path = config_file(name)
    try:
        return _read(str(path), path.stat().st_mtime_ns)
    except FileNotFoundError:
        raise ConfigError(f"{shown(path)}: no such file (the configuration folder is {shown(path.parent)}; "
                          "GPUCOST_CONFIG_DIR chooses another)") from None
    except PermissionError:
        raise ConfigError(f"{shown(path)}: permission denied (not readable)") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{shown(path)}: not valid TOML ({error})") from None
    except _NotUtf8 as error:
        raise ConfigError(f"{shown(path)}: {error}") from None


def _with_overrides(name: str, raw: dict[str, Any]) -> tuple[dict[str, Any], dict[tuple[str, ...], str]]:
    """The file's tables with the environment's overrides applied (tasks.settings.Environment.overrides)."""
    overrides = Environment.current().overrides(name)
    if not overrides:
        return raw, {}
    merged = _deep_copy(raw)
    for path, (_, value) in overrides.items():
        table = merged
        for key in path[:-1]:
            table = table.setdefault(key, {})
        table[path[-1]] = value
    return merged, {path: variable for path, (variable, _) in overrides.items()}


def _deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


@cache
def _validated(name: str, model: type[BaseModel], path: str, mtime_ns: int, environment: tuple[Any, ...]) -> BaseModel:
    raw, overrides = _with_overrides(name, read_toml(name))
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        raise ConfigError(describe(error, shown(Path(path)), raw, overrides, model)) from None


def load(name: str, model: type[M]) -> M:
    """config/<name>.toml as `model` (cached until the file or its environment overrides change)."""
    path = config_file(name)
    read_toml(name)  # missing / unreadable / not TOML: said first
    # `model` validated it (functools.cache keeps no type variable)
    return cast(M, _validated(name, model, str(path), path.stat().st_mtime_ns, Environment.current().key(name)))

