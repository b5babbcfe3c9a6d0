"""SRW — Select, Read, and Write (Liu et al. 2025), as docs/method.md ("SRW") describes it.

Select: the next reference follows the citation graph — an unread paper connected (cites or is
cited by, inside the pool) to one already read, most relevant first; the most relevant unread
paper when none is connected. Read: an LLM updates a JSON working memory with the paper; the
memory is capped near ``memory_tokens`` (oldest notes dropped, counted). Write: one call from
the memory. ``rounds`` select–read rounds (the paper: 15).

Prompt editions (``llm.prompt_edition``): the recorded one (:data:`~crewlib.prompts.RECORDED_EDITION`) sends
``SRW_READ`` and ``WRITE_SECTION`` as the notebooks' answers were recorded, and the reader's answer replaces the
memory. From 2026-12-06.1 the reader sees the paper by its title and answers with its notes on the work read
(``SRW_READ_WORK``: the work next to the instruction) and may give earlier notes again; the notes it does not give
again are kept (a small model that answered with the new note alone emptied the memory of every earlier work); a
title-only work is not sent to the reader. The write (``SRW_WRITE``) gets the paper's text first, then one line per
work read (its title and its notes as cited sentences), then the shape of a paragraph and the section rules.
"""

from __future__ import annotations

import json
import re

import pydantic

from crewlib import prompts
from crewlib.baselines.base import Generation, approx_tokens
from crewlib.baselines.single import _OnePrompt
from crewlib.data.records import RWGExample
from crewlib.llm import LLMError
from crewlib.prompts.parts import Filled, fill
from crewlib.tasks import Task, title_only
from crewlib.text import sentences

# A sentence the writer wrapped in the angle brackets of SRW_WRITE's paragraph shape ("<The theme ...>.").
_SHAPE_BRACKETS = re.compile(r"<([A-Z\[][^<>\n]*)>")


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


def merge_notes(memory: WorkingMemory, answer: WorkingMemory, key: str) -> WorkingMemory:
    """The memory updated with the reader's ``answer`` on ``key``: a work's notes in the answer replace its earlier
    notes, the notes of works the answer leaves out are kept, and notes on works not read yet (or not in the pool)
    are ignored. Oldest first, the work just read last (the cap drops from the front)."""
    read = {n.key for n in memory.notes} | {key}
    given: dict[str, list[MemoryNote]] = {}
    for note in answer.notes:
        note_key = note.key.strip().strip("[]").strip()
        if note_key in read and note.note.strip():
            given.setdefault(note_key, []).append(MemoryNote(key=note_key, note=note.note.strip()))
    notes: list[MemoryNote] = []
    for note in memory.notes:
        if note.key not in given:
            notes.append(note)
        elif not any(n.key == note.key for n in notes):  # a work's notes given again: in place of its first note
            notes.extend(given[note.key])
    if not any(n.key == key for n in memory.notes):
        notes.extend(given.get(key, []))
    return WorkingMemory(notes=notes)


def _ending_with_key(note: str, key: str) -> str:
    """``note`` as a cited sentence: its key before the closing full stop (``... test sets [R2].``)."""
    note = note.strip().removesuffix(f"[{key}]").strip().rstrip(".").rstrip()
    return f"{note} [{key}]."


