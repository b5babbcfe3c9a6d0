"""Benchmark of the embedded LLM through the project's client (figures and ratios, one run).

Measures, on this machine:
- single-stream generation tokens/s (completion tokens / wall time of one request);
- aggregate completion tokens/s with 1, 2 and 4 concurrent requests;
- 4 requests one after another vs 4 at once (the ratio the CREW rounds rely on);
- cache-hit latency vs a live call.

    python benchmarks/llm_local.py --model qwen2.5-coder-1.5b --max-tokens 64
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from crewlib.llm import Caller, ChatRequest, LLMClient, LLMConfig, ResponseCache
from crewlib.llm.config import EmbeddedConfig
from crewlib.llm.local import LocalServer

TOPICS = ["self-attention", "pretrained language models", "abstractive summarisation", "citation graphs",
          "reinforcement learning", "multi-agent systems", "retrieval-augmented generation", "evaluation metrics"]


def requests_for(n: int, offset: int, max_tokens: int) -> list[ChatRequest]:
    # Distinct prompts so neither the answer cache nor identical-prompt reuse flatters a result.
    return [ChatRequest([{"role": "user", "content": f"Write three sentences about {TOPICS[(offset + i) % 8]} "
                                                      f"in NLP research (variant {offset + i})."}],
                        caller=Caller("benchmark", "generate", i), max_tokens=max_tokens)
            for i in range(n)]


def timed_batch(client: LLMClient, reqs: list[ChatRequest], concurrency: int) -> tuple[float, int]:
    t0 = time.perf_counter()
    results = client.batch(reqs, max_concurrency=concurrency)
    return time.perf_counter() - t0, sum(r.record.completion_tokens for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    embedded = EmbeddedConfig(model=args.model, n_parallel=4, n_threads=args.threads, n_ctx_per_slot=1024)
    with LocalServer(embedded) as server, tempfile.TemporaryDirectory() as tmp:
        cfg = LLMConfig(provider="openai", base_url=server.base_url, model=server.alias, api_key_env="",
                        temperature=0.0, max_tokens=args.max_tokens, concurrency=4, cache_mode="off",
                        frequency_penalty=0.3)
        client = LLMClient(cfg, cache=ResponseCache(tmp, "off"))
        client.batch(requests_for(1, 99, 8))  # warm-up: load weights into memory
        print(f"model {server.alias}, {args.threads} threads, 4 server slots, max_tokens {args.max_tokens}\n")

        single_s, single_tok = timed_batch(client, requests_for(1, 0, args.max_tokens), 1)
        print(f"single stream: {single_tok} tokens in {single_s:.2f} s = {single_tok / single_s:.1f} tokens/s")

        offset = 1
        for conc in (1, 2, 4):
            wall, tok = timed_batch(client, requests_for(conc, offset, args.max_tokens), conc)
            offset += conc
            print(f"concurrency {conc}: {tok} tokens in {wall:.2f} s = {tok / wall:.1f} tokens/s aggregate")

        seq_s, seq_tok = timed_batch(client, requests_for(4, 20, args.max_tokens), 1)
        par_s, par_tok = timed_batch(client, requests_for(4, 30, args.max_tokens), 4)
        print(f"\n4 requests one at a time: {seq_s:.2f} s ({seq_tok} tokens); 4 at once: {par_s:.2f} s "
              f"({par_tok} tokens)")
        print(f"ratio concurrent / sequential wall time = {par_s / seq_s:.2f} "
              f"(per token: {(par_s / par_tok) / (seq_s / seq_tok):.2f})")

        cached = LLMClient(LLMConfig(**{**cfg.__dict__, "cache_mode": "read_write", "cache_dir": tmp}),
                           base_url=server.base_url, cache=ResponseCache(tmp, "read_write"))
        (req,) = requests_for(1, 50, args.max_tokens)
        live = cached.run(req).record.latency_s
        hits = [cached.run(req).record.latency_s for _ in range(200)]
        hit = statistics.median(hits)
        print(f"\ncache: live call {live * 1000:.0f} ms, hit median {hit * 1000:.3f} ms "
              f"(ratio live / hit = {live / hit:,.0f}x)")


if __name__ == "__main__":
    main()
