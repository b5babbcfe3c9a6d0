"""Integration: the real embedded model (0.5B in CI) through the one client."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pydantic
import pytest

from crewlib.llm import Caller, ChatRequest, LLMClient, ResponseCache
from crewlib.llm.local import LocalServer
from crewlib.llm.native import native_server
from crewlib.llm.settings import cache_path, llm_config

pytestmark = pytest.mark.llm


class PaperTags(pydantic.BaseModel):
    topic: str
    keywords: list[str] = pydantic.Field(min_length=1, max_length=6)


def _client(server, tmp_path, mode="read_write") -> LLMClient:
    cfg = llm_config(provider="openai", base_url=server.base_url, model=server.alias, api_key_env="",
                    max_tokens=64, frequency_penalty=0.5, temperature=0.0, cache_mode=mode,
                    cache_dir=str(tmp_path / "cache"))
    return LLMClient(cfg, cache=ResponseCache(cache_path(cfg), mode))


def test_chat_completion(embedded_server, tmp_path):
    client = _client(embedded_server, tmp_path)
    result = client.chat([{"role": "user", "content": "Name one sorting algorithm. One word."}],
                         caller=Caller("test", "chat"))
    assert result.content.strip()
    assert result.record.prompt_tokens > 5 and result.record.completion_tokens > 0
    assert result.record.model.startswith("qwen2.5-coder")


def test_json_mode_completion(embedded_server, tmp_path):
    client = _client(embedded_server, tmp_path)
    prompt = ("Paper: 'Attention Is All You Need' (the Transformer). State its topic in a few words and "
              "give exactly three keywords.")
    result = client.chat_json([{"role": "user", "content": prompt}], PaperTags, max_tokens=128)
    assert isinstance(result.parsed, PaperTags) and result.parsed.keywords


def test_cached_rerun_makes_no_server_call(embedded_server, tmp_path):
    messages = [{"role": "user", "content": "Say 'cache' and nothing else."}]
    live_client = _client(embedded_server, tmp_path)
    live = live_client.chat(messages)
    # Same cache, an endpoint that does not exist: only the cache can answer.
    cfg = live_client.config.replace(base_url="http://127.0.0.1:9/v1", cache_mode="replay")
    replayer = LLMClient(cfg)
    replay = replayer.chat(messages)
    assert replay.content == live.content and replay.cached
    assert replay.record.completion_tokens == live.record.completion_tokens
    assert replayer.ledger.totals()["billed_tokens"] == 0


def test_batch_against_the_server(embedded_server, tmp_path):
    client = _client(embedded_server, tmp_path, mode="off")
    requests = [ChatRequest([{"role": "user", "content": f"What is {i} plus {i}? Answer with a number."}],
                            caller=Caller("test", "batch", i), max_tokens=8) for i in range(3)]
    results = client.batch(requests)
    assert [r.record.agent for r in results] == [0, 1, 2] and all(r.content for r in results)


def _listening(table: str, port: int) -> list[str]:
    """Local addresses in LISTEN state (0A) on ``port`` in /proc/net/tcp or tcp6."""
    rows = Path(f"/proc/net/{table}").read_text().splitlines()[1:]
    return [r.split()[1] for r in rows if r.split()[1].endswith(f":{port:04X}") and r.split()[3] == "0A"]


def test_server_listens_on_loopback_only(embedded_server):
    assert _listening("tcp", embedded_server.port) == [f"0100007F:{embedded_server.port:04X}"]  # 127.0.0.1
    assert _listening("tcp6", embedded_server.port) == []


RUNTIMES = [pytest.param("prebuilt"),
            pytest.param("native", marks=pytest.mark.skipif(native_server() is None,
                                                            reason="no native llama.cpp build (make native)"))]


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (the serve wrapper's llama-server with the native runtime)."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        kids = [p for p, ppid in parents.items() if ppid in frontier]
        found += kids
        frontier = kids
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_each_runtime_answers_a_chat(embedded_config, runtime, tmp_path):
    with LocalServer(embedded_config.replace(runtime=runtime, n_parallel=1)) as server:
        assert server.runtime == runtime
        result = _client(server, tmp_path).chat([{"role": "user", "content": "Name one sorting algorithm."}],
                                                caller=Caller("test", "chat"))
        assert result.content.strip() and result.record.completion_tokens > 0


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_server_stops_with_its_context_and_at_exit(embedded_config, runtime):
    with LocalServer(embedded_config.replace(runtime=runtime, n_parallel=1)) as server:
        proc = server._proc
        below = _descendants(proc.pid)
        assert server.running and (runtime == "prebuilt" or below)
    assert proc.poll() is not None and not server.running
    assert not any(_alive(p) for p in below)
    # A script that never calls stop(): the atexit hook must still end the child server.
    script = textwrap.dedent(f"""
        from crewlib.llm.settings import llm_config
        from crewlib.llm.local import LocalServer
        cfg = llm_config().embedded.replace(model={embedded_config.model!r}, n_parallel=1, runtime={runtime!r})
        s = LocalServer(cfg).start()
        print(s._proc.pid)
    """)
    pid = int(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                             timeout=300).stdout.split()[-1])
    assert not _alive(pid)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_server_stops_when_its_parent_is_killed(embedded_config, runtime):
    """SIGKILL skips atexit: the child server (and a native llama-server below it) must stop by itself."""
    script = textwrap.dedent(f"""
        import time
        from crewlib.llm.settings import llm_config
        from crewlib.llm.local import LocalServer
        cfg = llm_config().embedded.replace(model={embedded_config.model!r}, n_parallel=1, runtime={runtime!r})
        s = LocalServer(cfg).start()
        print(s._proc.pid, flush=True)
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    watched = [child, *_descendants(child)]
    assert runtime == "prebuilt" or len(watched) > 1
    parent.kill()
    parent.wait()
    for _ in range(75):
        if not any(_alive(p) for p in watched):
            break
        time.sleep(0.2)
    assert not any(_alive(p) for p in watched)
