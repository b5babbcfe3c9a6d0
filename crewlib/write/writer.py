"""Writing the user's section: the target, the output folder, one system's run, and the files written.

:func:`write_related_work` is the whole job from Python; :mod:`crewlib.write.command` is its command
line. A run either writes a section or raises :class:`WriteFailed` (an empty section, or every LLM
call failed), with nothing written to the output folder; answers received are cached, so a rerun
pays for none of them again.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from crewlib import CrewError
from crewlib.baselines import system_class
from crewlib.baselines.planned import planned_cost
from crewlib.baselines.runner import run_system
from crewlib.config import with_overrides
from crewlib.data.records import RecordError, Reference, RWGExample, with_introduction
from crewlib.eval.relating import task_relating
from crewlib.llm.settings import user_cache_dir
from crewlib.schema import Params
from crewlib.tasks import build_tasks
from crewlib.write.out_folder import OutputFolder, prepare_out
from crewlib.write.reference_files import ReferenceList
from crewlib.write.render import to_latex, to_markdown, without_unknown_citations


class WriteFailed(CrewError, RuntimeError):
    """A run that wrote no usable section: the message says why in one line."""


def own_example(title: str, abstract: str, references: Sequence[Reference], introduction: str = "",
                introduction_words: int = 300) -> RWGExample:
    """The user's paper as an example without gold: the introduction's first ``introduction_words`` words,
    when given, follow the abstract (the target text every system reads). Its id is a digest of what it
    holds, so cached features and answers never mix two papers."""
    if not title.strip():
        raise ValueError("the target paper needs a title (--title)")
    if not abstract.strip():
        raise ValueError("the target paper needs an abstract (--abstract): the systems write for it")
    text = with_introduction(abstract, introduction, introduction_words)
    digest = hashlib.sha1(json.dumps([title, text, [(r.id, r.title, r.abstract) for r in references]])
                          .encode()).hexdigest()[:12]
    try:
        return RWGExample(f"own-{digest}", " ".join(title.split()), text, tuple(references)).validate(
            require_gold=False)
    except RecordError as exc:
        raise ValueError(str(exc)) from exc


@dataclass
class WriteResult:
    example: RWGExample
    generation: object  # crewlib.baselines.Generation
    summary: dict
    out: Path
    markdown: str
    latex: str
    written: tuple[str, ...] = ()

    @property
    def summary_line(self) -> str:
        s = self.summary
        verification = s["citation_verification"]
        share = "no citation"
        if verification is not None:
            unverifiable = s["unverifiable_citations"]
            share = (f"{verification:.0%} ({s['markers_resolved']}/{s['citations']}"
                     + (f"; unverifiable citations: {unverifiable})" if unverifiable else ")"))
        tokens = s["prompt_tokens"] + s["completion_tokens"]
        fallbacks = sum(s["fallbacks"].values())
        return (f"{s['system']}: {s['calls']} LLM calls, {tokens:,} tokens, {s['wall_time_s']:.1f} s; citation "
                f"verification {share}; {s['cited']} of {s['references']} references cited; {s['words']} words"
                + (f"; {fallbacks} counted fallbacks (summary.json)" if fallbacks else "")
                + _unknown_note(s.get("unknown_citations_removed") or {})
                + (f"; {s['cut_answers']} answers stopped at the token limit (llm.max_tokens)"
                   if s.get("cut_answers") else "")
                + (f"; the budget of {s['budget']['max_calls']} calls was spent: {s['budget']['calls_not_made']} "
                   "calls not made" if (s.get("budget") or {}).get("calls_not_made") else ""))


MIN_SECTION_WORDS = 60  # shorter is no related-work section: a paragraph of a human one runs to about 100 words


def _unknown_note(removed: dict) -> str:
    """The summary line's words on citations of keys the references do not hold, taken out of the section."""
    if not removed.get("citations"):
        return ""
    return (f"; citations of keys the references do not hold removed: {', '.join(removed['citations'][:5])}"
            f" ({removed['sentences']} sentences removed)")


