"""MA-RWG stage 5: the outline's validation and schema, and the fallback outline built from the taxonomies."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np
import pydantic

from crewlib.baselines.marwg.answers import FALLBACK_TITLES, UNSPECIFIED, OutlineOut, Topic
from crewlib.baselines.marwg.taxonomy import EmbedFn, TaxonomyNode, unit_rows


# ------------------------------------------------------------------------------------------ stage 5
def validate_outline(topics: Sequence[Topic | Mapping], known_keys: Collection[str], *, min_topics: int,
                     max_topics: int, max_words: int) -> list[str]:
    """Problems of an outline (empty when valid): the number of topics, a title of more than
    ``max_words`` words (or none), a topic without keys, or keys outside ``known_keys``."""
    topics = [Topic.model_validate(t) if isinstance(t, Mapping) else t for t in topics]
    problems = []
    if not min_topics <= len(topics) <= max_topics:
        problems.append(f"{len(topics)} topics given, {min_topics} to {max_topics} needed")
    for i, topic in enumerate(topics, 1):
        words = len(topic.title.split())
        if not words:
            problems.append(f"topic {i} has no title")
        elif words > max_words:
            problems.append(f"the title of topic {i} has {words} words, at most {max_words} allowed")
        if not topic.keys:
            problems.append(f"topic {i} lists no keys")
        unknown = [k for k in topic.keys if k not in known_keys]
        if unknown:
            problems.append(f"topic {i} names unknown keys {unknown}; use only {', '.join(known_keys)}")
    return problems


def outline_schema(known_keys: Sequence[str], *, min_topics: int, max_topics: int,
                   max_words: int) -> type[OutlineOut]:
    """:class:`OutlineOut` that also runs :func:`validate_outline`, so the client's one re-ask
    tells the model what was wrong."""

    class Outline(OutlineOut):
        @pydantic.model_validator(mode="after")
        def _valid(self) -> Outline:
            problems = validate_outline(self.topics, known_keys, min_topics=min_topics, max_topics=max_topics,
                                        max_words=max_words)
            if problems:
                raise ValueError("; ".join(problems))
            return self

    return Outline


def _title(name: str, max_words: int) -> str:
    words = name.split()[:max_words]
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def fallback_outline(taxonomies: Mapping[str, TaxonomyNode], candidates: Sequence[str], embed_fn: EmbedFn, *,
                     min_topics: int, max_topics: int, max_words: int) -> list[Topic]:
    """Topics from the taxonomy: the largest ``min_topics``–``max_topics`` Methodology nodes.

    Level-1 nodes first; while there are too few, the largest node with children is replaced by
    them; then the Task tree is tried; last (also with no taxonomy at all), the candidates are cut
    into ``min_topics`` runs.
    Papers of nodes beyond ``max_topics`` join the topic whose name is most similar to theirs.
    """
    order = {k: i for i, k in enumerate(candidates)}
    min_topics = min(min_topics, len(candidates))
    nodes: list[TaxonomyNode] = []
    for dimension in ("Methodology", "Task"):
        root = taxonomies.get(dimension)
        nodes = list(root.children) if root else []
        while len(nodes) < min_topics and any(n.children for n in nodes):
            big = max((n for n in nodes if n.children), key=lambda n: len(n.papers))
            at = nodes.index(big)
            nodes[at:at + 1] = big.children
        if len(nodes) >= min_topics and any(n.name != UNSPECIFIED for n in nodes):
            break
    else:
        runs = np.array_split(np.arange(len(candidates)), max(min_topics, 1))
        return [Topic(title=FALLBACK_TITLES[i % len(FALLBACK_TITLES)], keys=[candidates[j] for j in run])
                for i, run in enumerate(runs) if len(run)]
    nodes = sorted(nodes, key=lambda n: -len(n.papers))  # stable: taxonomy order on ties
    chosen, rest = nodes[:max_topics], nodes[max_topics:]
    members = [list(n.papers) for n in chosen]
    if rest:
        names = unit_rows(embed_fn([n.name for n in chosen] + [n.name for n in rest]))
        for i, node in enumerate(rest):
            members[int(np.argmax(names[: len(chosen)] @ names[len(chosen) + i]))] += node.papers
    used: set[str] = set()
    topics = []
    for node, keys in zip(chosen, members, strict=True):
        title = _title(node.name if node.name != UNSPECIFIED else FALLBACK_TITLES[2], max_words)
        if title in used:
            title = _title(f"{title} (continued)", max_words)
        used.add(title)
        topics.append(Topic(title=title, keys=sorted(dict.fromkeys(keys), key=lambda k: order.get(k, len(order)))))
    return topics
