"""Runs under injected API failures against recorded answers (crewlib/experiments/fault_runs.py)."""

from __future__ import annotations

import json

from fakes import ScriptedOpenAIServer, Step

from crewlib.config import load_params
from crewlib.experiments import run_generations
from crewlib.experiments.fault_runs import NOT_RECORDED, Replay, answers_from_cache, api_failure_runs
from crewlib.llm import connect
from crewlib.tasks import build_tasks

SECTION = "Prior work on summarisation metrics [R1] and pretraining [R2] shapes this paper."


def _entry(cache, key, content, *, model="m", sample_index=0, latency=2.5):
    request = {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 10,
               "response_format": None, "seed": 0, "sample_index": sample_index}
    response = {"content": content, "model": model, "prompt_tokens": 3, "completion_tokens": 2, "latency_s": latency}
    (cache / "ab").mkdir(parents=True, exist_ok=True)
    (cache / "ab" / f"{key}.json").write_text(json.dumps({"request": request, "response": response}))


def test_the_replay_serves_each_sample_by_its_seed_and_each_model_apart_and_404s_the_rest(tmp_path):
    _entry(tmp_path, "a", "first sample")
    _entry(tmp_path, "b", "second sample", sample_index=1)
    _entry(tmp_path, "c", "another model", model="other")
    replay = Replay(answers_from_cache(tmp_path))
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 10, "seed": 0}
    assert replay(body).body["choices"][0]["message"]["content"] == "first sample"
    assert replay({**body, "seed": 1}).body["choices"][0]["message"]["content"] == "second sample"
    assert replay({**body, "model": "other"}).body["choices"][0]["message"]["content"] == "another model"
    missing = replay({**body, "max_tokens": 11})
    assert missing.status == 404 and NOT_RECORDED in json.dumps(missing.body)
    assert replay.served_s == 7.5  # the recorded seconds of the three answers served


def test_a_failure_run_replays_every_call_retries_the_injected_faults_and_adds_their_waits(tmp_path):
    with ScriptedOpenAIServer(default=Step(content=SECTION)) as server:
        # scripted toy sections: the sentence repairs are tested on their own (test_section_guarantees.py)
        params = load_params("quick", {
            "llm": {"provider": "openai", "base_url": server.base_url, "model": "scripted-model", "api_key_env": "",
                    "cache_dir": str(tmp_path / "cache"), "max_retries": 6},
            "baselines": {"long_context": {"context_tokens": 4096}}, "output": {"repairs": []}})
        pairs = build_tasks(params).evaluation[:3]
        run_generations(["long_context"], [e for e, _ in pairs], params, connect(params),
                        tasks={t.target_id: t for _, t in pairs}, out_dir=tmp_path / "recorded", progress=False)
    # the scripted server is gone: every answer below comes from the recorded cache
    table = api_failure_runs(params, cache_dir=tmp_path / "cache", systems=["long_context"], rates=[0.0, 0.5],
                             seed=3, targets=3).set_index("rate")
    assert (table.completed == 3).all() and (table.unrecorded == 0).all() and (table.failed_calls == 0).all()
    assert table.loc[0.0, "injected"] == 0 and table.loc[0.5, "injected"] > 0
    assert table.loc[0.5, "retries"] == table.loc[0.5, "injected"] and table.loc[0.5, "waits_s"] > 0
    assert table.loc[0.5, "model_s"] > table.loc[0.0, "model_s"]  # the same answers plus the waits
