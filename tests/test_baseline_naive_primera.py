"""Naive Orchestrator against a scripted endpoint (no shared workspace, counted fallbacks) and PRIMERA's
input formatting, offline failure and loading code (a tiny random LED stands in for the weights)."""

import json

import pytest
from fakes import ScriptedOpenAIServer, Step

from crewlib.baselines import SystemUnavailableError, make_system
from crewlib.baselines.naive_orchestrator import NaiveOrchestrator
from crewlib.baselines.primera import DOC_SEP, Primera, format_primera_input, global_attention_positions
from crewlib.config import load_params
from crewlib.data.records import Reference, RWGExample
from crewlib.llm import LLMError

# These tests run the pipelines on scripted toy answers; the sentence repairs of the final section are
# tested on their own (tests/test_section_guarantees.py), so here the section is left as the pipeline wrote it.
MECHANICS = {"output": {"repairs": []}}
EXAMPLE = RWGExample(
    target_id="t1", title="Graph transformers for molecular property prediction",
    abstract="We combine message passing with attention for molecular property prediction on benchmarks.",
    references=(
        Reference("a", "Neural message passing for quantum chemistry",
                  "Message passing neural networks predict molecular properties."),
        Reference("b", "Attention is all you need", "The transformer relies entirely on attention."),
        Reference("c", "MoleculeNet: a benchmark for molecular machine learning",
                  "A benchmark of molecular machine learning datasets."),
        Reference("d", "Deep residual learning for image recognition",
                  "Residual connections ease the training of deep networks."),
    ),
)
PARAMS = load_params("quick", {**MECHANICS, "env": {"n_agents": 3, "relevance": "tfidf"},
                                "baselines": {"max_tokens": 300, "naive_orchestrator": {"max_steps": 2}}})


def _plan(*subtasks, done=None):
    body = {"subtasks": [{"agent": a, "instruction": i, "keys": k} for a, i, k in subtasks]}
    if done is not None:
        body["done"] = done
    return Step(content=json.dumps(body))


def _user(request):
    return request["messages"][-1]["content"]


def _titles(system):
    task = system.task(EXAMPLE)
    return {k: r.title for k, r in zip(task.keys, task.references, strict=True)}


def test_naive_orchestrator_end_to_end_without_shared_workspace(make_client):
    with ScriptedOpenAIServer() as server:
        system = NaiveOrchestrator(PARAMS, make_client(server, concurrency=1))
        titles = _titles(system)
        server.push(
            _plan((0, "Summarise the graph works", ["R1", "R2"]), (1, "Summarise the benchmark", ["R3"]),
                  (2, "Summarise the rest", ["[r4]"])),  # a bracketed, lower-case key is still R4
            Step(content="AGENT0-STEP0 first works [R1] and [R2]."), Step(content="AGENT1-STEP0 benchmark [R3]."),
            Step(content="AGENT2-STEP0 residual nets [R4]."),
            _plan((1, "Compare R1 with R3", ["R1", "R3"]), done=False),
            Step(content="AGENT1-STEP1 comparison [R1] [R3]."),
            Step(content=json.dumps({"done": True})),
            Step(content="Message passing [R1] meets benchmarks [R3].\n\nAttention [R2]."),
        )
        generation = system.generate(EXAMPLE)
        requests = list(server.requests)

    assert generation.text == "Message passing [R1] meets benchmarks [R3].\n\nAttention [R2]."
    assert generation.citation_check.verification == 1.0 and generation.system == "naive_orchestrator"
    assert len(requests) == 8 == len(generation.records) == generation.cost["calls"]
    assert [(r.role, r.agent) for r in generation.records] == [
        ("decompose", None), ("agent", 0), ("agent", 1), ("agent", 2), ("assign", None), ("agent", 1),
        ("assign", None), ("write", None)]
    assert not generation.fallbacks
    assert generation.notes["subtasks"] == 4 and generation.notes["steps"] == 1
    assert generation.notes["stopped"] == "done" and generation.notes["agent_replies"] == 4

    # Each agent sees its own references only, and never a reply (its own earlier one included).
    own = {1: ["R1", "R2"], 2: ["R3"], 3: ["R4"], 5: ["R1", "R3"]}
    for index, keys in own.items():
        prompt = _user(requests[index])
        assert all(titles[k] in prompt for k in keys)
        assert not any(titles[k] in prompt for k in titles if k not in keys)
        assert "AGENT" not in prompt
    assert "Compare R1 with R3" in _user(requests[5])
    # The coordinator reads every reply so far; the final write sees all four.
    assert all(f"AGENT{a}-STEP0" in _user(requests[4]) for a in range(3))
    assert all(marker in _user(requests[7]) for marker in
               ("AGENT0-STEP0", "AGENT1-STEP0", "AGENT2-STEP0", "AGENT1-STEP1"))


