"""One exception family for everything that can go wrong when calling an LLM.

Callers catch :class:`LLMError` (or a subclass) and turn it into a counted fallback;
every message says what the user can do about it.
"""

from __future__ import annotations

from crewlib import CrewError


class LLMError(CrewError, RuntimeError):
    """Base class of all LLM-layer errors."""


class ModelNotAvailableError(LLMError):
    """The embedded model or its runtime is not installed or fails its checksum."""


class ServerStartError(LLMError):
    """The embedded llama.cpp server did not come up."""


class EndpointError(LLMError):
    """The endpoint refused the request for a reason retrying cannot fix (400, 401, 404)."""


class MalformedResponseError(LLMError):
    """The endpoint answered 200 with something that is not a chat completion (not JSON, truncated
    JSON, an HTML page, no choices) or with empty content. Retried like a 5xx; never cached."""


class RetryExhaustedError(LLMError):
    """Timeouts, connection errors, 429 or 5xx persisted through every retry."""

    def __init__(self, message: str, attempts: int, last_error: BaseException | None = None):
        super().__init__(message)
        self.attempts = attempts
        self.last_error = last_error


class BudgetExhaustedError(LLMError):
    """The run's budget of live calls (``crew write --max-calls``) is spent: the call is not made."""


class OutputValidationError(LLMError):
    """The model's answer was not valid JSON for the schema, even after one re-ask."""

    def __init__(self, message: str, raw: str, validation_error: str):
        super().__init__(message)
        self.raw = raw
        self.validation_error = validation_error


class CacheMissError(LLMError):
    """Replay-only cache mode met a request that was never recorded."""
