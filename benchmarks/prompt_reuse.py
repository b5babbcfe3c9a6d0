"""How much of a run's prompts a fresh embedded server takes from its prompt cache, replayed (issue 47, item 3).

Usage: python benchmarks/prompt_reuse.py RUN_DIR CACHE_DIR [--model qwen2.5-coder-0.5b] [--native-arg=--cache-reuse
       --native-arg=64 ...] [--compose-instructions-first]

RUN_DIR: a demo's or ``crew write``'s output folder (its ``ledger.csv``); CACHE_DIR: the LLM cache its answers went
to (each request's messages are read back by the ledger's ``request_key``). A fresh embedded server (the native
runtime, with any extra ``llama-server`` options) gets the run's requests again, each round's calls at once as the
run sent them, each asked for one answer token: only prompt processing is paid, and the server's prompt cache
behaves as in the run (slots, prefixes). Printed: the prompt tokens the server reported taking from its cache, of all,
overall and by role. ``--compose-instructions-first`` replays Compose's prompts with their fixed instructions moved
ahead of the section so far and the notes, the works' keys last (the order docs/method.md measured for quality), to
size what that order would reuse. The 0.5B model tokenises as the 1.5B does (the same Qwen2.5 tokenizer) and replays
fast; reuse does not depend on the model's answers.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import urllib.request
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from crewlib.config import load_params  # noqa: E402
from crewlib.llm.local import LocalServer  # noqa: E402


def instructions_first(text: str) -> str:
    """A themed Compose prompt with its instructions ahead of the section so far and the notes, its keys last."""
    if "Write ONE paragraph" not in text or "The section so far" not in text:
        return text
    start, instructions = text.index("The section so far"), text.index("Write ONE paragraph")
    moved = text[:start] + text[instructions:] + "\n\n" + text[start:instructions]
    keys = re.search(r"about these works only, ([^:]*):", moved)
    return moved.replace(keys.group(0), "about the works below only:") + f"\nTheir keys: {keys.group(1)}" if keys \
        else moved


def replay(server_url: str, requests: list[tuple[str, str, list[dict]]]) -> dict[str, list[int]]:
    """role → [prompt tokens, reused] over ``requests`` (round, role, messages), each round's sent at once."""
    def ask(item: tuple[str, str, list[dict]]) -> tuple[str, int, int]:
        body = json.dumps({"messages": item[2], "max_tokens": 1, "temperature": 0}).encode()
        request = urllib.request.Request(server_url + "/chat/completions", body, {"Content-Type": "application/json"})
        usage = json.loads(urllib.request.urlopen(request, timeout=600).read())["usage"]
        return item[1], usage["prompt_tokens"], (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)

    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    rounds: dict[str, list] = defaultdict(list)
    for item in requests:
        rounds[item[0]].append(item)
    for t in sorted(rounds, key=lambda r: int(r or 0)):
        with ThreadPoolExecutor(max(len(rounds[t]), 1)) as pool:
            for role, prompt, reused in pool.map(ask, rounds[t]):
                totals[role][0] += prompt
                totals[role][1] += reused
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir")
    parser.add_argument("cache_dir")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--native-arg", action="append", default=[], help="an extra llama-server option")
    parser.add_argument("--compose-instructions-first", action="store_true")
    args = parser.parse_args()
    requests = []
    with open(Path(args.run_dir) / "ledger.csv", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            key = row["request_key"]
            entry = json.loads((Path(args.cache_dir) / key[:2] / f"{key}.json").read_text(encoding="utf-8"))
            messages = [dict(m) for m in entry["request"]["messages"]]
            if args.compose_instructions_first:
                messages[-1]["content"] = instructions_first(messages[-1]["content"])
            requests.append((row["round"], row["role"], messages))
    config = load_params("quick").llm.embedded.model_copy(update={"model": args.model, "runtime": "native"})
    server = LocalServer(config, native_args=tuple(args.native_arg)).start()
    try:
        totals = replay(server.base_url, requests)
    finally:
        server.stop()
    prompt, reused = sum(v[0] for v in totals.values()), sum(v[1] for v in totals.values())
    by_role = ", ".join(f"{role} {v[1] / max(v[0], 1):.2f}" for role, v in totals.items())
    print(f"{args.run_dir}: {len(requests)} calls; reused {reused:,} of {prompt:,} prompt tokens "
          f"({reused / max(prompt, 1):.3f}); by role: {by_role}; server options: {' '.join(args.native_arg) or '-'}"
          + ("; Compose's instructions first" if args.compose_instructions_first else ""))


if __name__ == "__main__":
    main()
