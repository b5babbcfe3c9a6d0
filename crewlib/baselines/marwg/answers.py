"""MA-RWG's vocabulary (dimensions, error types, feedback dimensions) and the JSON schemas of its seven answers."""

from __future__ import annotations

import re
from typing import Literal

import pydantic

DIMENSIONS = ("Task", "Methodology", "Dataset", "Evaluation")
ERROR_TYPES = ("Direct Contradiction", "Unsubstantiated", "Misrepresentation", "Incorrect Attribution", "Other")
FEEDBACK_DIMENSIONS = ("structural_logic", "critical_analysis", "prominent_contribution", "concise_language")
UNSPECIFIED = "unspecified"
# Titles of the last-resort outline, when the taxonomy has too few nodes to make topics of.
FALLBACK_TITLES = ("Closely related work", "Further related work", "Other related work", "Additional related work")

# ------------------------------------------------------------------------------------------ schemas
class SummaryOut(pydantic.BaseModel):
    summary: str = pydantic.Field(min_length=10)
    task: str
    methodology: str
    dataset: str
    evaluation: str


class Topic(pydantic.BaseModel):
    title: str
    keys: list[str]

    @pydantic.field_validator("title")
    @classmethod
    def _clean_title(cls, value: str) -> str:
        return value.strip().strip("*#\"'").strip().rstrip(".:").strip()

    @pydantic.field_validator("keys", mode="before")
    @classmethod
    def _clean_keys(cls, value: object) -> object:
        """Small models write "[R1]", "r1" or "R1, R2": keep the bare keys, each once."""
        if isinstance(value, str):
            value = re.split(r"[,;\s]+", value)
        if not isinstance(value, list):
            return value
        keys = [str(k).strip().strip("[]").strip().upper() for k in value]
        return list(dict.fromkeys(k for k in keys if k))


class OutlineOut(pydantic.BaseModel):
    topics: list[Topic]


class ParagraphOut(pydantic.BaseModel):
    paragraph: str = pydantic.Field(min_length=40)


class FeedbackOut(pydantic.BaseModel):
    """The review of the draft on MA-RWG's four feedback dimensions (:data:`FEEDBACK_DIMENSIONS`)."""

    structural_logic: str
    critical_analysis: str
    prominent_contribution: str
    concise_language: str


def _canonical_label(value: object) -> object:
    if not isinstance(value, str):
        return value
    squashed = re.sub(r"[^a-z]", "", value.lower())
    for label in ("none", *ERROR_TYPES):
        if squashed == re.sub(r"[^a-z]", "", label.lower()):
            return label
    return value


class VerifyOut(pydantic.BaseModel):
    label: Literal["none", "Direct Contradiction", "Unsubstantiated", "Misrepresentation", "Incorrect Attribution",
                   "Other"]
    explanation: str = ""

    @pydantic.field_validator("label", mode="before")
    @classmethod
    def _canonical(cls, value: object) -> object:
        return _canonical_label(value)


class CorrectionOut(pydantic.BaseModel):
    sentence: str = pydantic.Field(min_length=10)
