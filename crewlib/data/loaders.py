"""Loaders: the real datasets through ``datasets``, or local JSONL/Parquet in the same schema.

- related work: ``BUT-FIT/OARelatedWork`` (config ``abstracts``); locally its rows, one JSON
  object a line (``abstracts`` or ``default`` layout);
- multi-document: ``alexfabbri/multi_news`` (``refs/convert/parquet``); locally ``document``
  joined by ``|||||`` (or a ``documents`` list) and ``summary``;
- long documents: ``ccdv/arxiv-summarization``, ``ccdv/pubmed-summarization``; locally
  ``article``/``abstract`` strings, or the original ``article_text``/``abstract_text``/``sections``.

Every loader returns ``(records, LoadReport)``: malformed rows are skipped *and counted*,
never dropped silently — a line that is not JSON, not a JSON object (``null``, a list, a string)
or not UTF-8 is skipped naming its file and line; a record whose id an earlier record already
has is skipped, counted and named (a resumed run could not tell their results apart).

With ``HF_HUB_OFFLINE=1`` a Hub loader fails at once with :class:`DatasetUnavailableError`,
naming the dataset and how to point it at a local copy.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from crewlib import CrewError
from crewlib.config import PROJECT_ROOT
from crewlib.data.records import (
    LoadReport,
    LongDocument,
    MultiDocExample,
    RecordError,
    Reference,
    RWGExample,
    Section,
    clean_field,
    reference_from_fields,
    with_introduction,
)
from crewlib.schema import Params

SAMPLE_DIR = PROJECT_ROOT / "data" / "sample"
SAMPLE_FILES = {
    "oarelatedwork": SAMPLE_DIR / "oarelatedwork_sample.jsonl",
    "multinews": SAMPLE_DIR / "multinews_sample.jsonl",
    "arxiv": SAMPLE_DIR / "arxiv_sample.jsonl",
    "pubmed": SAMPLE_DIR / "pubmed_sample.jsonl",
    # OARelatedWork rows of papers written after the instrument's design, read only by its discrimination test
    # (instrument.papers: holdout; docs/method.md, "The instrument")
    "instrument_holdout": SAMPLE_DIR / "instrument_holdout.jsonl",
}
HUB_NAMES = {
    "oarelatedwork": "BUT-FIT/OARelatedWork",
    "multinews": "alexfabbri/multi_news",
    "arxiv": "ccdv/arxiv-summarization",
    "pubmed": "ccdv/pubmed-summarization",
}
MULTINEWS_SEPARATOR = "|||||"

T = TypeVar("T")


class DatasetUnavailableError(CrewError, RuntimeError):
    """A dataset cannot be reached (offline, no network) or a local file is unreadable."""


# ----------------------------------------------------------------------------- row sources
def read_local_rows(path: str | os.PathLike) -> Iterator[dict[str, Any]]:
    """Rows of a local ``.jsonl`` (one JSON object a line) or ``.parquet`` file."""
    path = Path(path)
    if not path.exists():
        raise DatasetUnavailableError(f"local dataset file {path} does not exist")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        yield from pq.read_table(path).to_pylist()
        return
    with path.open("rb") as fh:
        for line_no, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield {"__unparsable__": f"{path} line {line_no} is not valid UTF-8 (byte "
                                         f"{raw[exc.start]:#04x} at column {exc.start + 1})"}
                continue
            try:
                row = json.loads(line)
            except ValueError:
                row = {"__unparsable__": f"{path} line {line_no} is not valid JSON"}
            if not isinstance(row, dict):
                row = {"__unparsable__": f"{path} line {line_no} is {type(row).__name__}, not a JSON object"}
            yield row


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def hub_rows(key: str, *, config: str | None, split: str, streaming: bool,
             revision: str | None = None) -> Iterable[dict[str, Any]]:
    """Rows of a Hub dataset; fails at once, with what to do, when the Hub is unreachable."""
    name = HUB_NAMES[key]
    how = (f"download it where you have network (datasets.load_dataset({name!r}, ...).to_json(...)) and pass "
           f"the file as path=... (params: data.{key}_path), or use the bundled sample: {SAMPLE_FILES[key]}")
    if hub_offline():
        raise DatasetUnavailableError(f"{name} is on the Hugging Face Hub and HF_HUB_OFFLINE=1 is set; {how}")
    import datasets

    try:
        return datasets.load_dataset(name, config, split=split, streaming=streaming, revision=revision)
    except Exception as exc:  # noqa: BLE001 - datasets raises many types for "could not reach the Hub"
        raise DatasetUnavailableError(f"could not load {name} ({type(exc).__name__}: {exc}); {how}") from exc


def _collect(rows: Iterable[dict], parse: Callable[[dict, int], T], report: LoadReport,
             limit: int | None) -> list[T]:
    records: list[T] = []
    seen: set[str] = set()
    for index, row in enumerate(rows):
        if limit is not None and len(records) >= limit:
            break
        try:
            if not isinstance(row, dict):
                raise RecordError(f"#{index}", "(row)", f"is {type(row).__name__}, not a JSON object")
            if "__unparsable__" in row:
                raise RecordError(f"#{index}", "(row)", row["__unparsable__"])
            record = parse(row, index)
            rid = getattr(record, "target_id", None) or getattr(record, "id", None)
            if rid in seen:
                raise RecordError(str(rid), "id", "repeats an earlier record's id (the later one is skipped)")
            seen.add(rid)
            records.append(record)
        except RecordError as err:
            report.skip(err)
        except (TypeError, KeyError, AttributeError, ValueError) as exc:
            report.skip(RecordError(str(row.get("id", f"#{index}")), "(row)", f"has an unexpected layout: {exc!r}"))
    report.loaded = len(records)
    return records


# ----------------------------------------------------------------------------- OARelatedWork
def _sentences(value: Any) -> list[dict]:
    """Flatten OARelatedWork's nested paragraphs → sentence records (dicts with ``text``)."""
    if isinstance(value, dict):
        if "text" in value and isinstance(value["text"], str):
            return [value]
        out: list[dict] = []
        for key in ("paragraphs", "content", "children", "sections"):
            if key in value:
                out += _sentences(value[key])
        return out
    if isinstance(value, list):
        return [s for item in value for s in _sentences(item)]
    return []