def on_user_side(params: Params) -> Params:
    """``params`` with the caches of a write on the user's side: a relative ``llm.cache_dir`` or
    ``features.cache_dir`` (the shipped ``llm_cache`` and ``outputs/features``, which resolve against the project
    checkout, where the notebooks keep theirs) goes under ``$CREW_WRITE_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/crewlib/write`` (default ``~/.cache``); an absolute one (a params file's, ``CREW_LLM_CACHE_DIR``)
    stays. So ``crew write`` in a researcher's folder never writes into the installed package or the checkout."""
    home = user_cache_dir("write", "CREW_WRITE_CACHE_DIR")
    changes = {block: {"cache_dir": str(home / value)} for block, value in (
        ("llm", params.llm.cache_dir), ("features", params.features.cache_dir))
        if value and not Path(value).expanduser().is_absolute()}
    return with_overrides(params, changes) if changes else params


def check_rounds(params: Params, system: str, rounds: int | str | None) -> int | str | None:
    """``rounds`` for ``system``, checked before any work: a number the system can write in, or ``auto``; None:
    auto for a system that has it (CREW), else its params."""
    block = getattr(params.baselines, system, None)
    if rounds is None and hasattr(block, "max_rounds"):
        return "auto"  # crew write plays rounds that fit the pool (the demo and notebooks keep their fixed rounds)
    if rounds is None:
        return None
    if not hasattr(block, "rounds"):
        raise ValueError(f"rounds (--rounds): the system {system!r} plays no rounds")
    if rounds == "auto" and not hasattr(block, "max_rounds"):
        raise ValueError(f"rounds auto (--rounds): {system} has no rounds that fit the pool (crew has); give a "
                         f"number (its params: {block.rounds})")
    most = getattr(block, "max_rounds", params.env.horizon)  # CREW's cap; any other system's: the horizon
    if rounds != "auto" and int(rounds) > most:
        raise ValueError(f"rounds {rounds} (--rounds): at most {most} for {system} (baselines.{system}.max_rounds or "
                         "env.horizon in the params); each round costs LLM calls")
    least = system_class(system).min_rounds(params)
    if rounds != "auto" and int(rounds) < least:
        raise ValueError(f"rounds {rounds} (--rounds): {system} writes nothing in fewer than {least} rounds "
                         f"(it must read before it composes); give at least {least}, or auto")
    return rounds


