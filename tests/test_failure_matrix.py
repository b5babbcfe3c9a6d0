"""The failure matrix (docs/reliability.md): every broken answer, broken line and second process of
the reliability issue, each against a scripted endpoint (tests/fakes.py) or a crafted file,
asserting what must happen — a typed, retried, recorded error or a counted skip, never a crash
deep inside, a lost result, a cached failure or a leaked key.

Rows tested elsewhere: a checkpoint is loaded with ``weights_only=True`` and a pickle that would
run code is refused (tests/test_faithful.py::test_a_checkpoint_that_would_run_code_is_refused).
"""

import json
import subprocess
import sys
import time
import warnings

import pandas as pd
import pytest
from fakes import ScriptedOpenAIServer, Step

from crewlib.baselines import make_system
from crewlib.config import ParamsError, load_params
from crewlib.data.loaders import SAMPLE_FILES, load_oarelatedwork
from crewlib.data.records import Reference, RWGExample
from crewlib.experiments import read_generations, run_generations
from crewlib.experiments.run import settings_folder
from crewlib.llm import EndpointError, LLMClient, LLMError, ResponseCache, RetryExhaustedError
from crewlib.llm.cache import CachedAnswer, canonical_request, request_key
from crewlib.llm.settings import llm_settings
from crewlib.lock import OutputLockedError, output_lock

PARAMS = load_params("quick")
MSG = [{"role": "user", "content": "hello"}]
SECRET = "fake-test-credential-0123456789"  # not a key: a value to look for
BROKEN_BODIES = {
    "not JSON": "this is not json at all",
    "truncated JSON": '{"id": "x", "choices": [{"index": 0, "message": {"role": "assis',
    "an HTML page": "<html><body><h1>502 Bad Gateway</h1></body></html>",
}


def _example(target_id="t1", n=4) -> RWGExample:
    refs = tuple(Reference(f"p{i}", f"Paper {i} on graphs", f"Paper {i} studies graph attention variant {i}. " * 3)
                 for i in range(n))
    return RWGExample(target_id, "Graph attention", "We study attention on graphs.", refs,
                      gold_related_work="Gold [R1].", gold_cited_ids=("p0",))


# ----------------------------------------------------------------------------- broken answers
@pytest.mark.parametrize("what", list(BROKEN_BODIES))
def test_a_200_that_is_not_a_completion_is_retried_recorded_and_typed(what, make_client):
    with ScriptedOpenAIServer() as server:
        server.push(Step(body=BROKEN_BODIES[what]), Step(body=BROKEN_BODIES[what],
                                                         headers={"Content-Type": "text/html"}))
        client = make_client(server)
        result = client.chat(MSG)  # two broken answers, then the default "ok"
        assert result.content == "ok" and result.record.retries == 2 and len(server.requests) == 3

        server.default = Step(body=BROKEN_BODIES[what])
        with pytest.raises(RetryExhaustedError) as err:
            client.chat([{"role": "user", "content": "again"}])
    assert isinstance(err.value, LLMError) and "MalformedResponseError" in str(err.value)
    failed = client.ledger.records[-1]
    assert failed.error and failed.retries == 3  # every attempt in the ledger
    assert len(client.cache) == 1  # only the good answer


def test_after_retries_a_single_call_system_gets_an_error_row_and_the_run_goes_on(make_client, tmp_path):
    with ScriptedOpenAIServer(default=Step(body=BROKEN_BODIES["an HTML page"])) as server:
        frame = run_generations(["long_context", "extractive"], [_example("a"), _example("b")], PARAMS,
                            make_client(server, max_retries=1), out_dir=tmp_path, progress=False).frame()
    rows = frame.set_index(["system", "example"])
    assert pd.isna(rows.loc[("long_context", "a"), "text"])
    assert "RetryExhaustedError" in rows.loc[("long_context", "a"), "error"]
    assert rows.loc[("extractive", "b"), "text"]  # the run went on
    saved = read_generations(settings_folder(tmp_path, PARAMS) / "generations.jsonl")
    assert set(saved) == {("extractive", "a"), ("extractive", "b")}  # failures are rerun, not saved