def _paragraph_texts(value: Any) -> list[str]:
    """Paragraph strings from a string, a JSON string, a list of paragraphs or of sections."""
    if value is None:
        return []
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in "[{":
            try:
                return _paragraph_texts(json.loads(stripped))
            except ValueError:
                pass
        return [p.strip() for p in re.split(r"\n\s*\n", stripped) if p.strip()]
    if isinstance(value, dict):
        if "paragraphs" in value:
            return _paragraph_texts(value["paragraphs"])
        return [" ".join(s["text"].strip() for s in _sentences(value))] if _sentences(value) else []
    if isinstance(value, list):
        paragraphs: list[str] = []
        for item in value:
            if isinstance(item, list) and item and all(isinstance(s, dict) and "text" in s for s in item):
                paragraphs.append(" ".join(s["text"].strip() for s in item))  # one paragraph of sentences
            elif isinstance(item, dict) and "text" in item and "paragraphs" not in item:
                paragraphs.append(item["text"].strip())
            else:
                paragraphs += _paragraph_texts(item)
        return [p for p in paragraphs if p]
    return []


def _str_id(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _gold_section(value: Any) -> str:
    """The gold related-work section, paragraphs joined by a blank line. A plain-text section without
    blank lines has its paragraphs on single lines (as users paste them): then each line is one."""
    if isinstance(value, str) and value.strip()[:1] not in "[{" and not re.search(r"\n\s*\n", value.strip()):
        return "\n\n".join(line.strip() for line in value.strip().splitlines() if line.strip())
    return "\n\n".join(_paragraph_texts(value))


def parse_simple_row(row: dict, index: int = 0, notes: LoadReport | None = None) -> RWGExample:
    """The simple local layout: a target and its references (docs/guide.md, "Data"), every bad field named.

    ``{"id", "title", "abstract", "introduction"?, "references": [{"key", "title", "abstract"?, "authors"?,
    "year"?}], "related_work"?, "cited"?}``. A reference without an abstract is kept with its title
    (counted). The gold cited keys are ``cited``, else the keys the gold section cites as ``[key]`` or
    ``\\cite{key}``, else every reference (noted); without ``related_work`` the example has no gold and
    serves only to write (``crew write``).
    """
    rid = _str_id(row.get("id")) or f"#{index}"
    refs = row.get("references")
    problems: list[tuple[str, str]] = []
    references: list[Reference] = []
    title_only = 0
    if not isinstance(refs, list):
        problems.append(("references", "is not a list of references"))
        refs = []
    seen: set[str] = set()
    for i, ref in enumerate(refs):
        if not isinstance(ref, dict):
            problems.append((f"references[{i}]", "is not an object"))
            continue
        key = _str_id(ref.get("key", ref.get("id")))
        title = clean_field(ref.get("title"))
        if key is None:
            problems.append((f"references[{i}].key", "is missing"))
        elif key in seen:
            problems.append((f"references[{i}].key", f"repeats reference key {key!r}"))
        if not title:
            problems.append((f"references[{i}].title", "is missing or empty"))
        if key is None or key in seen or not title:
            continue
        seen.add(key)
        reference, by_title = reference_from_fields(key, title, ref.get("abstract"), ref.get("authors"),
                                                    ref.get("year"))
        references.append(reference)
        title_only += by_title
    for name in ("title", "abstract"):
        if not str(row.get(name) or "").strip():
            problems.append((name, "is missing or empty"))
    if not refs:
        problems.append(("references", "is empty: the reference pool has no papers"))
    RecordError.collect(rid, problems)
    gold = _gold_section(row.get("related_work")) if row.get("related_work") else ""
    cited = [str(c) for c in row.get("cited") or []]
    noted = {"references without an abstract, used by their title": title_only}
    if gold and not cited:
        marked = re.findall(r"\\cite[pt]?\{([^}]*)\}|\[([^\[\]]+)\]", gold)
        keys = [k.strip() for pair in marked for group in pair for k in re.split(r"[,;]", group) if k.strip()]
        cited = list(dict.fromkeys(k for k in keys if k in seen))
        if not cited:
            cited = [r.id for r in references]
            noted["gold cited ids taken from `references` (the section cites no key)"] = 1
    example = RWGExample(rid, " ".join(str(row["title"]).split()),
                         with_introduction(str(row["abstract"]), str(row.get("introduction") or "")),
                         tuple(references), gold_related_work=gold, gold_cited_ids=tuple(cited), year=row.get("year"),
                         source="local").validate(require_gold=bool(gold))
    if notes is not None:
        notes.notes.update({k: v for k, v in noted.items() if v})
    return example


def parse_oarelatedwork_row(row: dict, index: int = 0, notes: LoadReport | None = None) -> RWGExample:
    """One OARelatedWork row (``abstracts`` or ``default`` layout, or the simple layout of
    :func:`parse_simple_row`) → :class:`RWGExample`."""
    if "references" in row and "referenced" not in row:
        return parse_simple_row(row, index, notes)
    rid = _str_id(row.get("id")) or f"#{index}"
    bibliography = row.get("bibliography") or []
    references = []
    problems: list[tuple[str, str]] = []
    title_only = 0
    for i, ref in enumerate(row.get("referenced") or []):
        ref_id = _str_id(ref.get("id"))
        if ref_id is None:
            problems.append((f"referenced[{i}].id", "is missing"))
            continue
        title = (ref.get("title") or "").strip()
        abstract = " ".join(_paragraph_texts(ref.get("abstract") or ref.get("hierarchy"))[:3]).strip()
        if title and not abstract:  # kept, known by its title (crewlib.tasks.title_only), counted
            abstract, title_only = title, title_only + 1
        references.append(Reference(
            id=ref_id, title=title, abstract=abstract, year=ref.get("year"), authors=tuple(ref.get("authors") or ()),
            citations=tuple(c for c in (_str_id(x) for x in ref.get("citations") or []) if c),
        ))
    RecordError.collect(rid, problems)
    pool_ids = {r.id for r in references}
    gold_ids: list[str] = []
    unresolved = outside_pool = 0
    for sentence in _sentences(row.get("related_work")):
        for cit in sentence.get("citations") or []:
            idx = cit.get("index")
            entry = bibliography[idx] if isinstance(idx, int) and 0 <= idx < len(bibliography) else None
            cited = _str_id(entry.get("id")) if entry else None
            if cited is None:
                unresolved += 1  # a citation of a paper that is not in the dataset
            elif cited not in pool_ids:
                outside_pool += 1
            elif cited not in gold_ids:
                gold_ids.append(cited)
    noted = {"gold citations of papers not in the dataset": unresolved,
             "gold citations of papers outside the pool": outside_pool,
             "references without an abstract, used by their title": title_only}
    if not gold_ids and isinstance(row.get("related_work"), str):
        # The `default` layout stores the section as one string without citation spans: take every
        # referenced paper as cited, and say so.
        gold_ids = [r.id for r in references]
        noted["gold cited ids taken from `referenced` (no citation spans)"] = 1
    example = RWGExample(
        target_id=rid, title=(row.get("title") or "").strip(),
        abstract="\n\n".join(_paragraph_texts(row.get("abstract"))),
        references=tuple(references), gold_related_work=_gold_section(row.get("related_work")),
        gold_cited_ids=tuple(gold_ids), year=row.get("year"), source="oarelatedwork",
    ).validate()
    if notes is not None:  # counted only for records that are kept
        notes.notes.update({k: v for k, v in noted.items() if v})
    return example


def load_oarelatedwork(path: str | os.PathLike | None = None, *, split: str = "train", config: str = "abstracts",
                       limit: int | None = None, streaming: bool = True) -> tuple[list[RWGExample], LoadReport]:
    """Related-work examples from a local file (``path``) or the Hub (streamed for subsets)."""
    report = LoadReport("OARelatedWork" + (f" ({Path(path).name})" if path else f" {config}/{split}"))
    rows = read_local_rows(path) if path else hub_rows("oarelatedwork", config=config, split=split,
                                                        streaming=streaming)
    records = _collect(rows, lambda row, i: parse_oarelatedwork_row(row, i, report), report, limit)
    return records, report


# ----------------------------------------------------------------------------- Multi-News
def parse_multinews_row(row: dict, index: int = 0) -> MultiDocExample:
    rid = _str_id(row.get("id")) or f"multinews-{index}"
    if "documents" in row and isinstance(row["documents"], list):
        documents = row["documents"]
    elif isinstance(row.get("document"), str):
        documents = row["document"].split(MULTINEWS_SEPARATOR)
    else:
        raise RecordError(rid, "document", "is missing (expected a string joined by '|||||' or a list)")
    documents = tuple(d.strip() for d in documents if d and d.strip())
    summary = (row.get("summary") or "").strip()
    summary = summary[1:].strip() if summary.startswith("–") else summary  # Multi-News summaries open with "– "
    return MultiDocExample(rid, documents, summary, source="multinews").validate()


def load_multinews(path: str | os.PathLike | None = None, *, split: str = "train", limit: int | None = None,
                   streaming: bool = True) -> tuple[list[MultiDocExample], LoadReport]:
    """Multi-News clusters; from the Hub through its parquet conversion (the script is refused)."""
    report = LoadReport("Multi-News" + (f" ({Path(path).name})" if path else f" {split}"))
    rows = read_local_rows(path) if path else hub_rows("multinews", config=None, split=split, streaming=streaming,
                                                        revision="refs/convert/parquet")
    return _collect(rows, parse_multinews_row, report, limit), report


# ----------------------------------------------------------------------------- arXiv / PubMed
_SENT_TAGS = re.compile(r"</?S>")


def _join_sentences(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(_SENT_TAGS.sub("", s).strip() for s in value if isinstance(s, str) and s.strip())
    return _SENT_TAGS.sub("", value or "").strip()


def parse_long_document_row(row: dict, index: int = 0, source: str = "") -> LongDocument:
    rid = _str_id(row.get("id") or row.get("article_id")) or f"{source or 'doc'}-{index}"
    article = _join_sentences(row.get("article", row.get("article_text")))
    abstract = _join_sentences(row.get("abstract", row.get("abstract_text")))
    sections: tuple[Section, ...] = ()
    names, bodies = row.get("section_names") or [], row.get("sections")
    if isinstance(bodies, list) and bodies:
        if len(names) != len(bodies):
            raise RecordError(rid, "sections", f"has {len(bodies)} sections but {len(names)} section_names")
        sections = tuple(Section(str(n).strip(), _join_sentences(b)) for n, b in zip(names, bodies, strict=True))
        article = article or "\n".join(s.text for s in sections)
    return LongDocument(rid, article, abstract, sections, title=(row.get("title") or "").strip(),
                        source=source).validate()


def load_long_documents(dataset: str, path: str | os.PathLike | None = None, *, split: str = "train",
                        config: str = "section", limit: int | None = None,
                        streaming: bool = True) -> tuple[list[LongDocument], LoadReport]:
    """arXiv or PubMed articles with abstracts (``dataset`` is ``"arxiv"`` or ``"pubmed"``)."""
    if dataset not in ("arxiv", "pubmed"):
        raise ValueError(f"dataset must be 'arxiv' or 'pubmed', not {dataset!r}")
    report = LoadReport(f"{dataset}" + (f" ({Path(path).name})" if path else f" {config}/{split}"))
    rows = read_local_rows(path) if path else hub_rows(dataset, config=config, split=split, streaming=streaming)
    return _collect(rows, lambda row, i: parse_long_document_row(row, i, dataset), report, limit), report


# ----------------------------------------------------------------------------- by params
def load_task_data(params: Params, task: str, *, split: str | None = None,
                   limit: int | None = None) -> tuple[list, LoadReport]:
    """Load ``task`` (oarelatedwork, multinews, arxiv, pubmed) as ``params.data`` says.

    ``data.source``: ``sample`` (the bundled corpus), ``local`` (``data.<task>_path``) or ``hub``.
    """
    data = params.data
    source = data.source
    path = None
    if source == "sample":
        path = SAMPLE_FILES[task]
    elif source == "local":
        path = getattr(data, f"{task}_path")
        if not path:
            raise DatasetUnavailableError(f"data.source is 'local' but data.{task}_path is not set")
        from crewlib.config import resolve_path

        path = resolve_path(path)
    elif source != "hub":
        raise ValueError(f"data.source must be sample, local or hub, not {source!r}")
    split = split or data.split
    limit = limit if limit is not None else data.limit
    if task == "oarelatedwork":
        return load_oarelatedwork(path, split=split, config=data.oarelatedwork_config,
                                  limit=limit)
    if task == "multinews":
        return load_multinews(path, split=split, limit=limit)
    return load_long_documents(task, path, split=split, limit=limit)
