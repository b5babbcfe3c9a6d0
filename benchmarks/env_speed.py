"""Speed of the CREW environment (figures and ratios from one run on this machine).

- observation + reward for 3 agents with a ~1,000-word draft (goal: < 5 ms a step);
- a surrogate episode, 3 agents x 15 rounds (goal: < 0.5 s);
- with ``--llm MODEL``: one LLM round, its wall time against its slowest call and the sum of calls.

    python benchmarks/env_speed.py [--llm qwen2.5-coder-0.5b]
"""

from __future__ import annotations

import argparse
import statistics
import time

from crewlib.config import default_params
from crewlib.data import SAMPLE_FILES, load_oarelatedwork
from crewlib.env import Action, CrewEnv, EnvConfig, SurrogateExecutor
from crewlib.env.observation import draft_stats, observe
from crewlib.env.policies import FixedSchedule, run_episode
from crewlib.env.workspace import Note


def bench_step(examples) -> None:
    env = CrewEnv(examples, SurrogateExecutor(), EnvConfig.from_params(default_params()))
    env.reset(seed=0, options={"example_index": 0})
    ws, task = env.ws, env.current_task
    sentences = [s for r in task.references for s in r.abstract.split(". ")]
    for i, ref in enumerate(task.references):
        ws.read_log[i % 3].append(ref.id)
        ws.add_local(i % 3, [Note(s, (ref.id,), i % 3) for s in ref.abstract.split(". ")])
    ws.disseminate(0, ws.local_notes[0])
    words, k = 0, 0
    while words < 1000:  # a draft of about 1,000 words, cited
        text = f"{sentences[k % len(sentences)]} [R{k % len(task.references) + 1}]."
        ws.write_segment(k % 3, text, None, t=1)
        words += len(text.split())
        k += 1
    times = []
    for step in range(200):
        ws.draft[step % len(ws.draft)].text += " "  # a fresh text each step, as after an edit
        t0 = time.perf_counter()
        stats = draft_stats(ws, task)
        for agent in range(3):
            observe(ws, task, agent, 5, 15, stats, default_params().env.caps)
        env._qualities()
        times.append(time.perf_counter() - t0)
    print(f"observation + reward, 3 agents, {len(ws.draft_text.split())}-word draft: "
          f"median {statistics.median(times) * 1000:.2f} ms a step (goal < 5 ms)")


def bench_episode(examples) -> None:
    env = CrewEnv(examples, SurrogateExecutor(), EnvConfig.from_params(default_params()))
    walls = []
    for seed in range(10):
        t0 = time.perf_counter()
        run_episode(env, FixedSchedule(), seed=seed, example_index=seed % len(examples))
        walls.append(time.perf_counter() - t0)
    print(f"surrogate episode, 3 agents x 15 rounds: median {statistics.median(walls):.3f} s, "
          f"max {max(walls):.3f} s over 10 episodes (goal < 0.5 s)")


def bench_llm_round(examples, model: str) -> None:
    from crewlib.env.llm_executor import LLMExecutor
    from crewlib.llm import connect
    from crewlib.llm.settings import llm_config

    client = connect(config=llm_config(cache_mode="off", frequency_penalty=0.3, embedded={"model": model}))
    env = CrewEnv(examples, LLMExecutor(client, default_params().executor), EnvConfig.from_params(default_params()))
    env.reset(seed=0, options={"example_index": 0})
    client.chat([{"role": "user", "content": "warm up"}], max_tokens=4)
    t0 = time.perf_counter()
    env.step({a: Action.RETRIEVE for a in env.agents})
    wall = time.perf_counter() - t0
    latencies = [r["latency_s"] for r in env.trace.rounds[-1]["llm"]["records"]]
    print(f"LLM round ({model}, 3 agents retrieving): wall {wall:.1f} s, slowest call {max(latencies):.1f} s, "
          f"sum of calls {sum(latencies):.1f} s; wall / slowest = {wall / max(latencies):.2f}, "
          f"wall / sum = {wall / sum(latencies):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--llm", default=None, help="also time one LLM round with this embedded model")
    args = parser.parse_args()
    examples, _ = load_oarelatedwork(SAMPLE_FILES["oarelatedwork"])
    bench_step(examples)
    bench_episode(examples)
    if args.llm:
        bench_llm_round(examples, args.llm)


if __name__ == "__main__":
    main()
