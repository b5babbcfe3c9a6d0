"""The answer cache: stable keys, no secrets, replay misses, concurrent writers."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import threading

import pytest

from crewlib.llm import CacheMissError, Caller, ResponseCache
from crewlib.llm.cache import CachedAnswer, canonical_request, request_key

BASE = dict(model="m", messages=[{"role": "user", "content": "hi"}], temperature=0.2, top_p=1.0,
            max_tokens=64, seed=0, response_format=None, sample_index=0, prompt_version="v1")


def test_key_is_stable_and_canonical():
    a = canonical_request(**BASE)
    b = canonical_request(**{**BASE, "messages": [{"content": "hi", "role": "user", "name": "ignored"}]})
    assert request_key(a) == request_key(b)
    # Pinned: a change to the canonical form would silently orphan every shipped cache entry.
    canonical = ('{"frequency_penalty":0.0,"max_tokens":64,"messages":[{"content":"hi","role":"user"}],'
                 '"model":"m","prompt_version":"v1","response_format":null,"sample_index":0,"seed":0,"temperature":0.2,"top_p":1.0}')
    assert request_key(a) == hashlib.sha256(canonical.encode()).hexdigest()


@pytest.mark.parametrize("field,value", [
    ("model", "other"), ("temperature", 0.7), ("top_p", 0.9), ("max_tokens", 65), ("seed", 1),
    ("frequency_penalty", 0.3), ("response_format", {"type": "json_object"}), ("sample_index", 1),
    ("prompt_version", "v2"),
    ("messages", [{"role": "user", "content": "hi!"}]),
])
def test_every_request_field_changes_the_key(field, value):
    assert request_key(canonical_request(**BASE)) != request_key(canonical_request(**{**BASE, field: value}))


def test_endpoint_and_key_are_not_part_of_the_cache(make_client, scripted_server, tmp_path, monkeypatch):
    secret = "sk-test-" + "S3CRET" * 6
    monkeypatch.setenv("MY_TEST_KEY", secret)
    client = make_client(scripted_server, api_key_env="MY_TEST_KEY")
    client.chat([{"role": "user", "content": "hello"}], caller=Caller("t", "r"))
    headers = {k.lower(): v for k, v in scripted_server.headers[0].items()}
    assert headers["authorization"] == f"Bearer {secret}"  # the key did reach the endpoint
    files = list((tmp_path / "cache").rglob("*.json"))
    assert len(files) == 1
    text = files[0].read_text()
    assert secret not in text and scripted_server.base_url not in text and "Authorization" not in text
    csv_path = client.ledger.to_csv(tmp_path / "ledger.csv")
    assert secret not in csv_path.read_text()
    assert secret not in repr(client) and secret not in repr(client.__dict__)


def test_replay_miss_names_the_request(tmp_path):
    cache = ResponseCache(tmp_path, mode="replay")
    req = canonical_request(**BASE)
    with pytest.raises(CacheMissError, match=request_key(req)[:12]) as err:
        cache.get(req, request_key(req))
    assert "'hi'" in str(err.value)


def test_off_mode_neither_reads_nor_writes(tmp_path):
    req = canonical_request(**BASE)
    key = request_key(req)
    ResponseCache(tmp_path, "read_write").put(req, key, CachedAnswer("x", "m", 1, 1, "stop", 0.1))
    off = ResponseCache(tmp_path, "off")
    assert off.get(req, key) is None
    off.put(req, request_key({**req, "seed": 9}), CachedAnswer("y", "m", 1, 1, "stop", 0.1))
    assert len(ResponseCache(tmp_path)) == 1


def test_damaged_entry_is_a_miss(tmp_path):
    cache = ResponseCache(tmp_path)
    req = canonical_request(**BASE)
    key = request_key(req)
    cache.put(req, key, CachedAnswer("x", "m", 1, 1, "stop", 0.1))
    path = next(tmp_path.rglob("*.json"))
    path.write_text(path.read_text()[:20])
    assert cache.get(req, key) is None


def _writer(folder: str, content: str) -> None:
    cache = ResponseCache(folder)
    req = canonical_request(**BASE)
    for _ in range(50):
        cache.put(req, request_key(req), CachedAnswer(content, "m", 1, 1, "stop", 0.1))


def test_concurrent_threads_and_processes_leave_a_valid_entry(tmp_path):
    threads = [threading.Thread(target=_writer, args=(str(tmp_path), f"t{i}")) for i in range(4)]
    procs = [multiprocessing.get_context("spawn").Process(target=_writer, args=(str(tmp_path), f"p{i}"))
             for i in range(2)]
    for w in threads + procs:
        w.start()
    for w in threads + procs:
        w.join()
    assert all(p.exitcode == 0 for p in procs)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) == 1, files  # no stray temporary files
    entry = json.loads(files[0].read_text())
    assert entry["response"]["content"] in {f"t{i}" for i in range(4)} | {"p0", "p1"}
