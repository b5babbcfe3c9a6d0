"""Single-LLM baselines: long context (every reference in one prompt) and RAG (top-k chunks)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crewlib import prompts
from crewlib.baselines.base import Generation, System, approx_tokens, reference_block
from crewlib.data.records import RWGExample
from crewlib.schema import Params
from crewlib.tasks import Task


def context_tokens(params: Params, configured: int | None, setting: str) -> int:
    """A one-prompt system's context: ``configured``, else the embedded model's slot; for another endpoint a
    ValueError starting with ``setting`` (what to set) names the model."""
    if configured:
        return int(configured)
    llm = params.llm
    if llm.provider == "embedded":
        return int(llm.embedded.n_ctx_per_slot)
    raise ValueError(f"{setting} to the context of {llm.model} (null means the embedded model's "
                     "llm.embedded.n_ctx_per_slot)")


class _OnePrompt(System):
    """Write the section in one call from ``material`` (a block of keyed reference text)."""

    def write(self, task: Task, material: str) -> str:
        edition = self.params.llm.prompt_edition
        prompt = prompts.WRITE_SECTION.format(title=task.title, abstract=task.abstract, material=material,
                                              words=task.target_words, rules=prompts.SECTION_RULES[edition])
        messages = [{"role": "system", "content": prompts.WRITER_SYSTEM}, {"role": "user", "content": prompt}]
        return self.client.chat(messages, caller=self.caller("writer"), max_tokens=self.max_tokens,
                                prompt_version=edition).content.strip()

    @property
    def max_tokens(self) -> int:
        return int(self.params.baselines.max_tokens)


class LongContext(_OnePrompt):
    """Target + every reference in one prompt, cut to the model's context (the cut is recorded)."""

    name = "long_context"

    @property
    def context_tokens(self) -> int:
        return context_tokens(self.params, self.settings.context_tokens,
                              "long_context: set baselines.long_context.context_tokens")

    def material(self, task: Task) -> tuple[str, dict]:
        """The reference block that fits, and what was cut. Budgets use :func:`approx_tokens` with a 10% margin."""
        rules = prompts.SECTION_RULES[self.params.llm.prompt_edition]
        frame = prompts.WRITER_SYSTEM + prompts.WRITE_SECTION.format(title=task.title, abstract=task.abstract,
                                                                     material="", words=task.target_words, rules=rules)
        budget = int(0.9 * (self.context_tokens - self.max_tokens - approx_tokens(frame)))
        lines, used, truncated = [], 0, None
        for key in task.keys:
            line = reference_block(task, keys=[key], abstract_chars=10**6)
            cost = approx_tokens(line) + 1
            if used + cost <= budget:
                lines.append(line)
                used += cost
                continue
            room_chars = 4 * (budget - used) - 1
            if room_chars >= 200:  # a useful part of the next reference still fits
                lines.append(line[:room_chars] + " ...")
                truncated = key
            break
        if not lines:
            raise ValueError(f"target {task.target_id}: the context ({self.context_tokens} tokens) leaves no room "
                             "for any reference; raise baselines.long_context.context_tokens")
        included = len(lines)
        notes = {"context_tokens": self.context_tokens, "budget_tokens": budget, "references": len(task.keys),
                 "references_included": included, "references_dropped": len(task.keys) - included,
                 "truncated_reference": truncated, "truncated": truncated is not None or included < len(task.keys)}
        return "References:\n" + "\n".join(lines), notes

    def _generate(self, example: RWGExample, task: Task) -> Generation:
        material, notes = self.material(task)
        return Generation(self.name, example.target_id, self.write(task, material), dict(task.key_to_id), notes=notes)


@dataclass(frozen=True)
class Chunk:
    key: str
    text: str
    score: float  # cosine with the target (MiniLM)


class RAG(_OnePrompt):
    """Chunk the references, embed with MiniLM, keep the top-k chunks most similar to the target.

    A reference gives at most ``max_chunks_per_reference`` chunks (its opening words): a
    200,000-word text would otherwise cost minutes of embedding; what is cut is recorded in
    ``notes["chunks_dropped"]``.
    """

    name = "rag"

    def chunks(self, task: Task) -> tuple[list[tuple[str, str]], int]:
        """(key, text) chunks of every reference, and how many chunks the per-reference cap dropped."""
        size, cap = int(self.settings.chunk_words), int(self.settings.max_chunks_per_reference)
        out, dropped = [], 0
        for key, ref in zip(task.keys, task.references, strict=True):
            words = ref.abstract.split() or ["(no abstract)"]
            starts = range(0, len(words), size)
            dropped += max(0, len(starts) - cap)
            for start in starts[:cap]:
                out.append((key, f"{ref.title}: {' '.join(words[start:start + size])}"))
        return out, dropped

    def retrieve(self, task: Task, chunks: list[tuple[str, str]] | None = None) -> list[Chunk]:
        """The ``top_k`` chunks by cosine with the target's title and abstract, best first."""
        from crewlib.relevance import embed

        chunks = chunks if chunks is not None else self.chunks(task)[0]
        vectors = embed([task.target_text] + [text for _, text in chunks])
        scores = vectors[1:] @ vectors[0]
        order = np.argsort(-scores, kind="stable")[: int(self.settings.top_k)]
        return [Chunk(chunks[i][0], chunks[i][1], float(scores[i])) for i in order]

    def _generate(self, example: RWGExample, task: Task) -> Generation:
        chunks, dropped = self.chunks(task)
        retrieved = self.retrieve(task, chunks)
        material = "Retrieved passages of the references:\n" + "\n".join(f"[{c.key}] {c.text}" for c in retrieved)
        notes = {"chunks": len(chunks), "chunks_dropped": dropped,
                 "retrieved": [(c.key, round(c.score, 4)) for c in retrieved]}
        return Generation(self.name, example.target_id, self.write(task, material), dict(task.key_to_id), notes=notes)
