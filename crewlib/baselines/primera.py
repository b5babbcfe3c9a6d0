"""PRIMERA (Xiao et al. 2022): LED pre-trained for multi-document summarisation (docs/method.md, "PRIMERA").

The references' ``title. abstract`` texts, in the task's relevance order, are the documents. As in
PRIMERA's own preprocessing, each document is tokenised alone and cut to an equal share of
``max_input_tokens``, the documents are joined with ``<doc-sep>`` between ``<s> … </s>``, and global
attention is put on ``<s>`` and on every ``<doc-sep>``; the summary comes from beam search.

The weights (``allenai/PRIMERA``, or the folder in ``CREW_PRIMERA_PATH``) are loaded at the first
generation and kept on the instance. Offline without them the system raises
:class:`SystemUnavailableError` and produces nothing — result tables show it as unavailable. PRIMERA
writes no ``[Rk]`` citations; its notes say so.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from crewlib.baselines.base import Generation, System, SystemUnavailableError
from crewlib.data.records import RWGExample
from crewlib.llm import LLMClient
from crewlib.schema import Params
from crewlib.tasks import Task

DOC_SEP = "<doc-sep>"


class TokenizerLike(Protocol):
    bos_token_id: int
    eos_token_id: int

    def encode(self, text: str, add_special_tokens: bool = True, **kwargs: Any) -> list[int]: ...

    def convert_tokens_to_ids(self, token: str) -> int: ...


@dataclass(frozen=True)
class PrimeraInput:
    input_ids: list[int]  # <s> doc1 <doc-sep> doc2 <doc-sep> ... </s>
    global_attention: list[int]  # positions with global attention: 0 and every <doc-sep>
    share: int  # tokens per document (PRIMERA's max_input_len // n_docs), <s>/</s> included
    truncated: list[int]  # indices of the documents cut to their share


def document_share(n_documents: int, max_input_tokens: int) -> int:
    """PRIMERA's per-document budget ``max_input_len // n_docs``, counted with the ``<s> … </s>`` that
    each separately encoded document carries (and loses again when the documents are joined).

    For one document that would overshoot by one token, so the share is capped to keep the joined
    input within ``max_input_tokens``; for two or more documents the cap is PRIMERA's value.
    """
    if n_documents < 1:
        raise ValueError("PRIMERA needs at least one document")
    share = min(max_input_tokens // n_documents, (max_input_tokens - 2) // n_documents + 1)
    if share < 3:
        raise ValueError(f"{n_documents} documents leave no room in {max_input_tokens} input tokens; "
                         "raise baselines.primera.max_input_tokens")
    return share


def global_attention_positions(input_ids: Sequence[int], doc_sep_id: int) -> list[int]:
    """Where LED attends globally in PRIMERA: the ``<s>`` at position 0 and every ``<doc-sep>``."""
    return [0] + [i for i, token in enumerate(input_ids) if token == doc_sep_id]


def format_primera_input(documents: Sequence[str], tokenizer: TokenizerLike, max_input_tokens: int) -> PrimeraInput:
    """PRIMERA's input for ``documents`` (plain texts), at most ``max_input_tokens`` tokens.

    Each document (whitespace normalised) keeps its first ``share - 2`` tokens — what PRIMERA's
    ``tokenizer.encode(doc, truncation=True, max_length=share)[1:-1]`` keeps — followed by ``<doc-sep>``.
    """
    doc_sep_id = tokenizer.convert_tokens_to_ids(DOC_SEP)
    share = document_share(len(documents), max_input_tokens)
    ids: list[int] = []
    truncated: list[int] = []
    for i, doc in enumerate(documents):
        tokens = tokenizer.encode(" ".join(doc.split()), add_special_tokens=False)
        if len(tokens) > share - 2:
            truncated.append(i)
        ids.extend(tokens[: share - 2])
        ids.append(doc_sep_id)
    ids = [tokenizer.bos_token_id] + ids + [tokenizer.eos_token_id]
    return PrimeraInput(ids, global_attention_positions(ids, doc_sep_id), share, truncated)


def unavailable_message(model: str, reason: str) -> str:
    return (f"PRIMERA weights not available: {model} could not be loaded ({reason}). Download allenai/PRIMERA on "
            "a machine with network and set CREW_PRIMERA_PATH=/path/to/it")


def load_primera(model: str, device: str | None = None) -> tuple[Any, Any, str]:
    """``(model, tokenizer, device)`` for a hub id or a local folder; :class:`SystemUnavailableError` if it fails."""
    local = Path(model).expanduser()
    if local.is_dir() and not (local / "config.json").is_file():
        raise SystemUnavailableError(unavailable_message(model, f"{local} holds no config.json"))
    if not local.exists() and model.startswith(("/", ".", "~")):
        raise SystemUnavailableError(unavailable_message(model, f"{local} does not exist"))
    try:
        import torch
        from transformers import AutoTokenizer, LEDForConditionalGeneration
    except ImportError as exc:
        raise SystemUnavailableError(f"PRIMERA needs transformers and torch ({exc}); "
                                     "pip install transformers torch") from exc
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(local) if local.is_dir() else model)
        net = LEDForConditionalGeneration.from_pretrained(str(local) if local.is_dir() else model)
    except Exception as exc:  # offline: OSError; a broken folder: ValueError, EnvironmentError, ...
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise SystemUnavailableError(unavailable_message(model, f"{type(exc).__name__}: {first_line}")) from exc
    doc_sep_id = tokenizer.convert_tokens_to_ids(DOC_SEP)
    if doc_sep_id is None or doc_sep_id == tokenizer.unk_token_id:
        raise SystemUnavailableError(f"{model} is not PRIMERA: its tokenizer has no {DOC_SEP} token")
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    return net.to(device).eval(), tokenizer, device


class Primera(System):
    name = "primera"
    uses_llm = False

    def __init__(self, params: Params, client: LLMClient | None = None) -> None:
        super().__init__(params, client)
        self._loaded: tuple[Any, Any, str] | None = None  # (model, tokenizer, device), at first generation

    @property
    def model_name(self) -> str:
        return os.environ.get("CREW_PRIMERA_PATH") or self.settings.model

    def load(self) -> tuple[Any, Any, str]:
        if self._loaded is None:
            self._loaded = load_primera(self.model_name, self.settings.device)
        return self._loaded

    def summarise(self, documents: Sequence[str]) -> tuple[str, PrimeraInput]:
        """PRIMERA's summary of ``documents`` and the input it was made from."""
        model, tokenizer, device = self.load()
        import torch  # after load(): that says clearly when torch is missing

        encoded = format_primera_input(documents, tokenizer, int(self.settings.max_input_tokens))
        input_ids = torch.tensor([encoded.input_ids], device=device)
        global_attention_mask = torch.zeros_like(input_ids)
        global_attention_mask[0, encoded.global_attention] = 1
        with torch.no_grad():
            output = model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                                    global_attention_mask=global_attention_mask,
                                    num_beams=int(self.settings.num_beams),
                                    max_new_tokens=int(self.settings.max_output_tokens))
        return tokenizer.decode(output[0], skip_special_tokens=True).strip(), encoded

    def _generate(self, example: RWGExample, task: Task) -> Generation:
        text, encoded = self.summarise([ref.text for ref in task.references])
        notes = {"citations": "not produced: PRIMERA writes a summary without [Rk] reference keys",
                 "model": self.model_name, "documents": len(task.references), "input_tokens": len(encoded.input_ids),
                 "share_tokens": encoded.share, "documents_truncated": len(encoded.truncated)}
        return Generation(self.name, example.target_id, text, dict(task.key_to_id), notes=notes)
