"""Scores of a long-document summary against its document and reference abstract (docs/method.md, "SQ2E").

- ROUGE-1/2/L and BERTScore (the offline MiniLM, labelled as not comparable with roberta-large)
  against the reference abstract: :mod:`crewlib.eval.text_metrics`.
- **Factual consistency**, FactCC-style: the share of the summary's sentences (at most
  ``sq2e.fact.max_sentences``, in order) consistent with the document. With FactCC's weights
  (``sq2e.fact.factcc_path`` or ``CREW_FACTCC_PATH``: a folder with a BERT sequence classifier whose
  labels include CORRECT) the classifier labels each (document, sentence) pair, the document cut to
  its 512 tokens as FactCC was trained. Without them (offline), the first judge of ``eval.judges``
  labels each sentence against the document's parts most relevant to it (:mod:`.evidence`, within
  ``sq2e.fact.evidence_words``):
  entailment counts as consistent, neutral and contradiction do not. The two are different
  instruments and the score's label says which one made it; a judgement that stays invalid after
  the re-ask is left out and counted.
"""

from __future__ import annotations

import os
from pathlib import Path

from crewlib import prompts
from crewlib.data.records import LongDocument
from crewlib.eval.llm_metrics import NLIAnswer, judges_from_params
from crewlib.llm import Caller, LLMClient, OutputValidationError
from crewlib.schema import Params
from crewlib.sq2e.evidence import document_parts, select_parts, show
from crewlib.text import sentences

LLM_LABEL = "factual consistency: LLM entailment per summary sentence ({model}; FactCC-style, not FactCC)"
FACTCC_LABEL = "factual consistency: FactCC classifier ({path})"


class FactCCUnavailable(RuntimeError):
    """FactCC's weights cannot be loaded (offline, or a folder that is not FactCC)."""


def factcc_path(params: Params) -> str | None:
    return os.environ.get("CREW_FACTCC_PATH") or params.sq2e.fact.factcc_path


class FactCC:
    """The FactCC classifier from a local folder (BERT, labels with CORRECT)."""

    def __init__(self, path: str) -> None:
        folder = Path(path).expanduser()
        if not (folder / "config.json").is_file():
            raise FactCCUnavailable(f"FactCC weights not found: {folder} holds no config.json")
        try:
            from transformers import AutoModelForSequenceClassification, AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
            self.model = AutoModelForSequenceClassification.from_pretrained(str(folder)).eval()
        except Exception as exc:  # a broken or foreign folder
            raise FactCCUnavailable(f"FactCC weights in {folder} could not be loaded ({type(exc).__name__})") from exc
        labels = {str(v).upper(): int(k) for k, v in self.model.config.id2label.items()}
        if "CORRECT" not in labels:
            raise FactCCUnavailable(f"{folder} is not FactCC: its labels are {sorted(labels)}, without CORRECT")
        self.correct = labels["CORRECT"]
        self.path = str(folder)

    def consistent(self, document: str, sentence: str) -> bool:
        import torch

        batch = self.tokenizer(document, sentence, truncation="only_first", max_length=512, return_tensors="pt")
        with torch.no_grad():
            return int(self.model(**batch).logits.argmax(-1)) == self.correct


class FactualConsistency:
    """The FactCC-style score of summaries (module docstring); ``label`` names the instrument."""

    def __init__(self, params: Params, client: LLMClient | None = None) -> None:
        self.settings = params.sq2e.fact
        self.part_words = int(params.sq2e.part_words)
        self.evidence_words = int(self.settings.evidence_words)
        self.classifier: FactCC | None = None
        method = self.settings.method
        path = factcc_path(params)
        if method in ("auto", "factcc") and path:
            try:
                self.classifier = FactCC(path)
            except FactCCUnavailable:
                if method == "factcc":
                    raise
        elif method == "factcc":
            raise FactCCUnavailable("sq2e.fact.method is factcc but no weights are given (sq2e.fact.factcc_path "
                                    "or CREW_FACTCC_PATH)")
        self.client = None if self.classifier else (client or judges_from_params(params)[0].client)
        self.label = (FACTCC_LABEL.format(path=self.classifier.path) if self.classifier
                      else LLM_LABEL.format(model=self.client.model))

    def score(self, summary: str, doc: LongDocument) -> dict:
        """``factual_consistency`` (share of judged sentences consistent), ``fact_sentences``, ``fact_missing``."""
        claims = sentences(summary)[: int(self.settings.max_sentences)]
        verdicts = [self._consistent(claim, doc) for claim in claims]
        judged = [v for v in verdicts if v is not None]
        return {"factual_consistency": sum(judged) / len(judged) if judged else float("nan"),
                "fact_sentences": len(claims), "fact_missing": len(verdicts) - len(judged)}

    def _consistent(self, claim: str, doc: LongDocument) -> bool | None:
        if self.classifier:
            return self.classifier.consistent(doc.article, claim)
        evidence = show(select_parts(document_parts(doc, self.part_words), claim, self.evidence_words))
        messages = [{"role": "system", "content": prompts.SUMMARY_WRITER_SYSTEM},
                    {"role": "user", "content": prompts.FACT_CHECK.format(evidence=evidence, sentence=claim)}]
        try:
            answer = self.client.chat_json(messages, NLIAnswer, caller=Caller("eval", "factual consistency"),
                                           max_tokens=int(self.settings.max_tokens),
                                           prompt_version=prompts.EVAL_PROMPT_VERSION)
        except OutputValidationError:
            return None
        return answer.parsed.label == "entailment"
