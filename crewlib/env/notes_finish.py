"""The draft completed from the team's notes at an episode's end (``executor.finish_from_notes``, themed Compose;
docs/method.md, "Finishing from the notes"): the works the team read that the draft does not cite."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from crewlib.citations import find_citation_keys
from crewlib.env.checks import uncovered_sources
from crewlib.env.themed_compose import extended_paragraph, note_sentence, notes_paragraph
from crewlib.env.themes import Theme
from crewlib.env.workspace import Note, Workspace
from crewlib.sections import OutputChecks, sentence_gate
from crewlib.tasks import Task
from crewlib.text import sentences


def work_texts(notes: list[Note] | tuple[Note, ...], keys, task: Task) -> dict[str, str]:
    """Key → what a sentence attributed to that work may rest on: the notes on it, then its abstract."""
    return {k: " ".join([*(n.text for n in notes if task.key_to_id[k] in n.sources), task.reference_by_key[k].abstract])
            for k in keys}


def one_work_notes(notes: Sequence[Note]) -> list[Note]:
    """The notes on one work each: what a sentence on that work may be taken from and rest on. A shared note on
    several works, or one a Disseminate gave every work its agent had not shared yet, says not which work it is on
    (`crew write --tex`: "CAMEL proposes a framework for role-playing …", shared with no key, became PRIMERA's
    sentence)."""
    return [n for n in notes if len(set(n.sources)) == 1]


def theme_paragraph(ws: Workspace, task: Task, theme: Theme) -> int | None:
    """The paragraph of the draft on ``theme``: the first whose citations are all works of the theme."""
    for segment in ws.draft:
        cited = set(find_citation_keys(segment.text)) & set(task.keys)
        if cited and cited <= set(theme.keys):
            return segment.id
    return None


def complete_from_notes(ws: Workspace, task: Task, themes: Sequence[Theme], checks: OutputChecks,
                        counts: Counter) -> list[str]:
    """The draft's paragraphs with the works the team read and the draft does not cite (those with an abstract):
    each work's first sentence of its notes the output checks keep (:func:`note_sentence`) goes into its theme's
    paragraph before the closing; two works or more of a theme with no paragraph get one of their own
    (:func:`notes_paragraph`); no LLM call. ``counts["finished_from_notes"]``: the works added."""
    texts, added = [s.text for s in ws.draft], 0
    notes = one_work_notes([*ws.global_notes, *(n for agent in ws.local_notes for n in agent)])
    missing = uncovered_sources(ws, task)
    read = [s for s in dict.fromkeys(s for n in notes for s in n.sources)
            if s in missing and s in task.readable_ids]
    for theme in themes:
        keys = [task.id_to_key[s] for s in read if task.id_to_key[s] in theme.keys]
        if not keys:
            continue
        works = work_texts(notes, keys, task)
        earlier = [s for text in texts for s in sentences(text)]
        keep = sentence_gate(task, checks, None, earlier)  # on the works' own text, as the themed Compose
        home = theme_paragraph(ws, task, theme)
        if home is not None:
            body = [s for k in keys if (s := note_sentence(k, works[k], keep))]
            i = [seg.id for seg in ws.draft].index(home)
            texts[i], added = extended_paragraph(texts[i], " ".join(body), "", task.title), added + len(body)
        elif len(keys) >= 2 and (text := notes_paragraph(
                keys, task.title, task.abstract, works, checks.support_threshold, counts, earlier,
                {k: task.reference_by_key[k].title for k in keys}, keep)):
            texts.append(text)
            added += len(set(find_citation_keys(text)))
    counts["finished_from_notes"] += added
    return texts
