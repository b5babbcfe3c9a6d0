"""MA-RWG (docs/method.md §MA-RWG): the related-work section as the MA-RWG paper's staged pipeline.

1. **Paper selection** (no LLM, :func:`select_papers`): ``B`` papers of the pool chosen greedily by
   ``(1−λ)·rel(p_i) + λ·div(p_i)``, with ``rel`` the MiniLM cosine of a paper to the target's title
   and abstract and ``div(p_i) = 1 − min_{p_j∈S} cos(e_i, e_j)`` over the papers ``S`` already
   chosen; λ = 0 (the paper's main experiments) is pure relevance. ``B`` is the number of
   distinct gold-cited references in the pool, as in the paper; the ``budget`` setting serves
   only an example without gold citations (``notes["budget_source"]``).
2. **Top pages** (no LLM, :func:`top_pages`): each selected paper's text (title, abstract and any
   full text) cut into pages of ``page_words`` words; its ``D`` (``pages``) pages most similar to
   the target are what the next stage reads.
3. **Contextual summaries + pseudo-labels**: per paper, one or two sentences in the context of the
   target, and a label of ≤ 4 words for Task, Methodology, Dataset, Evaluation.
4. **Taxonomy** (no LLM, :func:`build_taxonomy`): per dimension, labels clustered by MiniLM
   similarity; width expansion adds a child for a label unlike every existing one, depth
   expansion splits a node of ρ ≥ δ papers with a tighter threshold, down to ``l_max``.
5. **Outline**: 2–4 topics of ≤ 10 words, each with its papers (:func:`validate_outline`), planned
   over the taxonomy and the summaries; an invalid outline falls back to the largest Methodology
   nodes (:func:`fallback_outline`).
6. **Draft → feedback → revision**: a paragraph per topic, one review of the whole draft on
   structural logic, critical analysis, prominent contribution and concise language, then a
   revision per topic.
7. **Fact-checking**: the verifier — a second model when ``verifier`` names one (dual-model check,
   ``notes["verification"]``) — labels up to ``max_verify`` citing sentences against the
   abstracts they cite (none or one of :data:`ERROR_TYPES`); each error is corrected by the
   generator and verified once more. A correction still judged wrong is kept (it is at least an
   attempt on the error) and recorded as unresolved in ``notes["fact_check"]``.

Component switches (the paper's Table 2 ablation): ``taxonomy`` off removes stage 4 (the outline
is planned from the summaries alone), ``feedback`` off removes the review and the revisions of
stage 6, ``fact_check`` off removes stage 7, ``summarisation`` off has stages 5–7 read each paper's abstract
instead of its contextual summary (stage 3 is still asked: its pseudo-labels build the taxonomy).

LLM calls per example, before the client's re-asks of invalid JSON:
``B' + 1 + T + f·(1 + T) + c·(V + 2E)`` with ``B' = min(B, pool)`` papers, ``T`` topics (2–4),
``f``/``c`` the feedback/fact-check switches (0 or 1), ``V ≤ max_verify`` sentences checked and
``E`` errors found (one correction and one re-verification each); with the quick params and
B = 6 at most 6 + 1 + 4 + 5 + 6 + 12 = 34. Independent calls of a stage run as one batch
(summaries, drafts, revisions, verifications, corrections, re-verifications).

Every LLM failure becomes a counted fallback in ``Generation.fallbacks`` (``<stage>_invalid``
for an answer still invalid after the re-ask, ``<stage>_failed`` for an endpoint error), never a
crash — except when no summary at all comes back for an endpoint reason: the endpoint is then
unusable and the error is raised rather than a text reported as if the pipeline had run.


The stages live in their own modules: :mod:`.answers` (vocabulary and schemas), :mod:`.selection`
(stages 1-2), :mod:`.taxonomy` (stage 4), :mod:`.outline` (stage 5), :mod:`.pipeline` (settings and the system).
"""


from crewlib.baselines.marwg.answers import (
    DIMENSIONS,
    ERROR_TYPES,
    FEEDBACK_DIMENSIONS,
    CorrectionOut,
    FeedbackOut,
    OutlineOut,
    ParagraphOut,
    SummaryOut,
    Topic,
    VerifyOut,
)
from crewlib.baselines.marwg.outline import fallback_outline, outline_schema, validate_outline
from crewlib.baselines.marwg.pipeline import MARWG
from crewlib.baselines.marwg.selection import paper_pages, select_papers, top_pages
from crewlib.baselines.marwg.taxonomy import TaxonomyNode, build_taxonomy

__all__ = ["DIMENSIONS", "ERROR_TYPES", "FEEDBACK_DIMENSIONS", "MARWG", "CorrectionOut", "FeedbackOut",
           "OutlineOut", "ParagraphOut", "SummaryOut", "TaxonomyNode", "Topic", "VerifyOut", "build_taxonomy",
           "fallback_outline", "outline_schema", "paper_pages", "select_papers", "top_pages", "validate_outline"]
