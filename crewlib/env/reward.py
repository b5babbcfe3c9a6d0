"""The team reward (docs/method.md): quality deltas of draft, local and global knowledge, feedback.

``sim(a, b) = ½(1 − NCD(a, b)) + ½(1 − JSD(p_a, p_b))`` with NCD over zlib (Li et al. 2004)
and the base-2 Jensen–Shannon *divergence* of unigram distributions (Lin 1991) — not its square
root, which is what ``scipy.spatial.distance.jensenshannon`` returns. The reward is the only part
of the environment that reads the gold section.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from crewlib.schema import RewardBlock
from crewlib.text import tokens


@lru_cache(maxsize=8192)
def compressed_size(text: str) -> int:
    return len(zlib.compress(text.encode("utf-8"), 9))


def ncd(a: str, b: str) -> float:
    """Normalised compression distance, clipped to [0, 1]; 1 when either text is empty."""
    if not a or not b:
        return 1.0
    ca, cb = compressed_size(a), compressed_size(b)
    # Compress both orders and keep the smaller, so that NCD(a, b) == NCD(b, a).
    cab = min(len(zlib.compress((a + b).encode("utf-8"), 9)), len(zlib.compress((b + a).encode("utf-8"), 9)))
    return min(1.0, max(0.0, (cab - min(ca, cb)) / max(ca, cb)))


@lru_cache(maxsize=8192)
def unigram(text: str) -> tuple[dict[str, float], int]:
    counts = Counter(tokens(text))
    total = sum(counts.values())
    return {w: c / total for w, c in counts.items()} if total else {}, total


def jsd(a: str, b: str) -> float:
    """Jensen–Shannon divergence (base 2) of the texts' unigram distributions, in [0, 1]."""
    p, np_ = unigram(a)
    q, nq = unigram(b)
    if not np_ or not nq:
        return 1.0
    total = 0.0
    for word in p.keys() | q.keys():
        pw, qw = p.get(word, 0.0), q.get(word, 0.0)
        m = (pw + qw) / 2
        if pw:
            total += 0.5 * pw * math.log2(pw / m)
        if qw:
            total += 0.5 * qw * math.log2(qw / m)
    return min(1.0, max(0.0, total))


@lru_cache(maxsize=4096)
def sim(a: str, b: str) -> float:
    """Similarity in [0, 1]: 1 for identical non-empty texts, 0 when either is empty."""
    if not a.strip() or not b.strip():
        return 0.0
    return 0.5 * (1.0 - ncd(a, b)) + 0.5 * (1.0 - jsd(a, b))


def f1(predicted: set[str], gold: set[str]) -> float:
    if not predicted or not gold:
        return 0.0
    hits = len(predicted & gold)
    if not hits:
        return 0.0
    precision, recall = hits / len(predicted), hits / len(gold)
    return 2 * precision * recall / (precision + recall)


@dataclass(frozen=True)
class Qualities:
    draft: float
    local: float
    glob: float


def qualities(draft_text: str, draft_cited: set[str], local_texts: list[str], global_text: str,
              gold_text: str, gold_cited: set[str], alpha: float) -> Qualities:
    q_draft = alpha * sim(draft_text, gold_text) + (1 - alpha) * f1(draft_cited, gold_cited)
    q_local = sum(sim(t, gold_text) for t in local_texts) / len(local_texts) if local_texts else 0.0
    return Qualities(q_draft, q_local, sim(global_text, gold_text))


def feedback_quality(real: int, resolved: int, pointless: int, n_agents: int) -> float:
    """(items pointing at real problems + items resolved − items pointing at nothing) / M, in [-1, 1]."""
    return max(-1.0, min(1.0, (real + resolved - pointless) / max(1, n_agents)))


@dataclass(frozen=True)
class RewardTerms:
    d_draft: float
    d_local: float
    d_global: float
    q_feedback: float
    tokens: int
    total: float


def team_reward(before: Qualities, after: Qualities, q_feedback: float, tokens_used: int,
                w: RewardBlock) -> RewardTerms:
    d_draft, d_local, d_global = after.draft - before.draft, after.local - before.local, after.glob - before.glob
    total = (w.draft * d_draft + w.local * d_local + w.glob * d_global + w.feedback * q_feedback
             - w.cost * tokens_used / 1000)
    return RewardTerms(d_draft, d_local, d_global, q_feedback, tokens_used, total)
