"""Metrics that ask an LLM: the judges (1–5 rubrics), NLI labels, citation functions.

- CREW's judge (the paper's Appendix C.1): Coverage, Logic, Relevance, each 1–5.
- MA-RWG's text quality (TQ): Clarity, Structure, Relevance, Motivation, Critics, each 1–5.
- RWGBench's judge score: Coherence, Organisation, Fluency, Academic style, each 1–5, with its
  own prompt and rubrics (``prompts.RWGBENCH_JUDGE``), mean = the score.
- NLI (entailment / neutral / contradiction, valued 1 / ½ / 0 in :data:`NLI_VALUE`): claim support
  (premise: a cited paper's title and abstract; hypothesis: the sentence citing it).
- RWGBench soft recall's alternatives: is a cited non-gold paper a topically compatible alternative to a gold
  paper the text does not cite, judged on their titles and abstracts (yes / no)? Definitions: docs/method.md
  §Metrics.

Every call goes through the project's :class:`~crewlib.llm.LLMClient` (cache, ledger, faults).
An answer that is not valid JSON for its schema is re-asked once by the client, then asked
again as a fresh sample up to ``retries`` times; if it still fails the judgement is recorded
as **missing** with its reason and counted — never turned into a number the judge did not give.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal, TypeVar

import pydantic

from crewlib import prompts
from crewlib.llm import CacheMissError, Caller, Ledger, LLMClient, LLMError, connect_override
from crewlib.schema import Params

T = TypeVar("T", bound=pydantic.BaseModel)

CREW_DIMENSIONS = ("coverage", "logic", "relevance")
TQ_DIMENSIONS = ("clarity", "structure", "relevance", "motivation", "critics")  # MA-RWG text quality
RWGBENCH_DIMENSIONS = ("coherence", "organisation", "fluency", "academic_style")  # RWGBench judge score
CITATION_FUNCTIONS = ("motivation", "background", "uses", "extends", "similarities", "differences", "future_work")
NLI_VALUE = {"entailment": 1.0, "neutral": 0.5, "contradiction": 0.0}


class JudgeAnswer(pydantic.BaseModel):
    rationale: str
    score: int = pydantic.Field(ge=1, le=5)


class NLIAnswer(pydantic.BaseModel):
    reason: str  # first: a small model labels better after a one-sentence reason
    label: Literal["entailment", "neutral", "contradiction"]


class AlternativeAnswer(pydantic.BaseModel):
    reason: str
    compatible: Literal["yes", "no"]


class FunctionAnswer(pydantic.BaseModel):
    function: Literal[CITATION_FUNCTIONS]  # type: ignore[valid-type]


@dataclass(frozen=True)
class Judge:
    name: str
    client: LLMClient


def judges_from_params(params: Params, *, ledger: Ledger | None = None) -> list[Judge]:
    """The judges listed in ``params.eval.judges``; each entry overrides the ``llm`` block.

    ``null`` (or ``{}``) is the run's own LLM; e.g. ``{name: gpt-4o, provider: openai, base_url:
    https://openrouter.ai/api/v1, model: openai/gpt-4o, api_key_env: OPENROUTER_API_KEY}``.
    """
    entries = params.eval.judges or [None]
    judges = []
    for i, entry in enumerate(entries):
        entry = dict(entry or {})
        name = entry.pop("name", None)
        client = connect_override(params, entry, ledger=ledger)
        judges.append(Judge(name or f"judge{i + 1}:{client.model}", prompts.for_task(client, params.llm.task_wording)))
    return judges


@dataclass(frozen=True)
class Asked:
    """One structured answer, or why there is none."""

    parsed: pydantic.BaseModel | None
    reason: str = ""  # empty when parsed
    attempts: int = 1


def ask(client: LLMClient, messages: list[dict], schema: type[T], *, caller: Caller, retries: int = 1,
        check: Callable[[T], str] | None = None, max_tokens: int | None = None, temperature: float | None = None,
        first_sample: int = 0) -> Asked:
    """Ask for a ``schema`` answer; fresh samples on failure; :class:`Asked` with a reason if none is usable.

    ``first_sample``: the sample index of the first attempt (independent askers use disjoint ranges).
    """
    reason = ""
    for attempt in range(retries + 1):
        try:
            result = client.chat_json(messages, schema, caller=caller, sample_index=first_sample + attempt,
                                      max_tokens=max_tokens, temperature=temperature,
                                      prompt_version=prompts.EVAL_PROMPT_VERSION)
        except CacheMissError:
            raise  # replay: a stale recording is an error, never a missing judgement
        except LLMError as exc:
            reason = f"{type(exc).__name__}: {exc}"[:300]
            continue
        problem = check(result.parsed) if check else ""
        if not problem:
            return Asked(result.parsed, attempts=attempt + 1)
        reason = problem
    return Asked(None, reason or "no answer", attempts=retries + 1)


def parallel(fn: Callable, items: Sequence, workers: int) -> list:
    """``[fn(item) for item in items]`` on up to ``workers`` threads, results in order."""
    if workers <= 1 or len(items) <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items)), thread_name_prefix="eval") as pool:
        return list(pool.map(fn, items))


def judge_messages(dimension: str, *, title: str, abstract: str, references: str, text: str) -> list[dict]:
    prompt = prompts.JUDGE.format(dimension=dimension, rubric=prompts.RUBRICS[dimension], title=title,
                                  abstract=abstract, references=references, text=text)
    return [{"role": "system", "content": prompts.JUDGE_SYSTEM}, {"role": "user", "content": prompt}]


def rwgbench_judge_messages(dimension: str, *, title: str, abstract: str, text: str) -> list[dict]:
    """RWGBench's judge: its own prompt and rubric for one of :data:`RWGBENCH_DIMENSIONS`."""
    prompt = prompts.RWGBENCH_JUDGE.format(dimension=dimension.replace("_", " "),
                                           rubric=prompts.RWGBENCH_RUBRICS[dimension], title=title,
                                           abstract=abstract, text=text)
    return [{"role": "system", "content": prompts.JUDGE_SYSTEM}, {"role": "user", "content": prompt}]


def alternative_messages(*, title: str, cited: str, alternative: str) -> list[dict]:
    """RWGBench soft recall: could the paper ``alternative`` stand in for the gold paper ``cited`` (titles and
    abstracts) in the related work of the paper titled ``title``?"""
    return [{"role": "system", "content": prompts.ALTERNATIVE_SYSTEM},
            {"role": "user", "content": prompts.ALTERNATIVE_CITATION.format(title=title, cited=cited,
                                                                           alternative=alternative)}]


def nli_messages(premise: str, hypothesis: str) -> list[dict]:
    return [{"role": "system", "content": prompts.NLI_SYSTEM},
            {"role": "user", "content": prompts.NLI.format(premise=premise, hypothesis=hypothesis)}]


def function_messages(sentence: str) -> list[dict]:
    return [{"role": "system", "content": prompts.JUDGE_SYSTEM},
            {"role": "user", "content": prompts.CITATION_FUNCTION.format(sentence=sentence)}]
