"""The task the prompts describe (``llm.task_wording``): related-work generation, or the Multi-News rewording."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from crewlib.prompts.judges import RUBRICS

# ---------------------------------------------------------------------------------------------
# The task the prompts describe (``llm.task_wording``). Every template above is written for
# related-work generation. Multi-News (notebook 07: the summary of a news event, the articles as
# the references) sends the same templates with these phrases replaced, in this order, in every
# message a client sends (crewlib/llm/client.py) — the controller, the reward and the systems are
# unchanged, and the related-work prompts stay byte-identical, so their recorded answers stay valid.
# Only whole phrases of the templates are replaced, never a single common word, so an article's own
# text passes through untouched; tests/test_multinews.py checks both, and that no phrase here is stale.
NEWS_RUBRICS = {
    "coverage": """5: covers all the key facts of the event the articles report (what happened, where, when, who \
was involved, the consequences), each stated accurately.
4: covers most key facts; one minor fact is missing.
3: covers the main event but misses several important facts.
2: covers only a few facts; major parts of the event are missing.
1: covers almost none of the event, or reports facts the articles do not.""",
    "logic": """5: well organised; facts are grouped by aspect, transitions are clear, and the summary reads as one \
coherent account of the event.
4: mostly well organised; one or two weak transitions.
3: some grouping, but the order is partly arbitrary or hard to follow in places.
2: mostly a list of article summaries with little connection between them.
1: incoherent, repetitive or contradictory.""",
    "relevance": """5: every sentence is about the event, and where the articles disagree the summary says so.
4: nearly all content is about the event; a disagreement between the articles is sometimes glossed over.
3: about the event overall, but some content is generic or only loosely connected to it.
2: much of the content is off-topic.
1: unrelated to the event.""",
}

NEWS_SUMMARY = (
    *((RUBRICS[d], NEWS_RUBRICS[d]) for d in NEWS_RUBRICS),
    ("You are an expert reviewer of scientific writing. You grade a related-work section",
     "You are an expert editor of news writing. You grade a summary of a news event"),
    ("the related-work section of a scientific paper", "the summary of a news event"),
    ('the related-work section of the paper "', 'the summary of the news event "'),
    ("the related-work section of the target paper", "the summary of the event"),
    ("You are reading reference [", "You are reading article ["),
    ("Extract 1 to 3 findings of [", "Extract the 1 to 3 most important facts reported by ["),
    ("the target paper's related work. Each note is one sentence in your own words.",
     "the summary of the event. Each note is one short sentence (at most 30 words) in your own words, never a copied "
     "paragraph."),
    ("the target paper's related work", "the summary of the event"),
    ("the target's related work", "the summary of the event"),
    ("Write in the third person about the cited works (their authors' \"we\" becomes \"the authors\" or the "
     "method's name).", "Write in the third person, as a reporter would: never \"we\" or \"I\" outside a quotation."),
    ("Cite every claim with its key in square brackets, e.g. [R2] or [R1, R4], using only the keys given; never "
     "cite by title or author name.",
     "End every sentence with the key of the article it comes from in square brackets, e.g. \"... on Tuesday [R2].\", "
     "or [R1, R3] when several articles report it; use only the keys given, never an outlet's name."),
    ("Do not describe the target paper as related work, and do not mention", "Do not begin with \"The summary\" or "
     "\"The articles\", and do not mention"),
    ("Open with the theme they share, name each work's method where you cite it, say how they differ, and end "
     "with one sentence on how they bear on this paper's problem.",
     "Open with what they report in common, say where they differ, and end with what happened next or is "
     "expected next, as the articles report it."),
    ("Group the works by theme and relate them to the target paper.",
     "Merge what the articles report into one account, most important first, and say where they disagree."),
    ("The section so far", "The summary so far"),
    ("Works the section does not cite yet", "Articles the summary does not cite yet"),
    ("about these works only", "about these articles only"),
    ("Notes on the works it cites", "Notes on the articles it cites"),
    ("Papers the section may cite", "Articles the summary may cite"),
    ("the section text only", "the summary text only"),
    ("of the related-work section", "of the summary"),
    ("Related-work section:", "Summary:"),
    ("Target paper:", "Event:"),
)
WORDINGS: dict[str, tuple[tuple[str, str], ...]] = {"related_work": (), "news_summary": NEWS_SUMMARY}


def reword(text: str, wording: str) -> str:
    """``text`` with the phrases of ``WORDINGS[wording]`` replaced in order (related_work: unchanged)."""
    for old, new in WORDINGS[wording]:
        text = text.replace(old, new)
    return text


def reword_messages(messages: Sequence[dict[str, str]], wording: str) -> list[dict[str, str]]:
    """Each message with its content reworded (:func:`reword`)."""
    return [{**m, "content": reword(m["content"], wording)} for m in messages]


class WordedClient:
    """An LLM client whose callers build related-work prompts for another task: every message is reworded
    (``WORDINGS[wording]``) here, where the prompts are made, and the client sends what it is given. Everything
    else (the ledger, the model, the cache) is the wrapped client's."""

    def __init__(self, client: Any, wording: str) -> None:
        if wording not in WORDINGS:
            raise ValueError(f"llm.task_wording must be one of {sorted(WORDINGS)}, not {wording!r}")
        self.client, self.wording = client, wording

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def chat(self, messages: Sequence[dict[str, str]], **options: Any) -> Any:
        return self.client.chat(reword_messages(messages, self.wording), **options)

    def chat_json(self, messages: Sequence[dict[str, str]], schema: Any, **options: Any) -> Any:
        return self.client.chat_json(reword_messages(messages, self.wording), schema, **options)

    def run(self, request: Any) -> Any:
        return self.client.run(self._reworded(request))

    def batch(self, requests: Sequence[Any], **options: Any) -> list:
        return self.client.batch([self._reworded(r) for r in requests], **options)

    def _reworded(self, request: Any) -> Any:
        return dataclasses.replace(request, messages=reword_messages(request.messages, self.wording))


def for_task(client: Any, wording: str) -> Any:
    """``client`` for prompts of the task ``wording`` (``llm.task_wording``): itself for related work (the prompts'
    own task), else a :class:`WordedClient`; None stays None (a system without an LLM)."""
    if client is None or wording == "related_work" or isinstance(client, WordedClient):
        return client
    return WordedClient(client, wording)
