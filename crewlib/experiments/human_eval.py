"""Notebook 09: blinded CREW-vs-SRW packets, and the analysis of filled sheets (human, or LLM annotators).

``write_packets`` turns a run's generations into one sheet and one HTML page per annotator
(:func:`crewlib.eval.human.make_pair_packets`: blinded, order-randomised, the key kept apart).
Filled sheets are read from a folder (``packet_<annotator>.csv``, the packet with its 1 / 2 /
tie cells filled); with none there, ``fill_with_llm`` fills the same sheets with LLM annotators
— each annotator a differently seeded sample of the configured model, reading what a person
would read — and every table says so (:data:`LLM_LABEL`). ``analyse`` computes win/tie/loss
with CIs, the sign test, Fleiss' κ and the agreement with the LLM judge, whatever filled them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pandas as pd
import pydantic

from crewlib import prompts
from crewlib.eval import human, human_stats
from crewlib.eval.llm_metrics import ask
from crewlib.llm import Caller, LLMClient
from crewlib.schema import Params

LLM_LABEL = "LLM annotators — not a human evaluation"
HUMAN_LABEL = "human annotators"
Choice = Literal["1", "2", "tie"]


class PairAnswer(pydantic.BaseModel):
    coverage: Choice
    logic: Choice
    relevance: Choice

    @pydantic.field_validator("coverage", "logic", "relevance", mode="before")
    @classmethod
    def _text(cls, value):  # a small model writes 1 for "1" and "Tie" for "tie"
        return str(value).strip().lower()


def evaluation_sample(params: Params) -> list:
    """The (example, task) pairs the packets are made of: ``human.pairs`` papers of the evaluation split drawn at
    random with ``human.seed`` (the paper: 20), in the split's order; every evaluation paper when it is null."""
    from crewlib.data.split import seeded_sample
    from crewlib.tasks import build_tasks

    return seeded_sample(build_tasks(params).evaluation, params.human.pairs, params.human.seed)


def context_of(examples) -> dict[str, str]:
    """What an annotator sees above each pair: the target's title and abstract."""
    return {e.target_id: f"{e.title}\n\n{e.abstract}" for e in examples}


def write_packets(frame: pd.DataFrame, examples, out_dir: str | Path, *, annotators: Sequence[str],
                  system_a: str = "crew", system_b: str = "srw", seed: int = 0) -> pd.DataFrame:
    """Blinded packets of ``system_a`` vs ``system_b`` for each annotator; returns the key (also ``key.csv``)."""
    return human.make_pair_packets(frame, system_a, system_b, annotators=annotators, out_dir=out_dir, seed=seed,
                                   context=context_of(examples))


def filled_sheets(folder: str | Path) -> list[Path]:
    """The filled sheets in ``folder`` (``packet_<annotator>.csv``), sorted; none when it does not exist."""
    folder = Path(folder)
    return sorted(folder.glob("packet_*.csv")) if folder.is_dir() else []


@dataclass
class Filled:
    sheets: list[Path]
    failed: int = 0  # LLM answers unusable after retries, filled as "tie" and counted
    reasons: list[str] = field(default_factory=list)


def fill_with_llm(packets_dir: str | Path, out_dir: str | Path, client: LLMClient, *, annotators: Sequence[str],
                  temperature: float = 0.7, retries: int = 1) -> Filled:
    """Fill each annotator's packet with the LLM: one call per pair, a differently seeded sample per annotator."""
    packets_dir, out_dir = Path(packets_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    questions = "\n".join(f"- {dim}: {q}" for dim, q in human.QUESTIONS.items())
    filled = Filled([])
    for a, name in enumerate(annotators):
        packet = pd.read_csv(packets_dir / f"packet_{name}.csv", dtype=str, keep_default_na=False)
        for i, row in packet.iterrows():
            messages = [{"role": "system", "content": prompts.PAIR_ANNOTATOR_SYSTEM},
                        {"role": "user", "content": prompts.PAIR_ANNOTATOR.format(
                            context=row["context"], text_1=row["text_1"], text_2=row["text_2"], questions=questions,
                            keys=", ".join(human.DIMENSIONS))}]
            asked = ask(client, messages, PairAnswer, caller=Caller("human_eval", f"annotator:{name}"),
                        retries=retries, max_tokens=60, temperature=temperature, first_sample=100 * a)
            answer = asked.parsed
            if answer is None:
                filled.failed += 1
                filled.reasons.append(f"{name} {row['pair_id']}: {asked.reason}")
            for dim in human.DIMENSIONS:
                packet.loc[i, dim] = getattr(answer, dim) if answer is not None else "tie"
            packet.loc[i, "comment"] = "" if answer is not None else "LLM answer unusable: filled as tie"
        path = out_dir / f"packet_{name}.csv"
        packet.to_csv(path, index=False, encoding="utf-8")
        filled.sheets.append(path)
    return filled


@dataclass
class Analysis:
    label: str
    annotations: pd.DataFrame
    win_tie_loss: pd.DataFrame
    kappa: pd.DataFrame
    judge_agreement: pd.DataFrame | None


def analyse(sheets: Sequence[Path], key_path: str | Path, *, label: str, system_a: str = "crew",
            system_b: str = "srw", judge_scores: pd.DataFrame | None = None, seed: int = 0) -> Analysis:
    """Win/tie/loss of ``system_a`` (CIs, sign test), Fleiss' κ, and agreement with the LLM judge."""
    annotations = human.read_annotations(list(sheets), key_path, system_a=system_a)
    wtl = human_stats.win_tie_loss(annotations, seed=seed).assign(annotators=label)
    kappa = (human_stats.fleiss_kappa_by_dimension(annotations).assign(annotators=label)
             if annotations["annotator"].nunique() >= 2 else pd.DataFrame())
    agreement = None
    if judge_scores is not None and not judge_scores.empty:
        agreement = human_stats.judge_agreement(annotations, judge_scores, system_a=system_a,
                                          system_b=system_b).assign(annotators=label)
    return Analysis(label, annotations, wtl, kappa, agreement)


def beside_paper(wtl: pd.DataFrame, paper_wins: Mapping[str, float]) -> pd.DataFrame:
    """Our win share per dimension with its CI and the paper's (the human study, CREW vs SRW) beside it."""
    out = wtl[["dimension", "n_pairs", "n", "win", "tie", "loss", "win_ci_low", "win_ci_high", "win_excl_ties",
               "sign_test_p", "sign_test_pairs_p", "annotators"]].copy()
    out["CREW preferred (paper, 20 papers, humans)"] = out["dimension"].map(lambda d: paper_wins.get(d))
    return out.set_index("dimension")