def test_crew_turns_broken_answers_into_counted_fallbacks(make_client):
    with ScriptedOpenAIServer(default=Step(body=BROKEN_BODIES["truncated JSON"])) as server:
        crew = make_system("crew", PARAMS, make_client(server, max_retries=0))
        generation = crew.generate(_example(n=6))
    assert sum(generation.fallbacks.values()) > 0  # the episode ran to its end
    assert any("RetryExhaustedError" in why or "Malformed" in why for why in generation.fallbacks)


def test_an_empty_answer_is_never_cached_and_a_rerun_asks_again(make_client):
    with ScriptedOpenAIServer(default=Step(content="")) as server:
        client = make_client(server, max_retries=1)
        with pytest.raises(RetryExhaustedError, match="empty content"):
            client.chat(MSG)
        assert len(client.cache) == 0
        server.default = Step(content="now an answer")
        assert client.chat(MSG).content == "now an answer"
    assert len(server.requests) == 3


def test_an_empty_answer_recorded_by_an_older_version_is_a_miss(tmp_path):
    cache = ResponseCache(tmp_path, "read_write")
    request = canonical_request(model="m", messages=MSG, temperature=0, top_p=1, max_tokens=8, seed=0,
                                response_format=None)
    key = request_key(request)
    path = tmp_path / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True)
    answer = CachedAnswer("", "m", 1, 0, "stop", 0.1)
    path.write_text(json.dumps({"request": request, "response": answer.__dict__}))
    assert cache.get(request, key) is None
    cache.put(request, key, answer)  # and never written
    assert json.loads(path.read_text())["response"]["content"] == ""


def test_an_empty_section_is_an_error_row_that_a_rerun_retries(make_client, tmp_path):
    with ScriptedOpenAIServer(default=Step(content="Here is a related-work section for the paper.")) as server:
        frame = run_generations(["long_context"], [_example()], PARAMS, make_client(server), out_dir=tmp_path,
                            progress=False).frame()
    assert pd.isna(frame.text.iloc[0]) and "EmptySection" in frame.error.iloc[0]  # meta-text only: nothing left
    assert not read_generations(settings_folder(tmp_path, PARAMS) / "generations.jsonl")


def test_an_empty_section_of_an_agent_team_says_which_actions_were_taken(make_client, tmp_path):
    """The 1.5B orchestrator assigned retrieve in every round: the error row says so instead of only "no text"."""
    retrieve_all = json.dumps({f"agent_{i}": "retrieve" for i in range(3)})  # baselines.orchestrator.constrain
    with ScriptedOpenAIServer(default=Step(content=retrieve_all)) as server:
        params = load_params("quick", {"baselines": {"orchestrator": {"rounds": 2}}})
        frame = run_generations(["orchestrator"], [_example()], params, make_client(server), out_dir=tmp_path,
                                progress=False).frame()
    assert frame.error.iloc[0] == "EmptySection: the system wrote no text (actions taken over 2 rounds: retrieve 6)"


@pytest.mark.parametrize("header, expected", [("3", 3.0), ("1000", 5.0)])
def test_retry_after_is_waited_for_up_to_the_cap(header, expected, make_client):
    with ScriptedOpenAIServer() as server:
        server.push(Step(status=429, headers={"Retry-After": header}))
        client = make_client(server, retry_after_max_s=5.0, backoff_base_s=0.1)
        assert client.chat(MSG).content == "ok"
    assert client.sleeps[-1] == pytest.approx(expected)


def test_a_key_echoed_in_an_error_never_reaches_the_message_or_the_ledger(make_client, monkeypatch, tmp_path):
    monkeypatch.setenv("CREW_TEST_KEY", SECRET)
    with ScriptedOpenAIServer() as server:
        server.push(Step(status=401, error_message=f"invalid key; you sent 'Authorization: Bearer {SECRET}'"),
                    Step(status=503, error_message=f"upstream rejected {SECRET}"),
                    Step(status=503, error_message=f"upstream rejected {SECRET}"))
        client = make_client(server, api_key_env="CREW_TEST_KEY", max_retries=1)
        with pytest.raises(EndpointError) as refused:
            client.chat(MSG)
        with pytest.raises(RetryExhaustedError) as exhausted:
            client.chat([{"role": "user", "content": "other"}])
    sent = {k.lower(): v for k, v in server.headers[0].items()}
    assert sent["authorization"] == f"Bearer {SECRET}"  # the key did reach the endpoint
    for err in (refused.value, exhausted.value):
        assert SECRET not in str(err) and "***" in str(err) and err.__cause__ is None
    written = client.ledger.to_csv(tmp_path / "ledger.csv").read_text()
    assert "HTTP 401" in written and SECRET not in written


