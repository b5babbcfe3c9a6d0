"""SQ2E: expert–editor stepwise questioning for long-document summarisation (docs/method.md, "SQ2E").

>>> from crewlib.sq2e import make_summariser
>>> summary = make_summariser("sq2e", params, connect(params)).summarise(document)
>>> summary.text, summary.notes["steps"], summary.notes["valid"]

The second system of the repository: it shares the LLM client, cache, ledger, evaluation metrics
and experiment layer with CREW. :mod:`.systems` holds SQ2E and its baselines (Direct Generation,
HERA), :mod:`.bank` the question bank, :mod:`.evidence` how a long document is shown in parts, and
:mod:`.metrics` the FactCC-style factual-consistency score.
"""

from crewlib.sq2e.bank import BANKS, EDITOR, EXPERT, Question
from crewlib.sq2e.evidence import Part, document_parts, select_parts
from crewlib.sq2e.metrics import FactualConsistency
from crewlib.sq2e.systems import HERA, SQ2E, SUMMARISERS, DirectGeneration, group_segments, make_summariser

__all__ = ["BANKS", "EDITOR", "EXPERT", "HERA", "SQ2E", "SUMMARISERS", "DirectGeneration", "FactualConsistency",
           "Part", "Question", "document_parts", "group_segments", "make_summariser", "select_parts"]
