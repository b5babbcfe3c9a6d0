"""Run settings: ``params/<mode>.yaml`` plus a few environment overrides.

Every tunable number lives in a params file; ``params/quick.yaml`` holds every default and the
other files extend it. :func:`load_params` validates the merged settings against the schema
(:mod:`crewlib.schema`) and returns them as a plain dict; :func:`default` gives the typed configs
of the library their default values from the same file. Secrets never live here: a config names
the *environment variable* that holds an API key, never the key itself.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import os
from pathlib import Path
from typing import Any

import yaml

from crewlib import CrewError

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


def load_params(mode: str | os.PathLike = "quick", overrides: dict | None = None) -> dict[str, Any]:
    """Read ``params/<mode>.yaml`` (or a path), apply ``overrides`` (nested dict), validate.

    A file may name a ``base`` params file whose values it extends. Raises :class:`ParamsError`
    naming the file and the key path of every unknown, missing or mistyped setting.
    """
    path = Path(mode)
    if not path.suffix:
        path = PARAMS_DIR / f"{mode}.yaml"
    elif not path.is_absolute() and not path.exists():
        path = PROJECT_ROOT / path  # notebooks run in notebooks/ but name params/full.yaml
    data = _deep_update(_load_raw(path), overrides or {})
    data.pop("_source", None)
    _validate(data, f"{path} with overrides" if overrides else str(path))
    data["_source"] = shown_path(path)
    return data


def shown_path(path: Path) -> str:
    """A params file as it is named to a reader: relative to the project root when inside it (the same on every
    machine and from any working folder)."""
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT.resolve()))
    except ValueError:
        return str(path)


def with_overrides(params: dict, overrides: dict) -> dict[str, Any]:
    """A validated copy of loaded ``params`` with ``overrides`` (nested dict) applied."""
    data = _deep_update(copy.deepcopy({k: v for k, v in params.items() if k != "_source"}), overrides)
    source = params.get("_source", "params")
    _validate(data, f"{source} with overrides")
    data["_source"] = source
    return data


def params_fingerprint(params: dict, blocks: tuple[str, ...]) -> str:
    """sha256 (hex) of the named blocks of ``params``: what a cached or resumed result depends on."""
    import hashlib
    import json

    chosen = {b: params.get(b) for b in blocks}
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


def _validate(data: dict, source: str) -> None:
    import pydantic

    from crewlib.schema import Params, validation_messages

    try:
        Params.model_validate(data)
    except pydantic.ValidationError as exc:
        problems = validation_messages(exc)
        raise ParamsError(f"params file {source}: " + "; ".join(problems)) from None


@functools.cache
def _quick() -> dict:
    return load_params("quick")


def default_params() -> dict:
    """A copy of every default (``params/quick.yaml``)."""
    return copy.deepcopy(_quick())


def default(key_path: str) -> Any:
    """The default of a setting, from ``params/quick.yaml`` (``default("llm.timeout_s")``)."""
    value: Any = _quick()
    for part in key_path.split("."):
        value = value[part]
    return copy.deepcopy(value)


def from_quick(key_path: str) -> Any:
    """A dataclass field whose default is read from ``params/quick.yaml`` when the object is made."""
    return dataclasses.field(default_factory=lambda: default(key_path))


def notebook_setup(params_file: str | os.PathLike, overrides: dict | None = None, *,
                   figures_dir: str | None = None, llm_cache_dir: str | None = None,
                   embedded_model: str | None = None) -> tuple[dict[str, Any], Path]:
    """A notebook's params and its figures folder (created).

    The LLM cache is ``llm_cache_dir`` or the params' ``notebooks.llm_cache_dir`` (quick: the answers that ship;
    full: ``outputs/full/llm_cache``), the figures folder ``figures_dir`` or ``notebooks.figures_dir`` (quick:
    ``figures/``; full: ``outputs/full/figures``), so a paper-scale run never writes into what ships.
    ``embedded_model``: the embedded model, when given."""
    params = load_params(params_file, overrides)
    llm = {"cache_dir": llm_cache_dir or params["notebooks"]["llm_cache_dir"]}
    if embedded_model:
        llm["embedded"] = {"model": embedded_model}
    params = with_overrides(params, {"llm": llm})
    figures = resolve_path(figures_dir or params["notebooks"]["figures_dir"])
    figures.mkdir(parents=True, exist_ok=True)
    return params, figures


def notebook_out(params: dict, name: str, given: str | None = None) -> Path:
    """A notebook's run folder: ``given``, else ``name`` under the params' ``notebooks.out_dir``."""
    return resolve_path(given or Path(params["notebooks"]["out_dir"]) / name)


def resolve_path(value: str | os.PathLike) -> Path:
    """Relative paths in params are relative to the project root, not the working folder."""
    path = Path(os.path.expanduser(str(value)))
    return path if path.is_absolute() else PROJECT_ROOT / path
