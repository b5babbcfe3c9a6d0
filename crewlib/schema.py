"""The params schema: every block of ``params/*.yaml``, typed, with no defaults of its own.

``params/quick.yaml`` is the one place where default values live: every other params file
extends it (``base: quick``) and this schema requires every key, so a value is written once.
Unknown keys and wrong types raise :class:`~crewlib.config.ParamsError` naming the key path
(``env.n_agent``) and the file. Types are strict: ``"4"`` is not an integer.
"""

from __future__ import annotations

from typing import Literal

import pydantic
from pydantic import ConfigDict, Field, PrivateAttr

from crewlib.actions import ACTION_NAMES
from crewlib.prompts.agents import EDITIONS

# The sentence repairs of the final section (crewlib/sections.py)
REPAIRS = ("title_only", "uncited", "first_person", "target", "unsupported", "repeated_sentences", "truncated",
           "markers", "dangling", "prompt_echo", "slips", "positioning", "form")


class Block(pydantic.BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    def replace(self, **changes):
        """A validated copy with ``changes`` (field → value) applied, as ``dataclasses.replace`` does."""
        return type(self).model_validate({**self.model_dump(by_alias=True), **changes})


PositiveInt = Field(ge=1)


class EmbeddedBlock(Block):
    model: str
    n_ctx_per_slot: int = PositiveInt
    n_parallel: int = PositiveInt
    n_threads: int = PositiveInt
    startup_timeout_s: float = Field(gt=0)
    runtime: Literal["auto", "native", "prebuilt"]


class FaultsBlock(Block):
    rate: float = Field(ge=0, le=1)
    seed: int


class LLMBlock(Block):
    provider: Literal["embedded", "openai"]
    base_url: str | None
    model: str | None
    api_key_env: str
    temperature: float = Field(ge=0)
    top_p: float = Field(gt=0, le=1)
    max_tokens: int = PositiveInt
    frequency_penalty: float
    seed: int | None
    timeout_s: float = Field(gt=0)
    deadline_s: float = Field(gt=0)
    concurrency: int = PositiveInt
    max_retries: int = Field(ge=0)
    backoff_base_s: float = Field(ge=0)
    backoff_max_s: float = Field(ge=0)
    retry_after_max_s: float = Field(ge=0)
    json_mode: bool
    structured_output: Literal["json_schema", "json_object"]
    reask_cut: bool
    reasks: int = Field(ge=0)
    cache_mode: Literal["off", "read_write", "replay"]
    cache_dir: str
    task_wording: Literal["related_work", "news_summary"]
    prompt_edition: Literal[EDITIONS]  # type: ignore[valid-type]  # crewlib/prompts/agents.py
    embedded: EmbeddedBlock
    faults: FaultsBlock


class DemoBlock(Block):
    target_index: int = Field(ge=0)
    output_dir: str


class HumanBlock(Block):
    pairs: int | None = Field(ge=1)  # papers of the evaluation split in the packets (drawn at random); null: all
    seed: int


class NotebooksBlock(Block):
    figures_dir: str
    llm_cache_dir: str
    out_dir: str


class DataBlock(Block):
    source: Literal["sample", "local", "hub"]
    split: str
    limit: int | None
    oarelatedwork_config: str
    oarelatedwork_path: str | None
    multinews_path: str | None
    arxiv_path: str | None
    pubmed_path: str | None
    target_ids: list[str] | None

class SplitBlock(Block):
    train_fraction: float = Field(ge=0, le=1)
    eval_fraction: float = Field(ge=0, le=1)
    seed: int


class GraphBlock(Block):
    min_connections: int = Field(ge=0)


class FeaturesBlock(Block):
    cache_dir: str | None


class RewardBlock(Block):
    draft: float
    local: float
    glob: float
    feedback: float
    cost: float
    alpha: float = Field(ge=0, le=1)


class CapsBlock(Block):
    local_notes: int = PositiveInt
    global_notes: int = PositiveInt
    feedback: int = PositiveInt


class EnvBlock(Block):
    n_agents: int = PositiveInt
    horizon: int = PositiveInt
    relevance: Literal["tfidf", "embedding"]
    target_words: int = PositiveInt
    compose_min_sources: int = PositiveInt
    revision_guard: bool  # a revision that loses a cited work or adds a repeated sentence is rejected
    round_masks: bool  # Compose for as many agents as there is material for, Critique for one agent a round
    reward: RewardBlock
    caps: CapsBlock
    masked_features: list[str]  # feature names or group names, observed as 0 (ablations)
    disabled_actions: list[Literal[ACTION_NAMES]]  # removed from the action space (always masked)


class ActionTokensBlock(Block):
    retrieve: int = PositiveInt
    disseminate: int = PositiveInt
    compose: int = PositiveInt
    critique: int = PositiveInt


class ExecutorBlock(Block):
    max_tokens: ActionTokensBlock
    max_notes: int = PositiveInt
    context_tokens: int | None = Field(ge=256)  # an action's prompt + answer budget (paper D.1: 6,144)
    compose_sources: int = PositiveInt
    attribute_uncited: bool
    keep_opening_markers: bool
    salvage_paragraphs: bool
    own_notes_first: bool
    compose_form: Literal["paragraph", "sentences", "themed"]
    check_notes: bool
    finish_from_notes: bool
    share_as_is: int = Field(ge=0)  # Disseminate: an agent's unshared notes up to this many are shared without a call


class OutputBlock(Block):
    duplicate_threshold: float = Field(gt=0, le=1)
    sentence_threshold: float = Field(gt=0, le=1)
    support_threshold: float = Field(ge=0, le=1)
    repairs: list[Literal[REPAIRS]]  # type: ignore[valid-type]


class IPPOBlock(Block):
    hidden: int = PositiveInt
    learning_rate: float = Field(gt=0)
    adam_eps: float = Field(gt=0)
    gamma: float = Field(ge=0, le=1)
    gae_lambda: float = Field(ge=0, le=1)
    clip_coef: float = Field(gt=0)
    ent_coef: float = Field(ge=0)
    vf_coef: float = Field(ge=0)
    max_grad_norm: float = Field(gt=0)
    update_epochs: int = PositiveInt
    num_minibatches: int = PositiveInt
    norm_adv: bool
    agent_id: bool
    train_epochs: int = PositiveInt
    episodes_per_update: int = PositiveInt
    seed: int
    device: str
    torch_threads: int = PositiveInt


class TrainingBlock(Block):
    executor: Literal["surrogate", "llm"]
    rollout_workers: int = PositiveInt
    out_dir: str
    shipped_checkpoint: str


class EvalBlock(Block):
    judges: list[dict | None]  # None = the run's own llm; a dict overrides the llm block
    judge_retries: int = Field(ge=0)
    soft_recall_threshold: float
    soft_recall_max_pairs: int = PositiveInt
    soft_recall_credit: float = Field(ge=0, le=1)
    sn_threshold: float
    max_nli_pairs: int = Field(ge=0)
    max_function_sentences: int = Field(ge=0)
    judge_max_tokens: int = PositiveInt
    copy_words: int = PositiveInt
    paragraph_sentences: int = PositiveInt
    citation_content_words: int = PositiveInt
    workers: int = PositiveInt


class InstrumentBlock(Block):
    papers: list[Literal["all", "evaluation", "holdout"]] = Field(min_length=1)  # each set measured apart
    absolute_papers: Literal["all", "evaluation"]
    damages: list[str] = Field(min_length=1)
    keyed_gold: bool
    gold_keys: Literal["all_forms", "parenthetical"]  # parenthetical: version 3's keying, for recorded answers
    pairwise_dimensions: list[Literal["coverage", "logic", "relevance", "overall"]]
    entailment: bool
    weights: dict[str, float]
    pairwise_weight: float = Field(ge=0)
    max_tokens: int = PositiveInt


class CrewBlock(Block):
    rounds: int | Literal["auto"] = Field(union_mode="left_to_right")  # auto: enough rounds to read the pool
    max_rounds: int = PositiveInt  # the cap of rounds: auto
    greedy: bool
    checkpoint: str | None  # null: training.shipped_checkpoint

    @pydantic.field_validator("rounds")
    @classmethod
    def _positive(cls, value):
        if isinstance(value, int) and value < 1:
            raise ValueError("rounds must be at least 1, or auto")
        return value


class OrchestratorBlock(Block):
    rounds: int = PositiveInt
    max_tokens: int = PositiveInt
    on_failure: Literal["lose", "fixed_schedule"]  # the round's assignment when the orchestrator's call fails
    constrain: bool  # the answer's schema allows each agent only its allowed actions this round
    final_compose: bool  # the last round with the draft still empty: only Compose, for the agents that can


class RoundsBlock(Block):
    rounds: int = PositiveInt


class NaiveOrchestratorBlock(Block):
    max_steps: int = Field(ge=0)
    plan_max_tokens: int = PositiveInt
    agent_max_tokens: int = PositiveInt


class SRWBlock(Block):
    rounds: int = PositiveInt
    memory_tokens: int = PositiveInt
    read_max_tokens: int = PositiveInt


class LongContextBlock(Block):
    context_tokens: int | None = Field(ge=256)
    llm: dict | None  # null: the run's LLM; else an llm override, this system's own model (the paper: GPT-4o)


class RAGBlock(Block):
    chunk_words: int = PositiveInt
    top_k: int = PositiveInt
    max_chunks_per_reference: int = PositiveInt
    llm: dict | None  # as long context's


class PrimeraBlock(Block):
    model: str
    max_input_tokens: int = PositiveInt
    max_output_tokens: int = PositiveInt
    num_beams: int = PositiveInt
    device: str | None


class MARWGMaxTokensBlock(Block):
    summary: int = PositiveInt
    outline: int = PositiveInt
    draft: int = PositiveInt
    feedback: int = PositiveInt
    revision: int = PositiveInt
    verify: int = PositiveInt  # also the re-verification of a corrected sentence
    correction: int = PositiveInt


class MARWGBlock(Block):
    budget: int = PositiveInt  # B only when the example has no gold citations in its pool
    lambda_: float = Field(ge=0, le=1, alias="lambda")  # λ: 0 = pure relevance (the paper's main setting)
    pages: int = PositiveInt  # D: top pages per selected paper
    page_words: int = PositiveInt
    delta: int = PositiveInt  # δ: a taxonomy node with ρ ≥ δ papers is split
    l_max: int = PositiveInt
    root_level: int = Field(ge=0, le=1)  # the dimension's own level: 1 (the paper: l_max counts it) or 0
    taxonomy_shape: Literal["dag", "tree"]  # dag: a paper may sit under several parents (the paper)
    revision_aspects: bool  # the revision works on the paper's four aspects, besides the feedback
    max_verify: int = Field(ge=0)
    generator: dict | None  # an llm override; None = the run's llm
    verifier: dict | None  # an llm override; None = the generator
    width_threshold: float = Field(ge=-1, le=1)
    depth_step: float = Field(ge=0)
    min_topics: int = PositiveInt
    max_topics: int = PositiveInt
    max_title_words: int = PositiveInt
    topic_titles: bool
    min_paragraph_words: int = PositiveInt
    target_chars: int = PositiveInt
    evidence_chars: int = PositiveInt
    max_tokens: MARWGMaxTokensBlock
    taxonomy: bool  # component switches (MA-RWG Table 2 ablation)
    feedback: bool
    fact_check: bool
    summarisation: bool

    @pydantic.model_validator(mode="after")
    def _topic_range(self) -> MARWGBlock:
        if self.min_topics > self.max_topics:
            raise ValueError(f"min_topics ({self.min_topics}) exceeds max_topics ({self.max_topics})")
        if self.l_max <= self.root_level:
            raise ValueError(f"l_max ({self.l_max}) leaves no level below the dimension (root_level {self.root_level})")
        return self


class BaselinesBlock(Block):
    max_tokens: int = PositiveInt
    crew: CrewBlock
    orchestrator: OrchestratorBlock
    extractive: RoundsBlock
    naive_orchestrator: NaiveOrchestratorBlock
    srw: SRWBlock
    long_context: LongContextBlock
    rag: RAGBlock
    primera: PrimeraBlock
    marwg: MARWGBlock


class RetrievalBlock(Block):
    retrievers: list[Literal["bm25", "dense"]] = Field(min_length=1)
    top_k: int = PositiveInt  # candidates kept from the library (RWGBench: 50 of 1.09M)
    metrics: list[str] = Field(min_length=1)  # the evaluation suite's groups scored on the sections


class ExperimentsBlock(Block):
    backend: Literal["local", "ray"]
    ray_address: str | None
    ray_num_cpus: int | None = Field(ge=1)
    ray_task_cpus: float = Field(gt=0)
    metrics: list[str] = Field(min_length=1)
    metric_systems: dict[str, list[str]]  # a group of `metrics` scored on these systems' sections only
    retrieval: RetrievalBlock  # RWGBench's retrieval setting (crewlib/experiments/retrieval.py)


class FailureRunBlock(Block):
    rate: float = Field(ge=0, lt=1)  # share of calls failed by the injector (the paper: 5%)
    seed: int
    systems: list[str] = Field(min_length=1)


class AblationsLLMBlock(Block):
    checkpoints: str  # folder of the variants' shipped first-seed controllers
    agents: list[int] = Field(min_length=1)
    out_dir: str


class AblationsMARWGBlock(Block):
    variants: dict[str, dict]  # variant name → overrides of baselines.marwg (validated when applied)
    metrics: list[str] = Field(min_length=1)
    targets: int | None = Field(ge=1)  # the first N evaluation papers; None: all of them
    out_dir: str


class AblationsBlock(Block):
    variants: dict[str, dict]  # variant name → overrides of the env block (validated when applied)
    seeds: list[int] = Field(min_length=1)
    eval_episodes: int = PositiveInt
    agents: list[int] = Field(min_length=1)
    out_dir: str
    failures: FailureRunBlock
    llm: AblationsLLMBlock
    marwg: AblationsMARWGBlock


class BackboneBlock(Block):
    name: str
    llm: dict  # overrides of the llm block (validated when applied)


class LLMTrainingBlock(Block):
    backbone: str  # a transfer.backbones name: the executor's LLM while training
    updates: int = PositiveInt
    rounds: int = PositiveInt
    checkpoint: str


class TransferBlock(Block):
    backbones: list[BackboneBlock] = Field(min_length=1)
    llm_training: LLMTrainingBlock
    systems: list[str] = Field(min_length=1)
    out_dir: str


class MultiNewsBlock(Block):
    systems: list[str] = Field(min_length=1)
    split: str  # of the Hub dataset (data.source hub); the bundled sample and local files have one
    task_wording: Literal["related_work", "news_summary"]
    attribute_uncited: bool
    prompt_edition: Literal[EDITIONS]  # type: ignore[valid-type]  # llm.prompt_edition of the Multi-News run
    compose_form: Literal["paragraph", "sentences", "themed"]  # executor.compose_form of the Multi-News run
    out_dir: str


class SQ2EHeraBlock(Block):
    segment_words: int = PositiveInt
    segments_per_topic: int = PositiveInt
    max_topics: int = PositiveInt
    group_words: int = PositiveInt


class SQ2EFactBlock(Block):
    method: Literal["auto", "factcc", "llm"]
    factcc_path: str | None
    max_sentences: int = PositiveInt
    evidence_words: int = PositiveInt
    max_tokens: int = PositiveInt


class SQ2EMaxTokensBlock(Block):
    section: int = PositiveInt
    summary: int = PositiveInt
    plan: int = PositiveInt
    answer: int = PositiveInt
    verdict: int = PositiveInt


class SQ2EDGBlock(Block):
    context_tokens: int | None = Field(ge=1)


class SQ2EBlock(Block):
    datasets: list[Literal["arxiv", "pubmed"]] = Field(min_length=1)
    systems: list[Literal["dg", "hera", "sq2e"]] = Field(min_length=1)
    split: str
    documents: int | None = Field(ge=1)  # a seeded random sample of this many documents of the split; null: all
    sample_seed: int
    summary_words: int = PositiveInt
    initial_words: int = PositiveInt
    part_words: int = PositiveInt
    section_summary_words: int = PositiveInt
    evidence_words: int = PositiveInt
    expert_questions: int = Field(ge=0, le=5)
    editor_questions: int = Field(ge=0, le=4)
    rounds: int = PositiveInt
    seed: int
    dg: SQ2EDGBlock
    hera: SQ2EHeraBlock
    max_tokens: SQ2EMaxTokensBlock
    fact: SQ2EFactBlock

    @pydantic.model_validator(mode="after")
    def _initial_within_summary(self) -> SQ2EBlock:
        if self.initial_words > self.summary_words:
            raise ValueError(f"initial_words ({self.initial_words}) exceeds summary_words ({self.summary_words})")
        return self
    out_dir: str


class Params(Block):
    """Every setting of a run, validated (:func:`crewlib.config.load_params`); ``source``: the params file."""

    _source: str = PrivateAttr(default="")

    @property
    def source(self) -> str:
        return self._source

    llm: LLMBlock
    demo: DemoBlock
    notebooks: NotebooksBlock
    human: HumanBlock
    data: DataBlock
    split: SplitBlock
    graph: GraphBlock
    features: FeaturesBlock
    env: EnvBlock
    executor: ExecutorBlock
    output: OutputBlock
    ippo: IPPOBlock
    training: TrainingBlock
    eval: EvalBlock
    instrument: InstrumentBlock
    experiments: ExperimentsBlock
    ablations: AblationsBlock
    transfer: TransferBlock
    multinews: MultiNewsBlock
    sq2e: SQ2EBlock
    baselines: BaselinesBlock


def validation_messages(error: pydantic.ValidationError, shown_missing: int = 3) -> list[str]:
    """``key.path: what is wrong`` for every problem pydantic found: unknown and mistyped settings first, then
    missing ones, of which more than ``shown_missing`` are summed up in one line (a file without ``base:`` misses
    dozens, and the one real typo must not drown among them)."""
    wrong, missing = [], []
    for e in error.errors():
        path = ".".join(str(p) for p in e["loc"])
        if e["type"] == "extra_forbidden":
            wrong.append(f"{path}: unknown setting")
        elif e["type"] == "missing":
            missing.append(path)
        else:
            wrong.append(f"{path}: {e['msg']} (got {e.get('input')!r})")
    hint = "a params file extends params/quick.yaml with `base: quick` and then holds only what it changes"
    if len(missing) > shown_missing:
        wrong.append(f"{len(missing)} settings missing ({', '.join(missing[:shown_missing])}, ...): {hint}")
    else:
        wrong += [f"{path}: missing ({hint})" for path in missing]
    return wrong