def write_related_work(title: str, abstract: str, references: ReferenceList | Sequence[Reference], *,
                       params: Params, system: str = "crew", rounds: int | str | None = None, introduction: str = "",
                       out: str | Path | OutputFolder = "related_work", force: bool = False, progress: bool = False,
                       session: dict | None = None, extra_summary: dict | None = None,
                       max_calls: int | None = None) -> WriteResult:
    """Write the related-work section of the user's paper with ``system`` (files: :mod:`crewlib.write`).

    ``rounds``: a number, or ``auto`` (enough rounds to read every reference with an abstract, at most
    ``baselines.<system>.max_rounds``); None: auto for a system that has it (CREW), else its params.
    ``session``: a dict that receives the LLM ``client`` once connected (the command counts its answers on
    Ctrl-C); ``extra_summary``: more facts for ``summary.json`` (the references ``--select`` chose).
    ``max_calls``: a budget of live LLM calls; once spent, no call is made and the run ends with what was answered
    (the calls not made are counted fallbacks, ``summary.json``'s ``budget``). Raises :class:`WriteFailed` when the
    run wrote no usable section (nothing written then).
    """
    refs = references.references if isinstance(references, ReferenceList) else list(references)
    params = on_user_side(params)
    _check_pool(params, system, refs)
    rounds = check_rounds(params, system, rounds)
    example = own_example(title, abstract, refs, introduction)
    folder = out if isinstance(out, OutputFolder) else prepare_out(out, force=force)
    bars = []

    def progress_bar(writer, client, task) -> None:
        bars.append(_round_bar(writer, task, progress))

    def stop_when_every_call_fails(writer, client, task) -> None:
        _stop_when_every_call_fails(writer, client)

    def plan(writer, client, task) -> None:  # before the first call: what the run will spend (stderr, summary.json)
        if client is not None:
            client.max_calls = max_calls
        planned[:] = [planned_cost(writer, task)]
        if planned[0] is not None and client is not None:
            print(f"plan: {writer.name} at {client.model}, {planned[0].line()}", file=sys.stderr)

    planned: list = []

    try:
        run = run_system(params, system, example,
                         lambda p: build_tasks(p, [example], min_connections=0).tasks[example.target_id],
                         rounds=rounds, hooks=(plan, progress_bar, stop_when_every_call_fails), session=session)
        _check_outcome(system, run.generation)
        extra = dict(extra_summary or {})
        if planned and planned[0] is not None:
            extra["planned"] = planned[0].as_dict()
        if max_calls is not None and run.client is not None:
            extra["budget"] = {"max_calls": max_calls, "calls_not_made": run.client.calls_refused}
        result = _save(example, run, references, folder.path, extra)
    except BaseException:
        if folder is not out:
            folder.abandon()
        raise
    finally:
        for bar in bars:
            if bar is not None:
                bar.close()
    if folder is not out:
        folder.finish()
    return result


def _check_pool(params: Params, system: str, refs: Sequence[Reference]) -> None:
    """Refuse, before any work, a pool too small for ``system`` to write a paragraph from, naming why."""
    least = system_class(system).min_references(params)
    if len(refs) < least:
        raise ValueError(f"{len(refs)} reference(s): {system} composes a paragraph from at least {least} works "
                         f"(env.compose_min_sources); give at least {least} references, or a system that writes from "
                         "one prompt (long_context)")


def _check_outcome(system: str, generation) -> None:
    """Raise :class:`WriteFailed` for an empty section, a run in which every LLM call failed, or a section shorter
    than :data:`MIN_SECTION_WORDS` written from answers cut at their token limit (a long-context answer cut after
    its first sentence left 18 words, and exit 0)."""
    cut = sum(r.cut for r in generation.records)
    words = len(generation.text.split())
    if cut and 0 < words < MIN_SECTION_WORDS:
        raise WriteFailed(f"{system} wrote {words} words: {cut} of its answers stopped at the token limit "
                          f"(llm.max_tokens); raise it in a --params file (llm: {{max_tokens: N}}); nothing written")
    failed = [r for r in generation.records if r.error]
    calls = len(generation.records)
    reasons = sum(generation.fallbacks.values())
    first = failed[0].error if failed else next(iter(generation.fallbacks), "")
    if calls and len(failed) == calls:
        raise WriteFailed(f"{system}: all {calls} LLM calls failed (first: {first}); nothing written")
    if not generation.text.strip():
        why = (f"{len(failed)} of {calls} LLM calls failed, {reasons} counted fallbacks" if calls
               else f"{reasons} counted fallbacks")
        raise WriteFailed(f"{system} wrote an empty section: {why}" + (f" (first: {first})" if first else "")
                          + "; nothing written")


