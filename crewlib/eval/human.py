"""Human pairwise evaluation: blinded packets, annotation sheets, win rates, agreement.

The paper's human study compares two systems (CREW vs SRW) pair by pair: an annotator reads
two related-work sections for the same target paper, without knowing which system wrote
which, and says which is better on coverage, logic and relevance (or a tie). This module

1. writes the blinded packets (``make_pair_packets``): one CSV sheet to fill and one HTML
   page to read per annotator, and an un-blinding key kept in a separate file;
2. reads the filled sheets back, validates them and un-blinds them (``read_annotations``);
3. the statistics live in :mod:`crewlib.eval.human_stats`: win/tie/loss shares with pair-clustered
   bootstrap CIs and a sign test (``win_tie_loss``), inter-annotator agreement
   (``fleiss_kappa_by_dimension``) and the agreement of the LLM judge with the human majority
   (``judge_agreement``).

Preferences in the tidy annotation table are relative to ``system_a``: "a" means system_a
was preferred, "b" the other system, "tie" neither.
"""

from __future__ import annotations

import html
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from crewlib import CrewError
from crewlib.eval.llm_metrics import CREW_DIMENSIONS

DIMENSIONS = CREW_DIMENSIONS  # the judge's dimensions, so human and LLM judgements line up
PREFERENCES = ("1", "2", "tie")  # valid cells of a filled sheet, compared after strip().lower()
OUTCOMES = ("a", "b", "tie")  # un-blinded preference, relative to system_a

QUESTIONS = {
    "coverage": "Which text covers the important related work of the target paper more completely?",
    "logic": "Which text is better organised: clearer structure, transitions and comparisons between works?",
    "relevance": "Which text stays more relevant to the target paper (fewer off-topic or padded citations)?",
}

PACKET_COLUMNS = ("pair_id", "example", "context", "text_1", "text_2", *DIMENSIONS, "comment")
KEY_COLUMNS = ("pair_id", "example", "system_1", "system_2")
ANNOTATION_COLUMNS = ("annotator", "pair_id", "example", "dimension", "preference")


class AnnotationError(CrewError, ValueError):
    """A filled annotation sheet is invalid; the message names file, pair and column."""


# --------------------------------------------------------------------------- packets


