"""A notebook's headline results, written as JSON next to its figures and read back by a test.

``record(path, **results)`` stores plain numbers, strings, lists and tables (a DataFrame is
stored as its records); ``load(path)`` returns the dict. Nothing else is stored, so a recorded
result is what the notebook computed in the run that wrote it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd


def _plain(value: Any) -> Any:
    if isinstance(value, pd.DataFrame):
        named = value.index.name is not None or isinstance(value.index, pd.MultiIndex)
        return [_plain(r) for r in (value.reset_index() if named else value).to_dict("records")]
    if isinstance(value, pd.Series):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def record(path: str | Path, **results: Any) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_plain(results), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def load(path: str | Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))