def test_a_hung_endpoint_stops_at_the_call_deadline_which_the_error_names(make_client):
    with ScriptedOpenAIServer(default=Step(delay_s=5)) as server:
        client = make_client(server, timeout_s=1.0, deadline_s=2.0, max_retries=4)
        t0 = time.monotonic()
        with pytest.raises(RetryExhaustedError, match=r"llm.deadline_s = 2 s") as err:
            client.chat(MSG)
    assert time.monotonic() - t0 < 4.0  # not 5 attempts x 1 s + backoff, not 25 minutes
    assert err.value.attempts <= 2


# ----------------------------------------------------------------------------- broken files
def test_a_half_written_generations_line_is_skipped_naming_file_and_line_and_its_pair_reruns(tmp_path, make_client):
    path = settings_folder(tmp_path, PARAMS) / "generations.jsonl"
    first = run_generations(["extractive"], [_example("a")], PARAMS, None, out_dir=tmp_path, progress=False).frame()
    with path.open("a") as fh:
        fh.write('{"system": "extractive", "example": "b", "text": "cut sho')
    with pytest.warns(UserWarning, match=r"generations.jsonl line 2 .*skipped"):
        frame = run_generations(["extractive"], [_example("a"), _example("b")], PARAMS, None, out_dir=tmp_path,
                            progress=False).frame()
    assert frame.text.notna().all() and frame.text.iloc[0] == first.text.iloc[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ("extractive", "b") in read_generations(path)


def _write_rows(path, lines):
    sample = SAMPLE_FILES["oarelatedwork"].read_text().splitlines()[0]
    path.write_bytes(b"\n".join(line if isinstance(line, bytes) else line.encode() for line in
                                [sample if line == "GOOD" else line for line in lines]) + b"\n")


def test_duplicate_target_ids_are_rejected_at_load_counted_and_named(tmp_path):
    path = tmp_path / "dup.jsonl"
    _write_rows(path, ["GOOD", "GOOD"])
    records, report = load_oarelatedwork(path)
    assert report.loaded == 1 and report.n_skipped == 1
    assert "repeats an earlier record's id" in str(report) and records[0].target_id in report.skipped_examples[0]
    with pytest.raises(ValueError, match="more than once"):
        run_generations(["extractive"], [_example("x"), _example("x")], PARAMS, None, progress=False).frame()


def test_lines_that_are_not_objects_or_not_utf8_are_skipped_and_named(tmp_path):
    path = tmp_path / "bad.jsonl"
    _write_rows(path, ["null", "[1, 2]", '"a string"', b'{"id": "\xff\xfe"}', "GOOD"])
    records, report = load_oarelatedwork(path)
    assert report.loaded == 1 and report.n_skipped == 4
    text = str(report)
    for line_no, what in [(1, "NoneType"), (2, "list"), (3, "str"), (4, "not valid UTF-8")]:
        assert f"line {line_no} " in text and what in text


def test_a_second_process_on_the_same_output_folder_is_refused_with_the_holder_named(tmp_path):
    folder = settings_folder(tmp_path, PARAMS)  # where these params' generations live
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from crewlib.lock import output_lock\n"
        f"with output_lock({str(folder)!r}):\n    print('held', flush=True); time.sleep(30)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(OutputLockedError, match=rf"process {holder.pid}"):
            run_generations(["extractive"], [_example()], PARAMS, None, out_dir=tmp_path, progress=False).frame()
    finally:
        holder.kill()
        holder.wait()
    with output_lock(folder):  # released by the kernel when the holder died
        pass


# ----------------------------------------------------------------------------- inputs and settings
def test_rag_caps_the_chunks_of_a_very_long_reference_and_records_the_cut(make_client):
    long_ref = Reference("huge", "A very long reference", "graph attention " * 100_000)  # 200,000 words
    example = _example()
    example = RWGExample(example.target_id, example.title, example.abstract, (*example.references, long_ref),
                         gold_related_work=example.gold_related_work, gold_cited_ids=example.gold_cited_ids)
    with ScriptedOpenAIServer(default=Step(content="Attention on graphs is studied [R1].")) as server:
        rag = make_system("rag", PARAMS, make_client(server))
        chunks, dropped = rag.chunks(rag.task(example))
        t0 = time.monotonic()
        generation = rag.generate(example)
    cap = PARAMS.baselines.rag.max_chunks_per_reference
    assert sum(key == rag.task(example).id_to_key["huge"] for key, _ in chunks) == cap
    assert dropped == 200_000 // PARAMS.baselines.rag.chunk_words - cap
    assert generation.notes["chunks_dropped"] == dropped and time.monotonic() - t0 < 60


def test_fault_injection_from_params_and_from_the_environment(make_client):
    cfg = llm_settings(load_params("quick", {"llm": {"faults": {"rate": 0.5, "seed": 3}}}), env={})
    assert (cfg.faults.rate, cfg.faults.seed) == (0.5, 3)
    cfg = llm_settings(load_params("quick"), env={"CREW_LLM_FAULTS": "0.2:7"})
    assert (cfg.faults.rate, cfg.faults.seed) == (0.2, 7)
    with pytest.raises(ParamsError, match="CREW_LLM_FAULTS"):
        llm_settings(load_params("quick"), env={"CREW_LLM_FAULTS": "often"})
    with pytest.raises(ParamsError):
        load_params("quick", {"llm": {"faults": {"rate": 2.0, "seed": 0}}})
    with ScriptedOpenAIServer() as server:
        client = make_client(server, faults=llm_settings(load_params("quick"), env={"CREW_LLM_FAULTS": "0.5:1"}).faults)
        assert client.faults is not None and client.faults.rate == 0.5
        results = [client.chat([{"role": "user", "content": f"q{i}"}]) for i in range(20)]
    injected = sum(client.faults.injected.values())
    assert injected > 0 and sum(r.record.retries for r in results) == injected  # every fault absorbed, billed once
    assert len(server.requests) == 20


def test_a_client_built_from_its_config_honours_llm_faults():
    cfg = llm_settings(load_params("quick", {"llm": {"provider": "openai", "base_url": "http://127.0.0.1:9/v1",
                                                    "model": "m", "api_key_env": "",
                                                    "faults": {"rate": 0.1, "seed": 0}}}), env={})
    assert LLMClient(cfg).faults.rate == 0.1


_RUN_TWO = """
import sys
from crewlib.experiments import run_generations
from crewlib.config import load_params
from crewlib.data.records import Reference, RWGExample
from crewlib.llm import LLMClient
from crewlib.llm.settings import llm_config
refs = tuple(Reference(f"p{i}", f"Paper {i}", f"Paper {i} studies graphs. " * 3) for i in range(3))
examples = [RWGExample(t, f"Graphs {t}", f"We study graphs ({t}).", refs, gold_related_work="G [R1].",
                       gold_cited_ids=("p0",)) for t in ("a", "b")]
cfg = llm_config(provider="openai", base_url=sys.argv[1], model="m", api_key_env="", cache_dir=sys.argv[2],
                 max_retries=0)
params = load_params("quick", {"output": {"repairs": []}})  # a scripted toy section, kept as written
run_generations(["long_context"], examples, params, LLMClient(cfg), out_dir=sys.argv[3], progress=False)
print("finished", flush=True)
"""


def test_a_run_killed_mid_call_repeats_only_the_call_in_flight(tmp_path):
    with ScriptedOpenAIServer(default=Step(content="Graphs are studied [R1].")) as server:
        server.push(Step(content="Graph work is reviewed [R1]."), Step(content="late [R2].", delay_s=30))
        args = [sys.executable, "-c", _RUN_TWO, server.base_url, str(tmp_path / "cache"), str(tmp_path / "out")]
        run = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 240
        while len(server.requests) < 2 and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.1)  # until the second call is in flight
        run.kill()
        _, err = run.communicate()
        assert len(server.requests) == 2, err[-2000:]
        finished = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert "finished" in finished.stdout, finished.stderr
    assert len(server.requests) == 3  # example a resumed from generations.jsonl; only b's call again
    saved = read_generations(next((tmp_path / "out").glob("settings-*/generations.jsonl")))
    assert set(saved) == {("long_context", "a"), ("long_context", "b")}
