"""Turning a model's answer into a validated object: strip fences, parse, check the schema."""

from __future__ import annotations

import json
import re
from typing import TypeVar

import pydantic

from crewlib import CrewError

T = TypeVar("T", bound=pydantic.BaseModel)

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


class JSONAnswerError(CrewError, ValueError):
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


def _example(spec: dict, defs: dict) -> object:
    """An example value for a JSON-schema node: what small models copy best."""
    if "$ref" in spec:
        return _example(defs[spec["$ref"].split("/")[-1]], defs)
    if "anyOf" in spec:
        options = [o for o in spec["anyOf"] if o.get("type") != "null"]
        return _example(options[0], defs) if options else None
    if "enum" in spec:
        return " | ".join(str(v) for v in spec["enum"])
    kind = spec.get("type")
    if kind == "object":
        return {name: _example(sub, defs) for name, sub in spec.get("properties", {}).items()}
    if kind == "array":
        return [_example(spec.get("items", {}), defs)]
    if kind == "number":
        return 0.5
    if kind == "integer":
        return 0
    if kind == "boolean":
        return True
    return "..."


def schema_instruction(schema: type[pydantic.BaseModel]) -> str:
    """Tell the model which JSON object to write, as a filled-in example (small models copy a raw
    JSON Schema instead of following it: the 1.5B answered with its "properties")."""
    spec = schema.model_json_schema()
    example = json.dumps(_example(spec, spec.get("$defs", {})))
    return (f"Answer with a single JSON object and nothing else, with exactly these keys, shaped like this "
            f"example: {example}")
