"""SRW — Select, Read, and Write (Liu et al. 2025), as docs/method.md ("SRW") describes it.

Select: the next reference follows the citation graph — an unread paper connected (cites or is
cited by, inside the pool) to one already read, most relevant first; the most relevant unread
paper when none is connected. Read: an LLM updates a JSON working memory with the paper; the
memory is capped near ``memory_tokens`` (oldest notes dropped, counted). Write: one call from
the memory. ``rounds`` select–read rounds (the paper: 15).
"""

from __future__ import annotations

import json

import pydantic

from crewlib import prompts
from crewlib.baselines.base import Generation, approx_tokens
from crewlib.baselines.single import _OnePrompt
from crewlib.data.records import RWGExample
from crewlib.llm import LLMError
from crewlib.tasks import Task
from crewlib.text import sentences


class MemoryNote(pydantic.BaseModel):
    key: str
    note: str


class WorkingMemory(pydantic.BaseModel):
    notes: list[MemoryNote]


def neighbours_in_pool(task: Task) -> dict[str, set[str]]:
    """Undirected citation links between pool papers, by key."""
    pool = {r.id for r in task.references}
    out: dict[str, set[str]] = {k: set() for k in task.keys}
    for ref in task.references:
        for cited in ref.citations:
            if cited in pool and cited != ref.id:
                out[task.id_to_key[ref.id]].add(task.id_to_key[cited])
                out[task.id_to_key[cited]].add(task.id_to_key[ref.id])
    return out


def reading_order(task: Task, rounds: int) -> list[str]:
    """Keys in SRW's graph-constrained order, at most ``rounds`` of them."""
    neighbours = neighbours_in_pool(task)
    read: list[str] = []
    while len(read) < min(rounds, len(task.keys)):
        unread = [k for k in task.keys if k not in read]  # relevance order
        connected = [k for k in unread if neighbours[k] & set(read)]
        read.append((connected or unread)[0])
    return read


class SRW(_OnePrompt):
    name = "srw"

    @property
    def memory_tokens(self) -> int:
        return int(self.settings.memory_tokens)

    def cap(self, memory: WorkingMemory) -> tuple[WorkingMemory, int]:
        """Drop the oldest notes until the memory's JSON fits ``memory_tokens``; returns the number dropped."""
        notes = list(memory.notes)
        dropped = 0
        while notes and approx_tokens(WorkingMemory(notes=notes).model_dump_json()) > self.memory_tokens:
            notes.pop(0)
            dropped += 1
        return WorkingMemory(notes=notes), dropped

    def read(self, task: Task, memory: WorkingMemory, key: str) -> WorkingMemory:
        ref = task.reference_by_key[key]
        prompt = prompts.SRW_READ.format(title=task.title, abstract=task.abstract, key=key, ref_title=ref.title,
                                         ref_abstract=ref.abstract[:1200],
                                         memory=json.dumps(memory.model_dump(), ensure_ascii=False))
        messages = [{"role": "system", "content": prompts.WRITER_SYSTEM}, {"role": "user", "content": prompt}]
        result = self.client.chat_json(messages, WorkingMemory, caller=self.caller("reader"),
                                       max_tokens=int(self.settings.read_max_tokens),
                                       prompt_version=prompts.PROMPT_VERSION)
        return result.parsed

    on_round = None  # optional callable(t) after each reading round (crew write's progress bar)

    def rounds_for(self, task: Task) -> int:
        """The reading rounds on ``task``: ``rounds`` papers read one by one, at most the pool (the progress bar's
        length; the writing call follows them)."""
        return len(reading_order(task, int(self.settings.rounds)))

    def _generate(self, example: RWGExample, task: Task) -> Generation:
        order = reading_order(task, int(self.settings.rounds))
        memory = WorkingMemory(notes=[])
        generation = Generation(self.name, example.target_id, "", dict(task.key_to_id))
        sizes = []
        for key in order:
            try:
                memory = self.read(task, memory, key)
            except LLMError as exc:
                # Counted fallback: keep the memory and note the paper's first abstract sentence.
                generation.fallbacks[f"reader: {type(exc).__name__}"] += 1
                ref = task.reference_by_key[key]
                first = (sentences(ref.abstract) or [ref.title])[0]
                memory = WorkingMemory(notes=[*memory.notes, MemoryNote(key=key, note=first)])
            memory, dropped = self.cap(memory)
            if dropped:
                generation.fallbacks["memory notes dropped at the cap"] += dropped
            sizes.append(approx_tokens(memory.model_dump_json()))
            if self.on_round is not None:
                self.on_round(len(sizes))
        titles = dict(zip(task.keys, (r.title for r in task.references), strict=True))
        read_list = "\n".join(f"[{k}] {titles[k]}" for k in order)
        notes = "\n".join(f"- [{n.key}] {n.note}" for n in memory.notes)
        generation.text = self.write(task, f"References read:\n{read_list}\n\nWorking memory:\n{notes}")
        generation.notes = {"reading_order": order, "memory_tokens": sizes, "memory_cap": self.memory_tokens,
                            "memory_notes": len(memory.notes)}
        return generation
