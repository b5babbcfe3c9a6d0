"""Run settings: ``params/<mode>.yaml`` plus a few environment overrides.

Every tunable number lives in a params file; ``params/quick.yaml`` holds every default and the
other files extend it. :func:`load_params` validates the merged settings against the schema
(:mod:`crewlib.schema`) and returns the typed, frozen :class:`~crewlib.schema.Params`; each part of the
library is built from its block (``params.env``, ``params.llm`` ...), and a changed setting is a new
object made by :func:`with_overrides`, validated again. Secrets never live here: a config names the
*environment variable* that holds an API key, never the key itself.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pydantic
import yaml

from crewlib import CrewError
from crewlib.schema import Params, validation_messages

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PARAMS_DIR = PROJECT_ROOT / "params"


class ParamsError(CrewError, ValueError):
    """A params file is missing or malformed."""


def _deep_update(base: dict, extra: dict) -> dict:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _deep_update(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def load_params(mode: str | os.PathLike = "quick", overrides: dict | None = None) -> Params:
    """Read ``params/<mode>.yaml`` (or a path), apply ``overrides`` (nested dict), validate.

    A file may name a ``base`` params file whose values it extends. Raises :class:`ParamsError`
    naming the file and the key path of every unknown, missing or mistyped setting.
    """
    path = Path(mode)
    if not path.suffix:
        path = PARAMS_DIR / f"{mode}.yaml"
    elif not path.is_absolute() and not path.exists():
        path = PROJECT_ROOT / path  # notebooks run in notebooks/ but name params/full.yaml
    if not path.exists():  # named as the user typed it, not as the project resolved it
        known = ", ".join(sorted(p.stem for p in PARAMS_DIR.glob("*.yaml")))
        raise ParamsError(f"params {str(mode)!r} not found: neither a mode (known modes: {known}) nor a YAML file")
    data = _deep_update(_load_raw(path), overrides or {})
    return _validated(data, shown_path(path), f"{path} with overrides" if overrides else str(path))


def shown_path(path: Path) -> str:
    """A params file as it is named to a reader: relative to the project root when inside it (the same on every
    machine and from any working folder)."""
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT.resolve()))
    except ValueError:
        return str(path)


def with_overrides(params: Params, overrides: dict) -> Params:
    """A validated copy of ``params`` with ``overrides`` (nested dict, as in a params file) applied."""
    data = _deep_update(as_dict(params), overrides)
    return _validated(data, params.source, f"{params.source} with overrides")


def as_dict(params: Params | pydantic.BaseModel) -> dict[str, Any]:
    """The settings as the params files write them (nested dicts; a setting the files leave out stays out)."""
    return params.model_dump(by_alias=True, exclude_unset=True)


def params_fingerprint(params: Params | dict, blocks: tuple[str, ...]) -> str:
    """sha256 (hex) of the named blocks of ``params``: what a cached or resumed result depends on."""
    data = params if isinstance(params, dict) else as_dict(params)
    chosen = {b: data.get(b) for b in blocks}
    return hashlib.sha256(json.dumps(chosen, sort_keys=True, default=str).encode()).hexdigest()


def _load_raw(path: Path) -> dict[str, Any]:
    if not path.exists():
        known = sorted(p.stem for p in PARAMS_DIR.glob("*.yaml"))
        raise ParamsError(f"params file {path} not found; known modes: {known}")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ParamsError(f"params file {path} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ParamsError(f"params file {path} must hold a mapping at the top level")
    base_name = data.pop("base", None)
    if base_name:
        base_path = path.parent / f"{base_name}.yaml"
        if not base_path.exists():
            base_path = PARAMS_DIR / f"{base_name}.yaml"  # a user's file may extend the project's quick/full
        data = _deep_update(_load_raw(base_path), data)
    return data


def _validated(data: dict, source: str, where: str) -> Params:
    try:
        params = Params.model_validate(data)
    except pydantic.ValidationError as exc:
        raise ParamsError(f"params file {where}: " + "; ".join(validation_messages(exc))) from None
    params._source = source
    return params


@functools.cache
def default_params() -> Params:
    """Every default: ``params/quick.yaml`` (frozen; change a copy with :func:`with_overrides`)."""
    return load_params("quick")


def notebook_setup(params_file: str | os.PathLike, overrides: dict | None = None, *,
                   figures_dir: str | None = None, llm_cache_dir: str | None = None,
                   embedded_model: str | None = None) -> tuple[Params, Path]:
    """A notebook's params and its figures folder (created).

    The LLM cache is ``llm_cache_dir`` or the params' ``notebooks.llm_cache_dir`` (quick: the answers that ship;
    full: ``outputs/full/llm_cache``), the figures folder ``figures_dir``, else ``$CREW_FIGURES_DIR`` (set by
    ``pytest --nbval notebooks``, so that checking the notebooks rewrites no tracked file), else
    ``notebooks.figures_dir`` (quick: ``figures/``; full: ``outputs/full/figures``), so a paper-scale run never
    writes into what ships.
    ``embedded_model``: the embedded model, when given."""
    params = load_params(params_file, overrides)
    llm: dict[str, Any] = {"cache_dir": llm_cache_dir or params.notebooks.llm_cache_dir}
    if embedded_model:
        llm["embedded"] = {"model": embedded_model}
    params = with_overrides(params, {"llm": llm})
    figures = resolve_path(figures_dir or os.environ.get("CREW_FIGURES_DIR") or params.notebooks.figures_dir)
    figures.mkdir(parents=True, exist_ok=True)
    return params, figures


def notebook_out(params: Params, name: str, given: str | None = None) -> Path:
    """A notebook's run folder: ``given``, else ``name`` under the params' ``notebooks.out_dir``."""
    return resolve_path(given or Path(params.notebooks.out_dir) / name)


def resolve_path(value: str | os.PathLike) -> Path:
    """Relative paths in params are relative to the project root, not the working folder."""
    path = Path(os.path.expanduser(str(value)))
    return path if path.is_absolute() else PROJECT_ROOT / path