def make_pair_packets(
    outputs: pd.DataFrame,
    system_a: str,
    system_b: str,
    *,
    annotators: Sequence[str],
    out_dir: str | Path,
    seed: int = 0,
    context: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Write blinded pairwise packets for each annotator and the un-blinding key.

    Args:
        outputs: one row per system x example, columns ``system, example, text``.
        system_a, system_b: the two systems to compare (values of ``outputs.system``).
        annotators: annotator names; each gets ``packet_<name>.csv`` and ``packet_<name>.html``.
        out_dir: folder for the packets and ``key.csv`` (created if missing).
        seed: seeds which system is shown as text 1 in each pair and the pair order.
        context: optional example -> text shown above each pair (e.g. the target's title and abstract).

    Returns:
        The key, columns ``pair_id, example, system_1, system_2``, sorted by pair_id; also
        written to ``out_dir/key.csv``. Pairs are the examples where both systems have a
        non-empty text. All annotators get the same pairs, order and blinding.
    """
    names = _check_packet_inputs(outputs, system_a, system_b, annotators)
    texts = {system: _texts_of(outputs, system) for system in (system_a, system_b)}
    examples = sorted(set(texts[system_a]) & set(texts[system_b]))
    if not examples:
        raise ValueError(f"no example has a non-empty text from both {system_a!r} and {system_b!r}")

    rng = np.random.default_rng(seed)
    order = rng.permutation(len(examples))  # pair order, so examples are not seen in id order
    a_first = rng.random(len(examples)) < 0.5  # blinding: which system is text 1
    width = max(3, len(str(len(examples))))
    key_rows, packet_rows = [], []
    for i, (idx, first) in enumerate(zip(order, a_first, strict=True), start=1):
        example = examples[idx]
        s1, s2 = (system_a, system_b) if first else (system_b, system_a)
        pair_id = f"P{i:0{width}d}"
        key_rows.append({"pair_id": pair_id, "example": example, "system_1": s1, "system_2": s2})
        packet_rows.append({
            "pair_id": pair_id, "example": example, "context": (context or {}).get(example, ""),
            "text_1": texts[s1][example], "text_2": texts[s2][example],
            **{dim: "" for dim in DIMENSIONS}, "comment": "",
        })
    key = pd.DataFrame(key_rows, columns=list(KEY_COLUMNS))
    packet = pd.DataFrame(packet_rows, columns=list(PACKET_COLUMNS))
    _warn_if_names_leak(packet, (system_a, system_b))

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        packet.to_csv(out / f"packet_{name}.csv", index=False, encoding="utf-8")
        (out / f"packet_{name}.html").write_text(_packet_html(packet), encoding="utf-8")
    key.to_csv(out / "key.csv", index=False, encoding="utf-8")
    return key


def _check_packet_inputs(outputs: pd.DataFrame, system_a: str, system_b: str, annotators: Sequence[str]) -> list[str]:
    """The annotators' names, after checking the columns, the two systems and the names (usable as file names,
    distinct); a ValueError says what is wrong."""
    missing = {"system", "example", "text"} - set(outputs.columns)
    if missing:
        raise ValueError(f"outputs lacks column(s) {sorted(missing)}; expected columns system, example, text")
    if system_a == system_b:
        raise ValueError(f"system_a and system_b are both {system_a!r}; pick two different systems")
    names = [str(a) for a in annotators]
    if not names:
        raise ValueError("no annotators given")
    for name in names:
        if not name.strip() or any(c in name for c in '/\\:*?"<>|'):
            raise ValueError(f"annotator name {name!r} cannot be used in a file name")
    if len(set(names)) != len(names):
        raise ValueError(f"annotator names repeat: {names}")
    return names


def _texts_of(outputs: pd.DataFrame, system: str) -> dict[str, str]:
    """example -> the system's non-empty text; a system without rows, or with two rows for one example, is an error."""
    rows = outputs[outputs["system"] == system]
    if rows.empty:
        present = sorted(map(str, outputs["system"].unique()))
        raise ValueError(f"system {system!r} has no rows in outputs (systems present: {present})")
    dup = rows["example"][rows["example"].duplicated()]
    if len(dup):
        raise ValueError(f"system {system!r} has several rows for example(s) {sorted(map(str, dup.unique()))}")
    pairs = zip(rows["example"], rows["text"], strict=True)
    return {str(ex): t for ex, t in pairs if isinstance(t, str) and t.strip()}


def _warn_if_names_leak(packet: pd.DataFrame, systems: Sequence[str]) -> None:
    # We never write system names ourselves, but a generated text could name its system.
    cells = packet[["example", "context", "text_1", "text_2"]].astype(str)
    for system in systems:
        pattern = rf"(?i)(?<!\w){re.escape(system)}(?!\w)"
        hits = cells.apply(lambda col, p=pattern: col.str.contains(p, regex=True)).any(axis=1)
        if hits.any():
            warnings.warn(
                f"system name {system!r} appears in the packet text of pair(s) {list(packet['pair_id'][hits])}; "
                "edit those texts before sending the packets, or the blinding is broken",
                UserWarning,
                stacklevel=3,
            )


_HTML_STYLE = """
body { font-family: Georgia, serif; max-width: 1200px; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-top: 2px solid #888; padding-top: 1em; margin-top: 2em; }
.context { background: #f4f4f4; padding: 0.6em 1em; white-space: pre-wrap; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 1.5em; }
.text { border: 1px solid #bbb; padding: 0.6em 1em; white-space: pre-wrap; line-height: 1.45; }
.questions li { margin: 0.3em 0; }
"""


def _packet_html(packet: pd.DataFrame) -> str:
    """A self-contained page: instructions, then each pair side by side with its questions."""
    questions = "".join(
        f"<li><b>{html.escape(dim)}</b>: {html.escape(q)}</li>" for dim, q in QUESTIONS.items()
    )
    parts = [
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<title>Related-work comparison ({len(packet)} pairs)</title><style>{_HTML_STYLE}</style></head><body>",
        "<h1>Related-work comparison</h1>",
        "<p>Each pair shows two related-work sections written for the same target paper. "
        "Read both, then answer the three questions. The texts are shown in random order; "
        "judge each question on its own.</p>",
        f"<ul class=\"questions\">{questions}</ul>",
        "<p>Record your answers in the CSV sheet that came with this page, on the row with the "
        "same pair id: in the columns <code>coverage</code>, <code>logic</code> and "
        "<code>relevance</code> write <code>1</code> (text 1 is better), <code>2</code> (text 2 is "
        "better) or <code>tie</code>. Every cell must be filled. The <code>comment</code> column "
        "is optional.</p>",
    ]
    for row in packet.itertuples(index=False):
        parts.append(f"<h2>{html.escape(row.pair_id)} &mdash; example {html.escape(str(row.example))}</h2>")
        if row.context:
            parts.append(f"<div class=\"context\">{html.escape(row.context)}</div>")
        parts.append(
            "<div class=\"pair\">"
            f"<div><h3>Text 1</h3><div class=\"text\">{html.escape(row.text_1)}</div></div>"
            f"<div><h3>Text 2</h3><div class=\"text\">{html.escape(row.text_2)}</div></div>"
            "</div>"
        )
        parts.append(f"<ol class=\"questions\">{questions}</ol>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


# --------------------------------------------------------------------------- reading sheets


def read_annotations(
    paths: Sequence[str | Path], key: pd.DataFrame | str | Path, *, system_a: str
) -> pd.DataFrame:
    """Read, validate and un-blind filled annotation sheets.

    Args:
        paths: filled CSV sheets; the annotator is the file stem after ``packet_`` (or the stem).
        key: the un-blinding key from ``make_pair_packets`` (DataFrame or path to ``key.csv``).
        system_a: the system that "a" refers to in the result; must be one of each pair's systems.

    Returns:
        Tidy table, columns ``annotator, pair_id, example, dimension, preference`` with
        preference in {"a", "b", "tie"} relative to ``system_a``; one row per annotator x pair x
        dimension. ``result.attrs["system_a"]`` records ``system_a``.

    Raises:
        AnnotationError: a sheet lacks a required column, has an unknown, duplicated or missing
            pair, an example that disagrees with the key, or an empty or invalid dimension cell.
            All problems of a sheet are listed at once.
    """
    key_df = _read_key(key, system_a)
    key_by_pair = key_df.set_index("pair_id")
    if not paths:
        raise ValueError("no annotation sheets given")

    frames, seen = [], {}
    for path in map(Path, paths):
        annotator = path.stem[len("packet_"):] if path.stem.startswith("packet_") else path.stem
        if annotator in seen:
            raise AnnotationError(
                f"{path} and {seen[annotator]} both belong to annotator {annotator!r}; pass one sheet per annotator"
            )
        seen[annotator] = path
        sheet = _read_sheet(path, key_by_pair)
        for dim in DIMENSIONS:
            cells = sheet[dim].str.strip().str.lower()
            system_1 = key_by_pair.loc[sheet["pair_id"], "system_1"].to_numpy()
            first_is_a = system_1 == system_a
            preference = np.where(
                cells == "tie", "tie", np.where((cells == "1") == first_is_a, "a", "b")
            )
            frames.append(pd.DataFrame({
                "annotator": annotator,
                "pair_id": sheet["pair_id"].to_numpy(),
                "example": key_by_pair.loc[sheet["pair_id"], "example"].to_numpy(),
                "dimension": dim,
                "preference": preference,
            }))
    result = pd.concat(frames, ignore_index=True)
    result["_dim"] = result["dimension"].map(DIMENSIONS.index)
    result = result.sort_values(["annotator", "pair_id", "_dim"]).drop(columns="_dim").reset_index(drop=True)
    result.attrs["system_a"] = system_a
    return result[list(ANNOTATION_COLUMNS)]


def _read_key(key: pd.DataFrame | str | Path, system_a: str) -> pd.DataFrame:
    if isinstance(key, (str, Path)):
        key = pd.read_csv(key, dtype=str, keep_default_na=False)
    missing = set(KEY_COLUMNS) - set(key.columns)
    if missing:
        raise ValueError(f"key lacks column(s) {sorted(missing)}; pass the key.csv written by make_pair_packets")
    key = key.astype({c: str for c in KEY_COLUMNS})
    if key["pair_id"].duplicated().any():
        raise ValueError(f"key repeats pair_id(s) {sorted(key['pair_id'][key['pair_id'].duplicated()].unique())}")
    foreign = key[(key["system_1"] != system_a) & (key["system_2"] != system_a)]
    if len(foreign):
        raise ValueError(
            f"system_a={system_a!r} is neither system of pair(s) {list(foreign['pair_id'])} in the key; "
            f"the key's systems are {sorted(set(key['system_1']) | set(key['system_2']))}"
        )
    return key


def _read_sheet(path: Path, key_by_pair: pd.DataFrame) -> pd.DataFrame:
    """One filled sheet as strings, after checking it against the key."""
    try:
        sheet = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise AnnotationError(f"{path}: cannot read the sheet as CSV ({exc}); re-export it as UTF-8 CSV") from exc
    required = ["pair_id", *DIMENSIONS]
    missing = [c for c in required if c not in sheet.columns]
    if missing:
        raise AnnotationError(
            f"{path}: missing column(s) {missing}; the sheet needs columns {required} as in the packet"
        )
    sheet["pair_id"] = sheet["pair_id"].str.strip()

    problems = []
    for pair_id in sheet["pair_id"][sheet["pair_id"].duplicated()].unique():
        problems.append(f"row {pair_id}: pair_id appears more than once; keep one row per pair")
    for pair_id in sheet["pair_id"][~sheet["pair_id"].isin(key_by_pair.index)].unique():
        problems.append(f"row {pair_id or '(empty pair_id)'}: pair_id is not in the key; is this sheet from "
                        "another packet set?")
    for pair_id in key_by_pair.index[~key_by_pair.index.isin(sheet["pair_id"])]:
        problems.append(f"row {pair_id}: pair is missing from the sheet; restore the row and fill it")
    known = sheet[sheet["pair_id"].isin(key_by_pair.index)]
    if "example" in sheet.columns:
        expected = key_by_pair.loc[known["pair_id"], "example"].to_numpy()
        for pair_id, got, want in zip(known["pair_id"], known["example"], expected, strict=True):
            if got.strip() != want:
                problems.append(f"row {pair_id}, column 'example': {got!r} but the key says {want!r}; "
                                "is this sheet from another packet set?")
    for dim in DIMENSIONS:
        for pair_id, cell in zip(sheet["pair_id"], sheet[dim], strict=True):
            value = cell.strip().lower()
            if not value:
                problems.append(f"row {pair_id}, column '{dim}': empty; write 1, 2 or tie")
            elif value not in PREFERENCES:
                problems.append(f"row {pair_id}, column '{dim}': invalid value {cell!r}; write 1, 2 or tie")
    if problems:
        shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
        raise AnnotationError(f"{path}: {len(problems)} problem(s):\n  " + "\n  ".join(shown))
    return sheet
