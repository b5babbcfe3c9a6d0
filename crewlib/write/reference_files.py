"""The user's references: a BibTeX, CSV, JSON or JSONL file read as :class:`ReferenceList`.

Files are read as people save them: UTF-8 with or without a byte-order mark (Excel's "CSV UTF-8"
writes one); another encoding is an error naming the file. BibTeX is parsed by ``bibtexparser``
with LaTeX decoded; LaTeX math (``$\\mathcal{O}(n)$``) is kept as written. An entry whose field
swallowed the next one (a missing comma: ``title = {X} author = {Y}``) is an error naming the entry;
a year that is not a number (``forthcoming``) is kept as written in the rendered list and warned
about; an entry without an abstract is used by its title (:func:`crewlib.tasks.title_only`).
Every bad entry is named in one error, not only the first.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from crewlib import CrewError
from crewlib.data.records import Reference, clean_field, reference_from_fields

# BibTeX fields whose "name =" inside another field's value means a comma was missing between the two
_BIB_FIELDS = ("author", "title", "year", "abstract", "journal", "booktitle", "editor", "pages", "volume", "number",
               "publisher", "url", "doi", "month", "note", "eprint", "archiveprefix", "primaryclass", "keywords",
               "address", "organization", "school", "series", "isbn", "issn", "howpublished", "institution")
# a value's closing brace, quote or number, then the next "field =" without the comma between them
_SWALLOWED = re.compile(r"(?:[}\"]|\b\d+)\s+(" + "|".join(_BIB_FIELDS) + r")\s*=\s*[{\"\w]", re.IGNORECASE)
_YEAR = re.compile(r"\b(1[89]\d{2}|20\d{2})\b")


class ReferenceFileError(CrewError, ValueError):
    """A references file that cannot be used; the message names the file and every bad entry."""


@dataclass
class ReferenceList:
    references: list[Reference]
    source: str
    title_only: list[str] = field(default_factory=list)  # keys of references without an abstract (used by title)
    years_as_written: dict[str, str] = field(default_factory=dict)  # key -> a year that is not a number

    def report(self) -> str:
        text = f"{self.source}: {len(self.references)} references"
        if self.title_only:
            text += (f"; {len(self.title_only)} without an abstract, used by their title: "
                     + ", ".join(self.title_only[:10]) + (" ..." if len(self.title_only) > 10 else ""))
        return text

    def warnings(self) -> list[str]:
        """One line per reference a user should look at (no abstract, a year that is not a number)."""
        lines = [f"reference {key!r} has no abstract; it is used by its title" for key in self.title_only]
        lines += [f"reference {key!r} has the year {year!r}, not a number; it is kept as written"
                  for key, year in self.years_as_written.items()]
        return lines


def read_text_file(path: str | Path, what: str) -> str:
    """A user's text file, UTF-8 with or without a byte-order mark; errors name ``what`` and the file."""
    path = Path(path).expanduser()
    if not path.is_file():
        problem = "is not a file" if path.exists() else "does not exist"
        raise ReferenceFileError(f"{what} {path} {problem}")
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ReferenceFileError(f"{what} {path} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from exc


def read_references(path: str | Path) -> ReferenceList:
    """References from a ``.bib``, ``.csv``, ``.json`` or ``.jsonl`` file (module docstring)."""
    path = Path(path).expanduser()
    text = read_text_file(path, "references file")
    if not text.strip():
        raise ReferenceFileError(f"{path} is empty: no references to write from")
    suffix = path.suffix.lower()
    if suffix == ".bib":
        return references_from_bibtex(text, str(path))
    if suffix == ".csv":
        return references_from_rows(_csv_rows(text, str(path)), str(path))
    if suffix in (".json", ".jsonl"):
        return references_from_rows(_json_rows(text, str(path), lines=suffix == ".jsonl"), str(path))
    raise ReferenceFileError(f"{path}: unknown references format {suffix!r}; use .bib, .csv, .json or .jsonl")


def references_from_bibtex(text: str, source: str = "(bibtex)") -> ReferenceList:
    """References from BibTeX text: LaTeX decoded outside math, braces removed; every bad entry named in one error."""
    import bibtexparser
    from bibtexparser.middlewares import LatexDecodingMiddleware

    library = bibtexparser.parse_string(text.lstrip("\ufeff"), append_middleware=[LatexDecodingMiddleware()])
    problems = []
    for block in library.failed_blocks:
        where = f"line {block.start_line + 1}"
        key = getattr(block, "key", None)
        if type(block).__name__ == "DuplicateBlockKeyBlock":
            problems.append(f"entry {key!r} ({where}): repeats the key of an earlier entry")
        else:
            raw = " ".join(block.raw.split())[:60]
            problems.append(f"unparsable entry at {where}: {raw!r} ({_first_line(getattr(block, 'error', ''))})")
    rows = []
    for entry in library.entries:
        fields = {k.lower(): v.value for k, v in entry.fields_dict.items()}
        swallowed = _swallowed_field(entry.raw or "", fields)
        if swallowed:
            problems.append(f"entry {entry.key!r}: its field {swallowed[0]!r} holds {swallowed[1]!r} = ... "
                            f"(a missing comma between two fields?)")
        rows.append({"key": entry.key, "title": fields.get("title"), "abstract": fields.get("abstract"),
                     "authors": fields.get("author"), "year": fields.get("year"), "_where": f"entry {entry.key!r}"})
    if not rows and not problems:
        raise ReferenceFileError(f"{source} holds no BibTeX entry")
    return references_from_rows(rows, source, problems)


def _swallowed_field(raw: str, fields: Mapping[str, str]) -> tuple[str, str] | None:
    """(field, swallowed field) when a field's value ran on into the next ``name = value`` for want of a comma:
    seen in the entry's source, confirmed by the name appearing inside a parsed value."""
    for match in _SWALLOWED.finditer(raw):
        name = match.group(1)
        for holder, value in fields.items():
            if re.search(rf"\b{name}\s*=", str(value), re.IGNORECASE):
                return holder, name.lower()
    return None


def references_from_rows(rows: Iterable[Mapping], source: str = "(rows)",
                         problems: list[str] | None = None) -> ReferenceList:
    """References from mappings with ``key`` (or ``id``), ``title``, ``abstract``, ``authors``, ``year``."""
    problems = list(problems or [])
    references: list[Reference] = []
    title_only: list[str] = []
    years: dict[str, str] = {}
    seen: set[str] = set()
    for n, row in enumerate(rows, start=1):
        if "__unparsable__" in row:
            problems.append(row["__unparsable__"])
            continue
        key = clean_field(row.get("key") if row.get("key") not in (None, "") else row.get("id"))
        where = row.get("_where") or (f"entry {key!r}" if key else f"row {n}")
        if not key:
            problems.append(f"{where}: has no key")
            continue
        if key in seen:
            problems.append(f"{where}: repeats the key of an earlier entry")
            continue
        seen.add(key)
        title = clean_field(row.get("title"))
        if not title:
            problems.append(f"{where}: has no title")
            continue
        reference, by_title = reference_from_fields(key, title, row.get("abstract"), row.get("authors"),
                                                    row.get("year"))
        year = clean_field(row.get("year"))
        if year and not _YEAR.fullmatch(year):
            years[key] = year
        references.append(reference)
        if by_title:
            title_only.append(key)
    if problems:
        shown = "\n  ".join(problems[:20]) + (f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else "")
        entries = "entry" if len(problems) == 1 else "entries"
        raise ReferenceFileError(f"{source}: {len(problems)} bad {entries}:\n  {shown}")
    if not references:
        raise ReferenceFileError(f"{source} holds no reference")
    return ReferenceList(references, source, title_only, years)


def _csv_rows(text: str, source: str) -> list[dict]:
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    fields = [f.strip().lower() for f in reader.fieldnames or []]
    if not ({"key", "id"} & set(fields)) or "title" not in fields:
        raise ReferenceFileError(f"{source}: a references CSV needs a header with key and title (and abstract, "
                                 f"authors, year), not {reader.fieldnames}")
    return [{k.strip().lower(): v for k, v in row.items() if k} for row in reader]


def _json_rows(text: str, source: str, *, lines: bool) -> list[dict]:
    text = text.lstrip("\ufeff")
    if lines:
        rows = []
        for n, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    row = json.loads(line)
                except ValueError:
                    row = {"__unparsable__": f"line {n}: is not valid JSON"}
                rows.append(row if isinstance(row, dict) else {"__unparsable__": f"line {n}: is not a JSON object"})
        return rows
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ReferenceFileError(f"{source} is not valid JSON: {exc}") from exc
    if isinstance(data, dict):
        data = data.get("references")
    if not isinstance(data, list):
        raise ReferenceFileError(f"{source}: expected a list of references (or an object with \"references\")")
    return [row if isinstance(row, dict) else {"__unparsable__": f"item {n}: is not a JSON object"}
            for n, row in enumerate(data, start=1)]


def _first_line(text) -> str:
    return str(text).strip().splitlines()[0] if str(text).strip() else "syntax error"
