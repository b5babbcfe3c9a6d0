"""Run settings: ``params/<mode>.yaml`` plus a few environment overrides.

Every tunable number lives in a params file; this module reads one into a plain dict and
builds the typed configs the library uses. Secrets never live here: a config names the
*environment variable* that holds an API key, never the key itself.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import yaml

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PARAMS_DIR = PROJECT_ROOT / "params"


class ParamsError(ValueError):
    """A params file is missing or malformed."""


def _deep_update(base: dict, extra: dict) -> dict:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _deep_update(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def load_params(mode: str | os.PathLike = "quick", overrides: dict | None = None) -> dict[str, Any]:
    """Read ``params/<mode>.yaml`` (or a path), apply ``overrides`` (nested dict).

    A file may name a ``base`` params file whose values it extends.
    """
    path = Path(mode)
    if not path.suffix:
        path = PARAMS_DIR / f"{mode}.yaml"
    elif not path.is_absolute() and not path.exists():
        path = PROJECT_ROOT / path  # notebooks run in notebooks/ but name params/full.yaml
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
        data = _deep_update(load_params(base_path), data)
    data.setdefault("_source", str(path))
    return _deep_update(data, overrides or {})


def resolve_path(value: str | os.PathLike) -> Path:
    """Relative paths in params are relative to the project root, not the working folder."""
    path = Path(os.path.expanduser(str(value)))
    return path if path.is_absolute() else PROJECT_ROOT / path
