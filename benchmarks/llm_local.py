"""Benchmark of the embedded LLM: the prebuilt runtime against the native build, side by side, one run.

Per runtime (the ``xllamacpp`` wheel's server, and llama.cpp built here by ``make native``), with
the settings the project runs (4 slots, ``llm.embedded.n_threads``), from the server's own
timings (``timings`` of each answer), never from a wall time that mixes prompt and generation:
- prompt tok/s and generation tok/s of one request with a CREW-sized prompt (median of 3);
- aggregate tok/s (completion tokens / wall time) of 1, 2 and 4 concurrent short requests (the
  slots' batching);
- a CREW round: four agents' Retrieve prompts for one target at once, its wall time against
  the slowest of the four run alone;
- shared prefixes: two rounds of Retrieve prompts with the server's prompt cache, the prompt
  tokens it processed against the tokens sent.
- a real CREW run's rounds (a trace, default ``outputs/demo/trace.json`` from ``make demo``): the
  rounds' wall time against their slowest call (concurrent calls: 1.0 means no overhead).
Then, on the native build only: speculative decoding with the 0.5B as draft model for the
1.5B, threads 1 vs 2, and physical batch sizes, each against the chosen configuration.

    python benchmarks/llm_local.py                 # the 1.5B (make benchmark)
    python benchmarks/llm_local.py --quick         # skip the native-only sweeps
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from crewlib import prompts  # noqa: E402
from crewlib.config import load_params, resolve_path  # noqa: E402
from crewlib.llm.local import LocalServer, get_model, prepare_model  # noqa: E402
from crewlib.llm.native import build_info, native_server  # noqa: E402
from crewlib.llm.settings import llm_config  # noqa: E402
from crewlib.tasks import build_tasks  # noqa: E402

TOPICS = ["self-attention", "pretrained language models", "abstractive summarisation", "citation graphs",
          "reinforcement learning", "multi-agent systems", "retrieval-augmented generation", "evaluation metrics"]
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def chat(base_url: str, alias: str, content: str, max_tokens: int, cache_prompt: bool) -> dict:
    """One chat completion straight to the server; returns its JSON (with llama.cpp's ``timings``)."""
    body = {"model": alias, "max_tokens": max_tokens, "temperature": 0.0, "cache_prompt": cache_prompt,
            "messages": [{"role": "system", "content": prompts.AGENT_SYSTEM}, {"role": "user", "content": content}]}
    request = urllib.request.Request(f"{base_url}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with _DIRECT.open(request, timeout=900) as resp:
        answer = json.loads(resp.read())
    answer["wall_s"] = time.perf_counter() - t0
    return answer


def retrieve_prompts(task, start: int, n: int, salt: str = "") -> list[str]:
    """The Retrieve prompts of ``n`` agents reading references ``start ..`` of one target (as CREW sends them)."""
    keys = task.keys
    out = []
    for i in range(start, start + n):
        ref = task.references[i % len(task.references)]
        out.append(salt + prompts.RETRIEVE.format(title=task.title, abstract=task.abstract, key=keys[i % len(keys)],
                                                  ref_title=ref.title, ref_abstract=ref.abstract))
    return out


def at_once(base_url: str, alias: str, contents: list[str], max_tokens: int, cache_prompt: bool):
    t0 = time.perf_counter()
    with ThreadPoolExecutor(len(contents)) as pool:
        answers = list(pool.map(lambda c: chat(base_url, alias, c, max_tokens, cache_prompt), contents))
    return time.perf_counter() - t0, answers


def short_prompts(n: int, offset: int) -> list[str]:
    """Distinct short prompts: generation dominates, so the slots' batching shows."""
    return [f"Write four sentences about {TOPICS[(offset + i) % len(TOPICS)]} in NLP research (variant {offset + i})."
            for i in range(n)]


def measure(server: LocalServer, task, max_tokens: int, *, sweep: bool = False, repeats: int = 3) -> dict:
    """The figures of one running server (see the module doc); single-stream rates are medians."""
    url, alias = server.base_url, server.alias
    chat(url, alias, "Say hello.", 4, False)  # warm-up: weights into memory
    singles = [chat(url, alias, c, max_tokens, False) for c in retrieve_prompts(task, 0, repeats, "single. ")]
    row = {"prompt_tokens": singles[0]["usage"]["prompt_tokens"],
           "prompt_tok_s": statistics.median(a["timings"]["prompt_per_second"] for a in singles),
           "gen_tok_s": statistics.median(a["timings"]["predicted_per_second"] for a in singles)}
    if sweep:
        return row
    offset = 0
    for n in (1, 2, 4):  # distinct prompts, no prompt cache: nothing shared flatters the figure
        wall, answers = at_once(url, alias, short_prompts(n, offset), max_tokens, False)
        offset += n
        row[f"tok_s_x{n}"] = sum(a["usage"]["completion_tokens"] for a in answers) / wall
    alone = [chat(url, alias, c, max_tokens, False)["wall_s"] for c in retrieve_prompts(task, 5, 4, "alone. ")]
    round_wall, _ = at_once(url, alias, retrieve_prompts(task, 5, 4, "alone. "), max_tokens, False)
    row["round_vs_slowest"] = round_wall / max(alone)
    sent = processed = 0
    for start in (9, 13):  # two rounds through the prompt cache: the shared system prompt and target come first
        _, answers = at_once(url, alias, retrieve_prompts(task, start, 4), max_tokens, True)
        sent += sum(a["usage"]["prompt_tokens"] for a in answers)
        processed += sum(a["timings"]["prompt_n"] for a in answers)
    row["prefix_processed_share"] = processed / sent
    return row


def round_overhead(trace_path: Path) -> tuple[float, float, int] | None:
    """Summed wall time of a trace's rounds with LLM calls, their slowest calls' summed latency, rounds."""
    if not trace_path.exists():
        return None
    rounds = [r for r in json.loads(trace_path.read_text())["rounds"] if r["llm"]["records"]]
    return (sum(r["wall_s"] for r in rounds), sum(max(x["latency_s"] for x in r["llm"]["records"]) for r in rounds),
            len(rounds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--draft", default="qwen2.5-coder-0.5b")
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--quick", action="store_true", help="only prebuilt vs native, no native-only sweeps")
    parser.add_argument("--trace", default=str(resolve_path("outputs/demo/trace.json")),
                        help="a CREW trace whose rounds to time (default: the last make demo)")
    args = parser.parse_args()
    params = load_params("quick")
    task = build_tasks(params).evaluation[0][1]
    base = llm_config(embedded={"model": args.model}).embedded
    rows: dict[str, dict] = {}
    configs = [("prebuilt", base.replace(runtime="prebuilt"), ())]
    if native_server() is None:
        print("no native build (python -m crewlib.llm.local build-native): prebuilt only\n")
    else:
        native = base.replace(runtime="native")
        configs.append(("native", native, ()))
        if not args.quick:
            draft = str(prepare_model(args.draft))
            configs += [
                ("native + draft 0.5B (n_max 4)", native, ("--model-draft", draft, "--spec-draft-n-max", "4")),
                ("native + draft 0.5B (n_max 8)", native, ("--model-draft", draft, "--spec-draft-n-max", "8")),
                ("native, 1 thread", native.replace(n_threads=1), ()),
                ("native, ubatch 256", native, ("--ubatch-size", "256")),
                ("native, ubatch 1024", native, ("--batch-size", "2048", "--ubatch-size", "1024")),
            ]
    for name, config, extra in configs:
        t0 = time.perf_counter()
        with LocalServer(config, native_args=extra) as server:
            rows[name] = measure(server, task, args.max_tokens, sweep=name not in ("prebuilt", "native"))
        print(f"{name}: {rows[name]} ({time.perf_counter() - t0:.0f} s)", flush=True)

    print(f"\nmodel {get_model(args.model).alias}, {base.n_parallel} slots, {base.n_threads} threads, answers of "
          f"{args.max_tokens} tokens, target {task.title[:60]!r}")
    if (info := build_info()) is not None:
        print(f"native build: {info['source']} for CPU {info['cpu']}, built in {info['build_s']:.0f} s")
    keys = ["prompt_tok_s", "gen_tok_s", "tok_s_x1", "tok_s_x2", "tok_s_x4", "round_vs_slowest",
            "prefix_processed_share"]
    print(f"{'configuration':32s}" + "".join(f"{k:>24s}" for k in keys))
    for name, row in rows.items():
        print(f"{name:32s}" + "".join(f"{row[k]:24.2f}" if k in row else f"{'':24s}" for k in keys))
    if (overhead := round_overhead(Path(args.trace))) is not None:
        wall, slowest, n_rounds = overhead
        print(f"CREW rounds of {args.trace} ({n_rounds} with LLM calls): wall {wall:.1f} s against their slowest calls "
              f"{slowest:.1f} s = {wall / slowest:.2f}")
    if "native" in rows:
        p, n = rows["prebuilt"], rows["native"]
        print(f"\nnative / prebuilt: prompt tok/s {n['prompt_tok_s'] / p['prompt_tok_s']:.2f}x, generation tok/s "
              f"{n['gen_tok_s'] / p['gen_tok_s']:.2f}x, 4-stream aggregate {n['tok_s_x4'] / p['tok_s_x4']:.2f}x")
        for name in ("prebuilt", "native"):
            r = rows[name]
            print(f"{name}: aggregate tok/s, 4 streams / 1 stream {r['tok_s_x4'] / r['tok_s_x1']:.2f}x, 2 / 1 "
                  f"{r['tok_s_x2'] / r['tok_s_x1']:.2f}x; prompt tokens processed / sent with the prompt cache "
                  f"{r['prefix_processed_share']:.2f}")
        for name, row in rows.items():
            if name not in ("prebuilt", "native"):
                print(f"{name} / native: prompt {row['prompt_tok_s'] / n['prompt_tok_s']:.2f}x, generation "
                      f"{row['gen_tok_s'] / n['gen_tok_s']:.2f}x")


if __name__ == "__main__":
    main()
