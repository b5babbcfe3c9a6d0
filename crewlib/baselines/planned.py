"""What a run will spend, planned before its first call from the prompts it will send (``crew write`` prints it).

The plan fills each call's prompt template with the paper's own text and its references' titles and abstracts, as
the run will; what only the run can know stands in by measured sizes: a note is the length of a work's first
abstract sentence, a Compose shows about two notes a work, and each answer is as long as the embedded 1.5B's answers
were on the quality benchmark (``ANSWER_TOKENS``, the mean over its calls per role). Token counts are the prompts'
characters / 4 (:func:`crewlib.text.approx_tokens`) times ``TOKENS_PER_ESTIMATE``, the ratio of the embedded Qwen
tokenizer's counts to that estimate (0.84–0.89 per role). Another model writes answers of other lengths and another
tokenizer counts otherwise; the ceiling (every answer at its ``max_tokens``) bounds the answers whatever the model.

CREW: one Retrieve per work with an abstract (with ``rounds: auto``; a fixed number of rounds reads at most half its
actions), one Compose per ``executor.compose_sources`` works read (grouped by theme) plus one revision, one Critique
per two new paragraphs (one a round; a reviewed draft is not reviewed again), and a Disseminate call per agent only
where its reads' notes (three a read) are more than ``executor.share_as_is``. SRW: its select–read rounds, each prompt
with the memory as it grows (three notes a work), then one write. Other systems: no plan (None).

Measured (quality benchmark, 20 papers, embedded 1.5B, 8 rounds): CREW's plan within 12% of the tokens spent on
average, within 20% on 16 of 20 papers, 30% off at worst (the trained controller samples its actions). SRW's plan
(15 rounds, 18 papers) is low: 15% under on average, 39% at worst — it plans no re-asked read (the 1.5B's reader
failed its schema even after a re-ask on 9 reads, and every re-ask sends the whole memory again).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from crewlib import prompts
from crewlib.actions import Action
from crewlib.env.executors import ActionRequest
from crewlib.tasks import Task, title_only
from crewlib.text import approx_tokens, sentences

TOKENS_PER_ESTIMATE = 0.87  # the embedded Qwen tokenizer's prompt tokens / approx_tokens (quality benchmark, per role)
# Mean answer tokens per call of the embedded 1.5B (quality benchmark, edition 2026-12-06.1)
ANSWER_TOKENS = {"retrieve": 101, "compose": 206, "critique": 20, "disseminate": 191, "reader": 193, "writer": 376}
READ_SHARE = 0.5  # at most this share of a fixed number of rounds' actions reads (12 of 24 on the benchmark's largest)
NOTES_PER_WORK = 2  # notes a Compose or a Critique shows on each of its works
NOTES_PER_READ = 3  # notes a Retrieve takes ("1 to 3 findings"; about 95 answer tokens)
SRW_NOTES_PER_WORK = 3  # SRW's memory: notes a work read adds (2.6 on the quality benchmark's first paper)


@dataclass(frozen=True)
class PlannedCost:
    calls: int
    prompt_tokens: int
    completion_tokens: int
    ceiling_tokens: int  # the prompts with every answer at its max_tokens

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def line(self) -> str:
        return (f"about {self.calls} LLM calls and {self.tokens:,} tokens ({self.prompt_tokens:,} prompt, "
                f"{self.completion_tokens:,} answer; at most {self.ceiling_tokens:,} with every answer at its "
                "length cap)")

    def as_dict(self) -> dict:
        return {"calls": self.calls, "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "tokens": self.tokens, "ceiling_tokens": self.ceiling_tokens}


class _Sum:
    """Calls added up: each a prompt (its text), its expected answer and its answer's cap."""

    def __init__(self) -> None:
        self.calls = self.prompt = self.answer = self.cap = 0

    def add(self, text: str, answer: int, cap: int, times: int = 1) -> None:
        self.calls += times
        self.prompt += times * round(approx_tokens(text) * TOKENS_PER_ESTIMATE)
        self.answer += times * min(answer, cap)
        self.cap += times * cap

    def plan(self) -> PlannedCost:
        return PlannedCost(self.calls, self.prompt, self.answer, self.prompt + self.cap)


def _note(task: Task, key: str) -> str:
    """A stand-in note on ``key``: its first abstract sentence, cut to 30 words, ending with its key."""
    first = (sentences(task.reference_by_key[key].abstract) or [task.reference_by_key[key].title])[0]
    return " ".join(first.split()[:30]) + f" [{key}]"