def works_block(task: Task, order: list[str], memory: WorkingMemory) -> str:
    """One line per work read, in reading order: ``- [R3] "Title": note [R3]. note [R3].``; a title-only work says
    so (``- [R4] "Title" (known by its title only) [R4].``). One line a work, its notes as cited sentences: with the
    title on a line of its own and the notes below it, the 1.5B copied the list of titles as its section."""
    lines = []
    for key in order:
        ref = task.reference_by_key[key]
        if title_only(ref):
            lines.append(f'- [{key}] "{ref.title}" (known by its title only) [{key}].')
            continue
        notes = " ".join(_ending_with_key(n.note, key) for n in memory.notes if n.key == key)
        lines.append(f'- [{key}] "{ref.title}": {notes}'.rstrip())
    return "\n".join(lines)


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

    @property
    def edition(self) -> str:
        return self.params.llm.prompt_edition

    @property
    def recorded(self) -> bool:
        """The recorded edition: SRW's requests exactly as the notebooks' answers were recorded."""
        return self.edition == prompts.RECORDED_EDITION

    def read(self, task: Task, memory: WorkingMemory, key: str) -> WorkingMemory:
        """The memory after reading ``key``. Raises :class:`~crewlib.llm.LLMError` when the reader's call fails."""
        if not self.recorded:
            return merge_notes(memory, self.read_work(task, memory, key), key)
        ref = task.reference_by_key[key]
        prompt = prompts.SRW_READ.format(title=task.title, abstract=task.abstract, key=key, ref_title=ref.title,
                                         ref_abstract=ref.abstract[:1200],
                                         memory=json.dumps(memory.model_dump(), ensure_ascii=False))
        messages = [{"role": "system", "content": prompts.WRITER_SYSTEM}, {"role": "user", "content": prompt}]
        result = self.client.chat_json(messages, WorkingMemory, caller=self.caller("reader"),
                                       max_tokens=int(self.settings.read_max_tokens),
                                       prompt_version=prompts.PROMPT_VERSION)
        return result.parsed

    def read_prompt(self, task: Task, memory: WorkingMemory, key: str) -> Filled:
        """The reader's prompt on ``key`` since edition 2026-12-06.1 (``SRW_READ_WORK``)."""
        ref = task.reference_by_key[key]
        ref_text = prompts.SRW_TITLE_ONLY if title_only(ref) else ref.abstract[:1200]
        return fill(prompts.SRW_READ_WORK, title=task.title, key=key, ref_title=ref.title, ref_text=ref_text,
                    memory=json.dumps(memory.model_dump(), ensure_ascii=False))

    def read_work(self, task: Task, memory: WorkingMemory, key: str) -> WorkingMemory:
        """The reader's answer on ``key`` (its notes on the work, and the earlier notes it gives again)."""
        prompt = self.read_prompt(task, memory, key)
        messages = [{"role": "system", "content": prompts.WRITER_SYSTEM}, {"role": "user", "content": prompt.text}]
        result = self.client.chat_json(messages, WorkingMemory,
                                       caller=self.caller("reader", parts=prompt.with_system(prompts.WRITER_SYSTEM)),
                                       max_tokens=int(self.settings.read_max_tokens), prompt_version=self.edition)
        return result.parsed

    def write_prompt(self, task: Task, order: list[str], memory: WorkingMemory) -> Filled:
        """The write prompt since edition 2026-12-06.1 (``SRW_WRITE``): every work read, with its notes."""
        return fill(prompts.SRW_WRITE, title=task.title, abstract=task.abstract, works=works_block(task, order, memory),
                    words=task.target_words, rules=prompts.SECTION_RULES[self.edition])

    def write_from_memory(self, task: Task, order: list[str], memory: WorkingMemory) -> str:
        if self.recorded:
            titles = dict(zip(task.keys, (r.title for r in task.references), strict=True))
            read_list = "\n".join(f"[{k}] {titles[k]}" for k in order)
            notes = "\n".join(f"- [{n.key}] {n.note}" for n in memory.notes)
            return self.write(task, f"References read:\n{read_list}\n\nWorking memory:\n{notes}")
        prompt = self.write_prompt(task, order, memory)
        messages = [{"role": "system", "content": prompts.WRITER_SYSTEM}, {"role": "user", "content": prompt.text}]
        return self.client.chat(messages, caller=self.caller("writer", parts=prompt.with_system(prompts.WRITER_SYSTEM)),
                                max_tokens=self.max_tokens,
                                prompt_version=self.edition).content.strip()

    on_round = None  # optional callable(t) after each reading round (crew write's progress bar)

    def rounds_for(self, task: Task) -> int:
        """The reading rounds on ``task``: ``rounds`` papers read one by one, at most the pool (the progress bar's
        length; the writing call follows them)."""
        return len(reading_order(task, int(self.settings.rounds)))

    def _generate(self, example: RWGExample, task: Task) -> Generation:
        order = reading_order(task, int(self.settings.rounds))
        memory = WorkingMemory(notes=[])
        generation = Generation(self.name, example.target_id, "", dict(task.key_to_id))
        # Since 2026-12-06.1 a title-only work is not sent to the reader: there is nothing to read but its title,
        # which the write shows (asked for notes on it, the 1.5B invented its content).
        by_title = [] if self.recorded else [k for k in order if title_only(task.reference_by_key[k])]
        sizes = []
        for key in order:
            if key not in by_title:
                memory = self.read_counted(task, memory, key, generation)
            sizes.append(approx_tokens(memory.model_dump_json()))
            if self.on_round is not None:
                self.on_round(len(sizes))
        text = self.write_from_memory(task, order, memory)
        generation.notes = {"reading_order": order, "memory_tokens": sizes, "memory_cap": self.memory_tokens,
                            "memory_notes": len(memory.notes)}
        if not self.recorded:
            text, unwrapped = _SHAPE_BRACKETS.subn(r"\1", text)
            generation.notes.update(title_only_not_read=by_title, shape_brackets_removed=unwrapped)
        generation.text = text
        return generation

    def read_counted(self, task: Task, memory: WorkingMemory, key: str, generation: Generation) -> WorkingMemory:
        """One reading round: the memory after reading ``key``, capped; fallbacks and drops counted."""
        ref = task.reference_by_key[key]
        first = (sentences(ref.abstract) or [ref.title])[0]
        try:
            memory = self.read(task, memory, key)
        except LLMError as exc:
            # Counted fallback: keep the memory and note the paper's first abstract sentence.
            generation.fallbacks[f"reader: {type(exc).__name__}"] += 1
            memory = WorkingMemory(notes=[*memory.notes, MemoryNote(key=key, note=first)])
        if not self.recorded and not any(n.key == key for n in memory.notes):
            # Counted fallback: the reader gave no note on the work read; its first abstract sentence stands in.
            generation.fallbacks["reader: no note on the work read"] += 1
            memory = WorkingMemory(notes=[*memory.notes, MemoryNote(key=key, note=first)])
        memory, dropped = self.cap(memory)
        if dropped:
            generation.fallbacks["memory notes dropped at the cap"] += dropped
        return memory
