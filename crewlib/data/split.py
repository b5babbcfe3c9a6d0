"""The seeded, disjoint train/evaluation split (paper: 2% / 0.4% of OARelatedWork's train split).

Membership depends only on each id and the seed (rank by sha256 of ``"<seed>:<id>"``), so it is
the same on every machine, for every Python version and whatever the order the rows arrived in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Split:
    train: tuple[str, ...]
    evaluation: tuple[str, ...]
    seed: int
    pool_size: int

    def __post_init__(self) -> None:
        overlap = set(self.train) & set(self.evaluation)
        if overlap:
            raise AssertionError(f"train and evaluation overlap: {sorted(overlap)[:5]}")


def _rank(seed: int, item_id: str) -> str:
    return hashlib.sha256(f"{seed}:{item_id}".encode()).hexdigest()


def _count(fraction: float, n: int) -> int:
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"split fractions must lie in [0, 1], got {fraction}")
    return 0 if fraction == 0 else max(1, round(fraction * n))


def split_ids(ids: Sequence[str], train_fraction: float, eval_fraction: float, seed: int = 0) -> Split:
    """Disjoint ``train`` / ``evaluation`` id lists of ``round(fraction × N)`` ids each (at least 1)."""
    unique = sorted(set(ids))
    if len(unique) != len(ids):
        raise ValueError(f"{len(ids) - len(unique)} duplicate ids in the data to split")
    n_train, n_eval = _count(train_fraction, len(unique)), _count(eval_fraction, len(unique))
    if n_train + n_eval > len(unique):
        raise ValueError(f"cannot take {n_train} train + {n_eval} evaluation ids from {len(unique)}")
    ranked = sorted(unique, key=lambda i: _rank(seed, i))
    return Split(tuple(ranked[:n_train]), tuple(ranked[n_train:n_train + n_eval]), seed, len(unique))


def split_examples(examples: Sequence, train_fraction: float, eval_fraction: float, seed: int = 0,
                   id_of=lambda ex: ex.target_id) -> tuple[list, list, Split]:
    """Split records by id; returns ``(train_records, eval_records, split)`` in split order."""
    by_id = {id_of(ex): ex for ex in examples}
    split = split_ids([id_of(ex) for ex in examples], train_fraction, eval_fraction, seed)
    return [by_id[i] for i in split.train], [by_id[i] for i in split.evaluation], split


def seeded_sample(items: Sequence, n: int | None, seed: int) -> list:
    """``n`` of ``items`` drawn at random with ``seed``, kept in their order; all of them when ``n`` is None or not
    smaller than their number (the paper's 300 SQ2E documents, 20 human-evaluation papers)."""
    import random

    items = list(items)
    if n is None or n >= len(items):
        return items
    return [items[i] for i in sorted(random.Random(seed).sample(range(len(items)), n))]