def crew_plan(system, task: Task) -> PlannedCost | None:
    """CREW's calls on ``task``, None unless its Compose is themed (``system``: CREW's
    :class:`~crewlib.baselines.env_systems.EnvSystem`)."""
    params, total = system.params, _Sum()
    executor = system.executor()
    if executor.compose_form != "themed":
        return None
    caps, agents = executor.max_tokens, params.env.n_agents
    readable = [k for k in task.keys if task.key_to_id[k] in task.readable_ids]
    rounds = system.rounds_for(task)
    read = readable if system.settings.rounds == "auto" else readable[:math.ceil(READ_SHARE * rounds * agents)]
    for key in read:
        messages, _ = executor.prompt(None, task, ActionRequest(0, Action.RETRIEVE, task.reference_by_key[key]))
        total.add(_text(messages), ANSWER_TOKENS["retrieve"], caps["retrieve"])
    for agent in range(agents):  # an agent holding more notes than it shares as they are condenses them once
        own = read[agent::agents]
        if len(own) * NOTES_PER_READ > executor.share_as_is:
            notes = "\n".join(f"- {_note(task, k)}" for k in own for _ in range(NOTES_PER_READ))
            text = prompts.AGENT_SYSTEM + prompts.DISSEMINATE.format(title=task.title, notes=notes)
            total.add(text, ANSWER_TOKENS["disseminate"], caps["disseminate"])
    ordered = [k for t in executor.pool_themes(task) for k in t.keys if k in read]  # the works read, theme by theme
    n = math.ceil(len(ordered) / executor.compose_sources)  # a theme with one work read joins its closest others
    groups = [ordered[i * len(ordered) // n:(i + 1) * len(ordered) // n] for i in range(n)]
    outline = ""
    for i, works in enumerate(groups + groups[:1]):  # each theme's paragraph, and one revision
        notes = "\n".join(f"- {_note(task, k)}" for k in works for _ in range(NOTES_PER_WORK))
        keys = ", ".join(f"[{k}]" for k in works)
        compose = prompts.COMPOSE_THEMED.format(
            topic=task.title, paper=task.abstract, outline=outline or "(none yet)", knowledge=notes, keys=keys,
            comparison=prompts.COMPOSE_COMPARISON if len(works) > 1 else "", rules=executor.rules)
        total.add(prompts.AGENT_SYSTEM + compose, ANSWER_TOKENS["compose"], caps["compose"])
        paragraph = " ".join(_note(task, k) for k in works)
        if i < math.ceil(len(groups) / 2):  # about one Critique call for two new paragraphs (one a round)
            critique = prompts.CRITIQUE.format(title=task.title, keys=", ".join(task.keys), knowledge=notes,
                                               draft=f"{i}: {paragraph}")
            total.add(prompts.AGENT_SYSTEM + critique, ANSWER_TOKENS["critique"], caps["critique"])
        outline += f"{i}: {keys}\n"
    return total.plan()


def srw_plan(system, task: Task) -> PlannedCost:
    """SRW's calls on ``task``: a read per work of its reading order with an abstract, its memory growing by
    ``SRW_NOTES_PER_WORK`` notes a work, then the write (``system``: a :class:`~crewlib.baselines.srw.SRW`)."""
    from crewlib.baselines.srw import MemoryNote, WorkingMemory, reading_order

    total = _Sum()
    order = reading_order(task, int(system.settings.rounds))
    memory = WorkingMemory(notes=[])
    read_cap = int(system.settings.read_max_tokens)
    for key in order:
        if title_only(task.reference_by_key[key]):
            continue
        prompt = system.read_prompt(task, memory, key)
        total.add(prompts.WRITER_SYSTEM + prompt.text, ANSWER_TOKENS["reader"], read_cap)
        memory = WorkingMemory(notes=[*memory.notes, *(MemoryNote(key=key, note=_note(task, key))
                                                    for _ in range(SRW_NOTES_PER_WORK))])
    write = system.write_prompt(task, order, memory)
    total.add(prompts.WRITER_SYSTEM + write.text, ANSWER_TOKENS["writer"], int(system.max_tokens))
    return total.plan()


def _text(messages: list[dict[str, str]]) -> str:
    return "".join(m["content"] for m in messages)


def planned_cost(system, task: Task) -> PlannedCost | None:
    """The plan of ``system`` on ``task``, or None for a system this module does not plan."""
    from crewlib.baselines.env_systems import Crew
    from crewlib.baselines.srw import SRW

    if isinstance(system, Crew):
        return crew_plan(system, task)
    if isinstance(system, SRW) and not system.recorded:
        return srw_plan(system, task)
    return None
