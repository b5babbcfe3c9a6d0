"""The CREW environment: API, actions, merge, every observation feature, masks, reward terms."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test
from quick_settings import QUICK, bare_workspace, env_config

from crewlib.data import SAMPLE_FILES, load_oarelatedwork
from crewlib.data.records import Reference, RWGExample
from crewlib.env import Action, CrewEnv, EnvConfig, SurrogateErrors, SurrogateExecutor
from crewlib.env.observation import FEATURE_NAMES, action_mask, draft_stats, observe
from crewlib.env.policies import FIXED_SCHEDULE, FixedSchedule, RandomPolicy
from crewlib.env.policies import run_episode as play
from crewlib.env.reward import (
    Qualities,
    f1,
    feedback_quality,
    jsd,
    ncd,
    sim,
    team_reward,
)
from crewlib.env.workspace import Note, Proposal, merge_proposals
from crewlib.tasks import EmptyPoolError, Task


@pytest.fixture(scope="module")
def examples():
    return load_oarelatedwork(SAMPLE_FILES["oarelatedwork"])[0]


def run_episode(env, seed=0, index=0, schedule=FIXED_SCHEDULE):
    """Like crewlib.env.policies.run_episode, but keeps every observation."""
    policy = FixedSchedule(schedule)
    obs, infos = env.reset(seed=seed, options={"example_index": index})
    history = [obs]
    for t in range(len(schedule)):
        obs, rewards, _, truncations, infos = env.step(policy(t, obs, infos))
        history.append(obs)
    assert all(truncations.values()) and env.agents == []
    return history


def test_parallel_api(examples):
    parallel_api_test(CrewEnv(examples, SurrogateExecutor(), env_config()), num_cycles=40)


def test_spaces_and_horizon(examples):
    env = CrewEnv(examples, SurrogateExecutor(), env_config(n_agents=4, horizon=5))
    obs, infos = env.reset(seed=1)
    assert len(obs) == 4 and env.observation_space("agent_0").shape == (20,) and env.action_space("agent_0").n == 4
    assert infos["agent_0"]["action_mask"].tolist() == [1, 0, 0, 0]  # only reading is possible at first
    run_episode(env, schedule=[0, 1, 2, 3, 2])


# ------------------------------------------------------------------ actions and the merge
def task_of(n=4):
    refs = tuple(Reference(f"p{i}", f"Paper {i}", f"Paper {i} studies summarisation topic{i}. It has results{i}.")
                 for i in range(n))
    return Task("t", "Target on summarisation", "We summarise things.", refs,
                {f"p{i}": 1 - i / 10 for i in range(n)}, {f"p{i}": i / (n - 1) for i in range(n)}, target_words=100)


def test_retrieve_offers_the_most_relevant_paper_unread_by_the_team(examples):
    env = CrewEnv(examples, SurrogateExecutor(), env_config())
    env.reset(seed=0, options={"example_index": 2})
    task = env.current_task
    env.step({a: Action.RETRIEVE for a in env.agents})
    reads = [log[0] for log in env.ws.read_log]
    assert reads == [r.id for r in task.references[:3]]  # three agents, three different papers, by relevance
    assert all(env.ws.local_notes[i] and env.ws.local_notes[i][0].sources == (reads[i],) for i in range(3))


def test_disseminate_compose_critique_change_the_workspace(examples):
    env = CrewEnv(examples, SurrogateExecutor(SurrogateErrors(wrong_citation=1.0, invalid_key=0.0,
                                                             critic_miss=0.0)), env_config())
    env.reset(seed=0, options={"example_index": 1})
    env.step({a: Action.RETRIEVE for a in env.agents})
    env.step({a: Action.DISSEMINATE for a in env.agents})
    assert len(env.ws.global_notes) >= 3 and all(not env.ws.unshared(i) for i in range(3))
    env.step({a: Action.COMPOSE for a in env.agents})
    assert len(env.ws.draft) == 3 and "[R" in env.ws.draft_text
    env.step({a: Action.CRITIQUE for a in env.agents})
    kinds = {f.kind for f in env.ws.feedback}
    assert "hallucinated_citation" in kinds  # every composed sentence cited the wrong paper
    round_counts = env.trace.rounds[-1]["feedback_counts"]
    assert round_counts["real"] >= 1
    env.step({a: Action.COMPOSE for a in env.agents})  # revising the flagged segment resolves its feedback
    assert env.trace.rounds[-1]["feedback_counts"]["resolved"] >= 1


def test_merge_same_segment_highest_confidence_then_lower_agent():
    a = Proposal(0, Action.COMPOSE, confidence=0.5, segment_id=3, text="a")
    b = Proposal(1, Action.COMPOSE, confidence=0.9, segment_id=3, text="b")
    c = Proposal(2, Action.COMPOSE, confidence=0.9, segment_id=3, text="c")
    d = Proposal(2, Action.COMPOSE, confidence=0.1, segment_id=None, text="new")
    e = Proposal(0, Action.CRITIQUE, confidence=0.2, segment_id=4, feedback=[("style", 4, "x")])
    noop = Proposal(1, Action.DISSEMINATE, fallback="no unshared notes")
    accepted, overruled = merge_proposals([a, b, c, d, e, noop])
    assert b in accepted and a in overruled and c in overruled  # tie between b and c goes to agent 1
    assert d in accepted and e in accepted and noop in overruled


def test_invalid_actions_are_counted_noops(examples):
    env = CrewEnv(examples, SurrogateExecutor(), env_config())
    env.reset(seed=0)
    env.step({a: Action.CRITIQUE for a in env.agents})  # no draft yet
    assert env.invalid_actions == 3 and not env.ws.feedback and not env.ws.draft


# ------------------------------------------------------------------ observation features
def test_every_observation_feature_on_a_hand_built_workspace():
    task = task_of(4)
    ws = bare_workspace(3)
    ws.read_log = [["p0", "p1"], ["p1"], []]
    ws.local_notes[0] = [Note("Paper 0 studies summarisation topic0.", ("p0",), 0),
                         Note("Paper 1 studies summarisation topic1.", ("p1",), 0)]
    ws.shared_upto[0] = 1
    ws.global_notes = [Note("Paper 0 studies summarisation topic0.", ("p0",), 0)]
    ws.write_segment(0, "Paper 0 studies summarisation topic0 [R1]. Unbacked claim about zebras [R9].", None, t=2)
    ws.add_feedback("style", 0, "x", 1)
    ws.last_action = [0, 2, 3]
    stats = draft_stats(ws, task)
    values = observe(ws, task, agent=0, t=6, horizon=15, stats=stats, caps=QUICK.env.caps)
    obs = dict(zip(FEATURE_NAMES, values, strict=True))
    expected = {
        "read_share_self": 2 / 4, "read_share_team": 2 / 4, "local_knowledge_size": 2 / 20,
        "local_unshared_share": 1 / 2, "global_knowledge_size": 1 / 40,
        "best_unread_relevance": 0.8, "best_unread_centrality": 1.0,  # p2, p3 unread by agent 0
        "draft_length": 11 / 100, "cited_share": 1 / 4, "citation_validity": 1 / 2, "draft_supported": 1 / 2,
        "open_feedback": 1 / 10, "rounds_since_draft_change": 4 / 15,
        "peers_retrieve": 0.0, "peers_disseminate": 0.0, "peers_compose": 0.5, "peers_critique": 0.5,
        "time": 6 / 15,
    }
    for name, value in expected.items():
        assert obs[name] == pytest.approx(value, abs=1e-6), name
    assert obs["global_relevance"] == pytest.approx(sim(ws.global_text, task.target_text), abs=1e-6)
    assert obs["draft_relevance"] == pytest.approx(sim(ws.draft_text, task.target_text), abs=1e-6)
    assert action_mask(ws, task, 2).tolist() == [1, 0, 1, 1]  # agent 2 has no own notes but global ones


def test_observations_never_depend_on_the_gold_section(examples):
    ex = examples[3]
    altered = dataclasses.replace(ex, gold_related_work="Completely different gold text about cooking.",
                                  gold_cited_ids=ex.gold_cited_ids[:1])
    first = run_episode(CrewEnv([ex], SurrogateExecutor(), env_config()), seed=5, index=0)
    second = run_episode(CrewEnv([altered], SurrogateExecutor(), env_config()), seed=5, index=0)
    for a, b in zip(first, second, strict=True):
        for agent in a:
            np.testing.assert_array_equal(a[agent], b[agent])


def test_observations_stay_in_the_box(examples):
    env = CrewEnv(examples, SurrogateExecutor(), env_config())
    for obs in run_episode(env, seed=3, index=4):
        for vec in obs.values():
            assert vec.dtype == np.float32 and vec.min() >= 0 and vec.max() <= 1


# ------------------------------------------------------------------ reward
def test_jsd_hand_computed_and_properties():
    # p = {a: 1}, q = {a: .5, b: .5}, m = {a: .75, b: .25}
    expected = 0.5 * math.log2(1 / 0.75) + 0.5 * (0.5 * math.log2(0.5 / 0.75) + 0.5 * math.log2(0.5 / 0.25))
    assert jsd("a", "a b") == pytest.approx(expected) == pytest.approx(0.311278, abs=1e-6)
    assert jsd("x y", "x y") == 0.0 and jsd("alpha beta", "gamma delta") == pytest.approx(1.0)
    assert jsd("a b c", "a d") == pytest.approx(jsd("a d", "a b c"))


def test_ncd_properties():
    text = "Pretrained encoders improve extractive summarisation of long documents. " * 3
    other = "Reinforcement learning trains agents with proximal policy optimisation and clipping."
    assert ncd(text, text) < 0.15
    assert 0 <= ncd(text, other) <= 1 and ncd(text, other) > ncd(text, text)
    assert ncd(text, other) == ncd(other, text)
    assert ncd("", text) == 1.0


def test_sim_and_f1():
    text = "Graph-based ranking selects central sentences for extractive summaries."
    assert sim(text, text) > 0.9 and sim(text, "") == 0.0
    assert sim(text, text + " More words.") > sim(text, "Unrelated prose about sailing boats in winter.")
    assert f1({"1", "2"}, {"2", "3", "4"}) == pytest.approx(0.4)
    assert f1(set(), {"1"}) == 0.0


def test_team_reward_hand_computed():
    terms = team_reward(Qualities(0.1, 0.2, 0.3), Qualities(0.4, 0.2, 0.5), q_feedback=0.5, tokens_used=2000,
                        w=QUICK.env.reward.replace(cost=0.1))
    assert terms.total == pytest.approx(1.0 * 0.3 + 0.2 * 0.0 + 0.3 * 0.2 + 0.2 * 0.5 - 0.1 * 2)
    assert feedback_quality(real=2, resolved=1, pointless=1, n_agents=3) == pytest.approx(2 / 3)
    assert feedback_quality(real=0, resolved=0, pointless=9, n_agents=3) == -1.0


def test_reward_rewards_a_better_draft(examples):
    env = CrewEnv(examples, SurrogateExecutor(), env_config())
    run_episode(env, seed=0, index=0)
    quality = [r["quality"]["draft"] for r in env.trace.rounds]
    assert quality[-1] > quality[0] and quality[-1] > 0.3
    returns = sum(r["reward"]["total"] for r in env.trace.rounds)
    assert returns == pytest.approx(env.trace.totals["return"])


def test_surrogate_episode_is_deterministic_and_traced(examples, tmp_path):
    first = CrewEnv(examples, SurrogateExecutor(), env_config())
    second = CrewEnv(examples, SurrogateExecutor(), env_config())
    run_episode(first, seed=9, index=6)
    run_episode(second, seed=9, index=6)
    assert first.trace.final_draft == second.trace.final_draft and first.trace.final_draft
    folder = first.trace.save(tmp_path)
    markdown = (folder / "related_work.md").read_text()
    assert "Citation verification" in markdown and "## References" in markdown
    assert len(first.trace.rounds) == 15 and first.trace.citation_check["markers"] > 0


def test_empty_pool_is_refused():
    ex = RWGExample("t", "T", "A", (Reference("r", "R", "abs"),), "g", ("r",))
    with pytest.raises(EmptyPoolError, match="pool is empty"):
        Task.from_features(ex, {}, pool_ids=[])


def test_env_settings_come_from_params():
    from crewlib.config import load_params

    config = EnvConfig.from_params(load_params("quick"))
    assert config == env_config()  # the params state the paper's defaults
    changed = EnvConfig.from_params(load_params("quick", {"env": {"horizon": 7, "reward": {"draft": 2.0}}}))
    assert changed.horizon == 7 and changed.weights.draft == 2.0 and changed.weights.local == 0.2


def test_policies_respect_masks_and_return_matches_the_trace(examples):
    env = CrewEnv(examples, SurrogateExecutor(), env_config())
    total = play(env, RandomPolicy(seed=4), seed=4, example_index=5)
    assert env.invalid_actions == 0 and total == pytest.approx(env.trace.totals["return"])
    play(env, FixedSchedule([3, 2]), seed=0, example_index=0)  # critique and compose masked at first
    assert env.invalid_actions == 0 and env.trace.rounds[0]["actions"]["agent_0"] == Action.RETRIEVE
    with pytest.raises(ValueError):
        FixedSchedule([7])


def test_an_episode_that_stops_when_done_ends_once_every_work_is_cited_and_reviewed(examples):
    """``rounds: auto`` (stop_when_done): every work with an abstract cited and the draft reviewed as it stands
    with no open problem ends the episode; any of the three missing, it goes on."""
    from crewlib.tasks import title_only

    env = CrewEnv(examples, SurrogateExecutor(), env_config(horizon=15, stop_when_done=True))
    env.reset(seed=0, options={"example_index": 0})
    task, ws = env.current_task, env.ws
    keys = [task.id_to_key[r.id] for r in task.references if not title_only(r)]
    assert not env.finished()  # an empty draft
    ws.write_segment(0, " ".join(f"Work {i} studies topic {i} [{k}]." for i, k in enumerate(keys[:-1])), None, 1)
    ws.last_critique = 2
    assert not env.finished()  # one work not cited
    assert ws.write_segment(1, f"Graph neural networks learn representations of citation structure [{keys[-1]}].",
                            None, 2)
    assert not env.finished()  # cited, but the last change was not reviewed
    ws.last_critique = 3
    item = ws.add_feedback("style", None, "unclear", 1, t=3)
    assert not env.finished()  # the critic left a problem open
    ws.resolve([item.id], 3)
    assert env.finished()
    env.step({a: int(Action.DISSEMINATE) for a in env.agents})
    assert not env.agents and env.t < 15  # the episode ended before the horizon
    fixed = CrewEnv(examples, SurrogateExecutor(), env_config(horizon=15, stop_when_done=False))
    fixed.reset(seed=0, options={"example_index": 0})
    fixed.step({a: int(Action.DISSEMINATE) for a in fixed.agents})
    assert fixed.agents  # a fixed horizon plays every round
