"""A notebook's headline results and tables, written next to its figures and read back by a test.

``record(path, **results)`` stores plain numbers, strings, lists and tables (a DataFrame is
stored as its records) as JSON; ``load(path)`` returns the dict; ``save_table(table, path)`` writes
a table as CSV. Nothing else is stored, so a recorded result is what the notebook computed in the
run that wrote it.

Floats are written to ``SIGNIFICANT_DIGITS`` significant digits: a sum over answers replayed in
another order (threads finish in any order) differs in its last bits, and a re-executed notebook
must write the same bytes (``make notebooks`` is deterministic).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

SIGNIFICANT_DIGITS = 10


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
    if isinstance(value, float):
        return float(f"{value:.{SIGNIFICANT_DIGITS}g}") if math.isfinite(value) else None
    return value


def record(path: str | Path, **results: Any) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_plain(results), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def load(path: str | Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def save_table(table: pd.DataFrame, path: str | Path, index: bool = True) -> Path:
    """Write ``table`` to ``path`` as CSV (UTF-8), its floats to ``SIGNIFICANT_DIGITS`` significant digits."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=index, float_format=f"%.{SIGNIFICANT_DIGITS}g", encoding="utf-8")
    return path