def test_invalid_decomposition_falls_back_to_round_robin(make_client):
    params = load_params("quick", {**MECHANICS, "env": {"n_agents": 3}, "baselines": {"max_tokens": 300,
                                                                     "naive_orchestrator": {"max_steps": 1}}})
    with ScriptedOpenAIServer() as server:
        system = NaiveOrchestrator(params, make_client(server, concurrency=1))
        titles = _titles(system)
        server.push(
            _plan((0, "Summarise", ["R9"])),  # unknown key: the client re-asks once
            _plan((7, "Summarise", ["R1"])),  # unknown agent: still invalid, so a counted fallback
            Step(content="A0 [R1] [R4]."), Step(content="A1 [R2]."), Step(content="A2 [R3]."),
            Step(content=json.dumps({"done": True})), Step(content="Final [R1] [R2] [R3] [R4]."),
        )
        generation = system.generate(EXAMPLE)
        requests = list(server.requests)

    assert "unknown reference keys ['R9']" in _user(requests[1])  # the re-ask says what was wrong
    assert generation.fallbacks == {"decompose:OutputValidationError": 1}
    assert generation.notes["plan_fallback"] is True and generation.notes["subtasks"] == 3
    agent0 = _user(requests[2])  # round robin over 3 agents: R1 and R4
    assert titles["R1"] in agent0 and titles["R4"] in agent0 and titles["R2"] not in agent0
    assert generation.text == "Final [R1] [R2] [R3] [R4]." and len(generation.records) == 7


def test_failed_agent_call_is_counted_and_the_run_finishes(make_client):
    with ScriptedOpenAIServer() as server:
        system = NaiveOrchestrator(PARAMS, make_client(server, concurrency=1, max_retries=1))
        server.push(
            _plan((0, "Summarise graph works", ["R1"]), (1, "Summarise the rest", ["R2", "R3", "R4"])),
            Step(status=500), Step(status=500),  # agent 0: every attempt fails
            Step(content="AGENT1 the rest [R2] [R3] [R4]."),
            Step(content=json.dumps({"done": True})), Step(content="Section [R2]."),
        )
        generation = system.generate(EXAMPLE)
        requests = list(server.requests)

    assert generation.fallbacks == {"agent:RetryExhaustedError": 1}
    assert generation.notes["agent_replies"] == 1 and generation.notes["replies"] == [(1, 0, ["R2", "R3", "R4"])]
    assert generation.text == "Section [R2]."
    assert sum(r.error is not None for r in generation.records) == 1
    assert "AGENT1" in _user(requests[4]) and "agent 0," not in _user(requests[4])


def test_failed_final_write_uses_the_replies_and_no_replies_raises(make_client):
    params = load_params("quick", {**MECHANICS, "env": {"n_agents": 3}, "baselines": {"max_tokens": 300,
                                                                     "naive_orchestrator": {"max_steps": 0}}})
    with ScriptedOpenAIServer() as server:
        system = NaiveOrchestrator(params, make_client(server, concurrency=1, max_retries=0))
        server.push(_plan((0, "Summarise", ["R1"]), (1, "Summarise", ["R2"])),
                    Step(content="First [R1]."), Step(content="Second [R2]."), Step(status=500))
        generation = system.generate(EXAMPLE)
        assert generation.text == "First [R1].\n\nSecond [R2]."
        assert generation.fallbacks == {"write:RetryExhaustedError": 1} and generation.notes["stopped"] == "max_steps"

        fresh = NaiveOrchestrator(params, make_client(server, cache_mode="off", concurrency=1, max_retries=0))
        server.push(_plan((0, "Summarise all", ["R1", "R2", "R3", "R4"])), Step(status=500))
        with pytest.raises(LLMError, match="no agent answered"):
            fresh.generate(EXAMPLE)


# ------------------------------------------------------------------------------------------------ PRIMERA
class FakeTokenizer:
    """Whitespace tokens; ids 0 <s>, 2 </s>, 3 <unk>, 4 <doc-sep> as in PRIMERA's vocabulary layout."""

    bos_token_id, eos_token_id, unk_token_id = 0, 2, 3

    def __init__(self):
        self.vocab = {"<s>": 0, "</s>": 2, "<unk>": 3, DOC_SEP: 4}

    def convert_tokens_to_ids(self, token):
        return self.vocab.get(token, self.unk_token_id)

    def encode(self, text, add_special_tokens=True, truncation=False, max_length=None):
        ids = [self.vocab.setdefault(w, len(self.vocab) + 10) for w in text.split()]
        if add_special_tokens:
            ids = [self.bos_token_id] + ids[: max_length - 2 if truncation else None] + [self.eos_token_id]
        return ids


