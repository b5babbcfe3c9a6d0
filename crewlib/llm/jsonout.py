"""Turning a model's answer into a validated object: strip fences, parse, check the schema."""

from __future__ import annotations

import json
import re
from typing import TypeVar

import pydantic

T = TypeVar("T", bound=pydantic.BaseModel)

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


class JSONAnswerError(ValueError):
    """The text is not a JSON object valid for the schema; the message is fit to show the model."""


def extract_json_text(text: str) -> str:
    """The JSON object inside an answer: a fenced block if present, else the outermost braces."""
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1)
    start, end = text.find("{"), text.rfind("}")
    if start == -1:
        raise JSONAnswerError("the answer contains no JSON object (no '{' found)")
    return text[start:] if end < start else text[start : end + 1]  # unclosed: let the parser say where


def parse_json_answer(text: str, schema: type[T]) -> T:
    """Validate ``text`` against the pydantic ``schema``; raise :class:`JSONAnswerError` if it fails."""
    body = extract_json_text(text)
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise JSONAnswerError(f"the answer is not valid JSON: {exc.msg} at character {exc.pos}") from exc
    try:
        return schema.model_validate(data)
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()[:8]
        )
        raise JSONAnswerError(f"the JSON does not match the schema: {problems}") from exc


def schema_instruction(schema: type[pydantic.BaseModel]) -> str:
    """A compact instruction that tells the model which JSON object to write."""
    spec = json.dumps(schema.model_json_schema(), separators=(",", ":"))
    return f"Answer with a single JSON object and nothing else. It must follow this JSON schema: {spec}"