def _save(example, run, references, out: Path, extra: dict) -> WriteResult:
    generation, writer, client = run.generation, run.system, run.client
    refs = list(example.references)
    title_only = references.title_only if isinstance(references, ReferenceList) else []
    years = references.years_as_written if isinstance(references, ReferenceList) else {}
    written = []
    trace = getattr(writer, "trace", None)
    if trace is not None:
        trace.save(out)  # trace.json (and its own related_work.md, replaced below)
        written.append("trace.json")
    if client is not None:
        client.ledger.to_csv(out / "ledger.csv")
        written.append("ledger.csv")
    (out / "generation.json").write_text(json.dumps(generation.to_dict(), indent=1, default=str) + "\n")
    check = generation.citation_check
    cost = generation.cost
    summary = {"system": generation.system, "title": example.title, "target_id": example.target_id,
               "model": client.model if client else None, "endpoint": client.endpoint if client else None,
               "references": len(refs), "references_title_only": len(title_only), "title_only_keys": title_only,
               "cited": len(set(check.cited_ids)), "markers": check.markers, "markers_resolved": check.resolved,
               "citations": check.citations, "unverifiable_citations": len(check.stray),
               "unverifiable": list(check.stray), "citation_verification": check.verification,
               "unresolved_keys": sorted(set(check.unresolved_keys)),
               "calls": cost["calls"], "prompt_tokens": cost["prompt_tokens"],
               "completion_tokens": cost["completion_tokens"], "wall_time_s": round(generation.wall_s, 2),
               "fallbacks": dict(generation.fallbacks), "words": len(generation.text.split()),
               "rounds": generation.notes.get("rounds"), "rounds_played": generation.notes.get("rounds_played"),
               "output_checks": generation.notes.get("output_checks"),
               **({"themes": generation.notes["themes"]} if "themes" in generation.notes else {}),
               "relating": task_relating(generation.text, run.task, run.params.output.support_threshold,
                                   run.params.eval.paragraph_sentences),
               **({"cost": client.ledger.breakdown(list(generation.records))} if client else {}), **extra}
    footer = (f"Written by {generation.system}" + (f" with {summary['model']}" if summary["model"] else "") + ". "
              f"Citation verification: {check.resolved}/{check.citations} citations resolve"
              + (f"; known by their title only: {len(title_only)} of {len(refs)} references" if title_only else "")
              + ".")
    text, unknown, removed = without_unknown_citations(generation.text, generation.key_to_id)
    summary["unknown_citations_removed"] = {"citations": unknown, "sentences": removed}
    summary["cut_answers"] = sum(r.cut for r in generation.records)  # stopped at llm.max_tokens
    markdown = to_markdown(example, text, generation.key_to_id, footer, years)
    latex = to_latex(example, text, generation.key_to_id, header=footer)
    (out / "related_work.md").write_text(markdown)
    (out / "related_work.tex").write_text(latex)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    written = ["related_work.md", "related_work.tex", "generation.json", "summary.json", *written]
    return WriteResult(example, generation, summary, out, markdown, latex, tuple(written))


def _stop_when_every_call_fails(writer, client, least: int = 3) -> None:
    """After each round of an environment system: when every one of at least ``least`` LLM calls so far failed
    (a dead endpoint, a revoked key), stop with :class:`WriteFailed` instead of playing the remaining rounds
    into the same wall (each failing call waits out its retries)."""
    if client is None or not hasattr(writer, "rounds_for"):
        return
    mark = client.ledger.mark()
    after = writer.on_round

    def on_round(t: int) -> None:
        if after is not None:
            after(t)
        records = client.ledger.since(mark)
        if len(records) >= least and all(r.error for r in records):
            rounds = "round" if t == 1 else f"{t} rounds"
            raise WriteFailed(f"{writer.name}: all {len(records)} LLM calls failed in the first {rounds} (first: "
                              f"{records[0].error}); stopped, nothing written")

    writer.on_round = on_round


def _round_bar(writer, task, progress: bool):
    """A progress bar over the rounds of an environment system (one step for a single-prompt system)."""
    if not progress or not hasattr(writer, "rounds_for"):
        return None
    from tqdm import tqdm  # plain text bars: no widget (and no IProgress warning) in notebooks

    bar = tqdm(total=writer.rounds_for(task), desc=f"{writer.name} rounds", unit="round")
    writer.on_round = lambda t: bar.update(1)
    return bar
