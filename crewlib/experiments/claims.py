"""Numbers in the README and ``docs/`` that cannot go stale: each is checked against the file in ``figures/`` that the
notebooks wrote (issue 49).

Two marks, HTML comments a Markdown viewer does not show:

- ``3.87<!--f:08_llm_ablations.csv:w/o Critique:Overall-->`` — the number just before the mark is the cell of
  ``figures/08_llm_ablations.csv`` in the row whose first column is ``w/o Critique`` and the column ``Overall``
  (its first number: "3.87 [3.40, 4.47]" is 3.87); ``<!--f:05_results.json:conditions.papers-->`` reads a JSON
  file by its dotted path (list items by index).
- ``<!--t:05_crew_table.csv-->`` on the line before a Markdown table — every cell of that table whose column header
  is also a column of the CSV is checked the same way, in the CSV row whose first column is the table row's first
  cell less any parenthesis ("extractive (no LLM)" is ``extractive``; case aside);
  ``<!--t:10_sq2e.csv:dataset,system-->`` keys the rows by two columns, the table's first two.

A number matches when the figure's value, rounded to the digits the text shows, is the number the text shows
(thousands separators ignored; "67%" is also 0.67). ``python -m crewlib.experiments.claims [FILE ...]`` prints every
mismatch (default: README.md and docs/results.md) and exits 1 when there is one; ``tests/test_claims.py`` runs it.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from crewlib.config import PROJECT_ROOT

FIGURES = PROJECT_ROOT / "figures"
DOCUMENTS = ("README.md", "docs/results.md")
_NUMBER = re.compile(r"[-−]?\d[\d,]*(?:\.\d+)?")
_CELL_MARK = re.compile(r"([-−]?\d[\d,]*(?:\.\d+)?)(%?)\**\s*<!--f:([^:>]+):([^>]+?)-->")
_TABLE_MARK = re.compile(r"^<!--t:([^>]+?)-->\s*$")


@dataclass(frozen=True)
class Mismatch:
    document: str
    line: int
    shown: str
    source: str
    value: str

    def __str__(self) -> str:
        return f"{self.document}:{self.line}: shows {self.shown}, {self.source} holds {self.value}"


def check(documents: Sequence[str | Path] = DOCUMENTS, figures: Path = FIGURES) -> tuple[list[Mismatch], int]:
    """Every mismatch between the marked numbers of ``documents`` and ``figures``, and the number of checks made."""
    mismatches: list[Mismatch] = []
    checked = 0
    for document in documents:
        path = Path(document) if Path(document).is_absolute() else PROJECT_ROOT / document
        lines = path.read_text(encoding="utf-8").splitlines()
        for found, n in (*_cell_checks(lines, figures), *_table_checks(lines, figures)):
            checked += n
            mismatches += [Mismatch(str(document), *m) for m in found]
    return mismatches, checked


def _cell_checks(lines: list[str], figures: Path):
    for number, line in enumerate(lines, 1):
        for match in _CELL_MARK.finditer(line):
            shown, percent, name, where = match.groups()
            value = _value(figures / name, where)
            ok = _matches(shown, value) or (bool(percent) and _matches(_hundredth(shown), value))
            yield ([] if ok else [(number, shown, f"{name}:{where}", str(value))]), 1


def _table_checks(lines: list[str], figures: Path):
    for number, line in enumerate(lines, 1):
        mark = _TABLE_MARK.match(line.strip())
        if not mark:
            continue
        name, _, keys = mark.group(1).partition(":")
        rows = _keyed(figures / name, keys.split(",") if keys else [])
        table = [_cells(row) for row in _table_after(lines, number)]
        if len(table) < 2:
            yield [(number, "no table after the mark", name, "")], 1
            continue
        yield _table_rows(table, rows, name, number, max(1, len(keys.split(",")) if keys else 1))


def _table_rows(table: list[list[str]], rows: dict, name: str, number: int, width: int) -> tuple[list, int]:
    """The mismatches of one marked table and the number of cells checked."""
    header, found, checked = table[0], [], 0
    for offset, cells in enumerate(table[2:], number + 3):
        key = tuple(_first_word(c).lower() for c in cells[:width])
        row = rows.get(key)
        if row is None:
            found.append((offset, " / ".join(cells[:width]), name, "no such row"))
            continue
        for title, shown in zip(header[width:], cells[width:], strict=False):
            column = _column(title, row)
            if column and _NUMBER.search(shown) and _NUMBER.search(row[column] or ""):
                checked += 1
                first = _NUMBER.search(shown).group(0)
                if not _matches(first, row[column]):
                    found.append((offset, f"{first} ({' / '.join(key)}, {title})", name, row[column]))
    return found, checked


def _column(title: str, row: dict) -> str | None:
    """The CSV column a table's header names: the same name, or the name before a parenthesis that does not say
    "paper" ("factual consistency (LLM, not FactCC)"; "Overall (paper)" only as itself)."""
    if title in row:
        return title
    base, _, note = title.partition(" (")
    return base if note and "paper" not in note and base in row else None


def _table_after(lines: list[str], number: int) -> list[str]:
    table = []
    for line in lines[number:]:
        if not line.strip().startswith("|"):
            if table:
                break
            continue
        table.append(line)
    return table


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _first_word(cell: str) -> str:
    return cell.replace("*", "").replace("`", "").split(" (")[0].strip()


def _matches(shown: str, value) -> bool:
    """``shown`` (as the text prints it) is ``value`` rounded to the digits ``shown`` has. A value the figure file
    itself rounded ("0.395" of 0.3948) allows either side of its own last digit: the text may round the unrounded
    number (0.39) or the file's (0.40)."""
    number = _as_number(value)
    if number is None:
        return False
    text = shown.replace(",", "").replace("−", "-")
    digits = len(text.split(".")[1]) if "." in text else 0
    if f"{number:.{digits}f}" == f"{float(text):.{digits}f}":
        return True
    written = _NUMBER.search(str(value)) if isinstance(value, str) else None
    if written is None or "." not in written.group(0):
        return False
    own = len(written.group(0).split(".")[1])
    return own > digits and abs(number - float(text)) <= 0.5 * 10 ** -digits + 0.5 * 10 ** -own + 1e-12