def test_primera_input_equal_shares_doc_sep_and_global_attention():
    tok = FakeTokenizer()
    docs = ["w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12", "short   doc\nhere", "x1 x2 x3 x4 x5 x6 x7 x8 x9 x10"]
    encoded = format_primera_input(docs, tok, max_input_tokens=24)
    assert encoded.share == 8  # 24 // 3, as PRIMERA's max_input_len // n_docs
    # What PRIMERA's preprocessing builds: <s> + each doc's encode(truncation, share)[1:-1] + <doc-sep> ... + </s>
    expected = [0]
    for doc in docs:
        expected += tok.encode(" ".join(doc.split()), truncation=True, max_length=8)[1:-1] + [4]
    assert encoded.input_ids == expected + [2] and len(encoded.input_ids) <= 24
    assert encoded.input_ids[1:7] == [tok.vocab[f"w{i}"] for i in range(1, 7)]
    assert encoded.truncated == [0, 2]
    seps = [i for i, t in enumerate(encoded.input_ids) if t == 4]
    assert len(seps) == 3 and encoded.global_attention == [0] + seps
    assert global_attention_positions([0, 9, 4, 9, 4, 2], 4) == [0, 2, 4]
    single = format_primera_input(["a b c d e f g h i j"], tok, max_input_tokens=8)
    assert len(single.input_ids) == 8 and single.global_attention == [0, 6]  # one document never overshoots
    with pytest.raises(ValueError, match="no room"):
        format_primera_input(["a"] * 10, tok, max_input_tokens=16)


def test_primera_without_weights_is_unavailable(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("CREW_PRIMERA_PATH", str(tmp_path))
    system = make_system("primera", load_params("quick", MECHANICS))  # lazy: building loads nothing
    assert isinstance(system, Primera) and system._loaded is None and system.model_name == str(tmp_path)
    with pytest.raises(SystemUnavailableError, match="weights not available") as info:
        system.generate(EXAMPLE)
    assert "CREW_PRIMERA_PATH=" in str(info.value) and "config.json" in str(info.value)


TINY_WORDS = ("graph", "message", "passing", "attention", "transformer", "benchmark", "molecular", "residual",
              "networks", "learning")


def _tiny_primera(folder):
    """A random 1-layer LED with a word-level tokenizer that has PRIMERA's <doc-sep>: the real loading code runs."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LEDConfig, LEDForConditionalGeneration, PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(["<s>", "<pad>", "</s>", "<unk>", DOC_SEP, *TINY_WORDS])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                            unk_token="<unk>", additional_special_tokens=[DOC_SEP]).save_pretrained(folder)
    config = LEDConfig(vocab_size=len(vocab), d_model=16, encoder_layers=1, decoder_layers=1,
                       encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
                       max_encoder_position_embeddings=128, max_decoder_position_embeddings=32, attention_window=[8],
                       pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)
    torch.manual_seed(0)
    model = LEDForConditionalGeneration(config)
    model.generation_config.suppress_tokens = [0, 1, 2, 3, 4]  # random weights: make it write words
    model.save_pretrained(folder)


def test_primera_loading_code_offline_and_with_local_weights(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # read once, at import
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("CREW_PRIMERA_PATH", raising=False)
    offline = Primera(load_params("quick", {"baselines": {"primera": {"model": "crew-tests/no-such-primera"}}}))
    with pytest.raises(SystemUnavailableError, match="weights not available: crew-tests/no-such-primera"):
        offline.generate(EXAMPLE)

    _tiny_primera(tmp_path / "tiny")
    monkeypatch.setenv("CREW_PRIMERA_PATH", str(tmp_path / "tiny"))  # overrides the params' model
    system = Primera(load_params("quick", {**MECHANICS, "baselines": {"primera": {
        "model": "allenai/PRIMERA", "max_input_tokens": 40, "max_output_tokens": 5, "num_beams": 2, "device": "cpu"}}}))
    generation = system.generate(EXAMPLE)
    assert generation.text and set(generation.text.split()) <= set(TINY_WORDS)
    assert generation.notes["documents"] == 4 and generation.notes["share_tokens"] == 10
    assert "not produced" in generation.notes["citations"] and generation.citation_check.markers == 0
    assert generation.records == [] and system._loaded is not None
    loaded = system._loaded
    system.generate(EXAMPLE)
    assert system._loaded is loaded  # cached on the instance