def _hundredth(shown: str) -> str:
    """A percentage as the share it is ("67" → "0.67", "56.7" → "0.567")."""
    text = shown.replace(",", "").replace("−", "-")
    digits = len(text.split(".")[1]) if "." in text else 0
    return f"{float(text) / 100:.{digits + 2}f}"


def _as_number(value) -> float | None:
    """A figure's value as a number: itself, or the first number of its text ("3.87 [3.40, 4.47]": 3.87)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    found = _NUMBER.search(str(value))
    return float(found.group(0).replace(",", "").replace("−", "-")) if found else None


def _csv(path: Path) -> dict[str, dict[str, str]]:
    return {key[0]: row for key, row in _keyed(path, []).items()}


def _keyed(path: Path, keys: list[str]) -> dict[tuple[str, ...], dict[str, str]]:
    """The CSV's rows by their key columns (default: the first), lower-cased."""
    with path.open(encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        keys = keys or [reader.fieldnames[0]]
        return {tuple(row[k].lower() for k in keys): row for row in reader}


def _value(path: Path, where: str):
    if path.suffix == ".json":
        value = json.loads(path.read_text(encoding="utf-8"))
        for part in where.split("."):
            value = value[int(part)] if isinstance(value, list) else value.get(part) if isinstance(value, dict) \
                else None
        return value
    row, _, column = where.rpartition(":")
    return (_csv(path).get(row.lower()) or {}).get(column)


def main(argv: Sequence[str] | None = None) -> int:
    documents = list(argv if argv is not None else sys.argv[1:]) or list(DOCUMENTS)
    mismatches, checked = check(documents)
    for mismatch in mismatches:
        print(mismatch)
    print(f"{checked} numbers checked against figures/, {len(mismatches)} mismatches")
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
