"""SRW writes about the works it read (issue 45): the reader's memory keeps every work, the reader notes the work
read (not the target paper), the write puts the works' notes next to its instruction; with the recorded prompt
edition SRW sends exactly the requests the notebooks' answers were recorded with."""

import json
import re
from dataclasses import dataclass, field

from crewlib import prompts
from crewlib.baselines import make_system
from crewlib.baselines.srw import MemoryNote, WorkingMemory, merge_notes, reading_order
from crewlib.config import load_params
from crewlib.data.records import Reference, RWGExample
from crewlib.llm.ledger import Ledger
from crewlib.tasks import task_for

TARGET_ABSTRACT = "We combine message passing graph neural networks with attention for molecules."


@dataclass
class _Answer:
    content: str = ""
    parsed: object = None


@dataclass
class FakeClientForTest:
    """A test double of the LLM client: records every request, answers each read with a memory that holds the
    note on the work just read only (what the 1.5B did), and the write with a fixed text."""

    calls: list = field(default_factory=list)
    ledger: Ledger = field(default_factory=Ledger)

    def chat_json(self, messages, schema, **kwargs):
        self.calls.append(("chat_json", [dict(m) for m in messages], schema, kwargs))
        key = re.search(r"Now read (?:reference|the cited work) \[(R\d+)\]", messages[-1]["content"]).group(1)
        return _Answer(parsed=schema(notes=[MemoryNote(key=key, note=f"Work {key} proposes method {key}.")]))

    def chat(self, messages, **kwargs):
        self.calls.append(("chat", [dict(m) for m in messages], None, kwargs))
        return _Answer(content="Method R1 is proposed [R1].")


def _example() -> RWGExample:
    refs = [Reference(f"p{i}", f"Paper {i} on graph attention", f"We study graph attention {i}. It works well.",
                      citations=(f"p{i + 1}",) if i < 3 else ()) for i in range(4)]
    refs.append(Reference("p4", "A title-only paper on molecules", ""))
    return RWGExample("t1", "Graph transformers for molecules", TARGET_ABSTRACT, tuple(refs))


def _run(edition: str):
    params = load_params("quick", {"output": {"repairs": []}, "llm": {"prompt_edition": edition},
                                   "baselines": {"srw": {"rounds": 5}}})
    client = FakeClientForTest()
    system = make_system("srw", params, client)
    example = _example()
    task = task_for(params, example)
    generation = system.generate(example, task)
    return params, task, client, generation


def test_recorded_edition_sends_the_recorded_requests_byte_for_byte():
    params, task, client, generation = _run(prompts.RECORDED_EDITION)
    order = reading_order(task, 5)
    expected, memory = [], WorkingMemory(notes=[])
    for key in order:  # the reader's answer replaces the memory, as when the answers were recorded
        ref = task.reference_by_key[key]
        prompt = prompts.SRW_READ.format(title=task.title, abstract=task.abstract, key=key, ref_title=ref.title,
                                         ref_abstract=ref.abstract[:1200],
                                         memory=json.dumps(memory.model_dump(), ensure_ascii=False))
        expected.append(("chat_json", [{"role": "system", "content": prompts.WRITER_SYSTEM},
                                       {"role": "user", "content": prompt}], WorkingMemory,
                         {"max_tokens": int(params.baselines.srw.read_max_tokens),
                          "prompt_version": prompts.PROMPT_VERSION}))
        memory = WorkingMemory(notes=[MemoryNote(key=key, note=f"Work {key} proposes method {key}.")])
    titles = dict(zip(task.keys, (r.title for r in task.references), strict=True))
    read_list = "\n".join(f"[{k}] {titles[k]}" for k in order)
    notes = "\n".join(f"- [{n.key}] {n.note}" for n in memory.notes)
    prompt = prompts.WRITE_SECTION.format(title=task.title, abstract=task.abstract,
                                          material=f"References read:\n{read_list}\n\nWorking memory:\n{notes}",
                                          words=task.target_words,
                                          rules=prompts.SECTION_RULES[prompts.RECORDED_EDITION])
    expected.append(("chat", [{"role": "system", "content": prompts.WRITER_SYSTEM},
                              {"role": "user", "content": prompt}], None,
                     {"max_tokens": int(params.baselines.max_tokens), "prompt_version": prompts.RECORDED_EDITION}))
    sent = [(kind, messages, schema, {k: v for k, v in kwargs.items() if k != "caller"})
            for kind, messages, schema, kwargs in client.calls]
    assert sent == expected
    assert [kwargs["caller"].role for *_, kwargs in client.calls] == ["reader"] * 5 + ["writer"]
    assert generation.notes["memory_notes"] == 1 and not generation.fallbacks


def test_current_edition_keeps_every_work_read_in_the_memory():
    _, task, client, generation = _run(prompts.CURRENT_EDITION)
    order = reading_order(task, 5)
    by_title = [task.id_to_key["p4"]]
    read = [k for k in order if k not in by_title]
    assert generation.notes["title_only_not_read"] == by_title and not generation.fallbacks
    assert generation.notes["memory_notes"] == len(read) == 4
    assert len(client.calls) == len(read) + 1  # a title-only work is not sent to the reader; one write
    assert all(kwargs["prompt_version"] == prompts.CURRENT_EDITION for *_, kwargs in client.calls)
    last_read = client.calls[len(read) - 1][1][-1]["content"]
    for key in read[:-1]:  # the earlier works' notes are still in the memory the last reader sees
        assert f"Work {key} proposes method {key}." in last_read


def test_current_reader_notes_the_work_read_not_the_target():
    _, task, client, _ = _run(prompts.CURRENT_EDITION)
    read = [k for k in reading_order(task, 5) if k != task.id_to_key["p4"]]
    for (kind, messages, schema, kwargs), key in zip(client.calls[:-1], read, strict=True):
        assert kind == "chat_json" and schema is WorkingMemory and kwargs["caller"].role == "reader"
        prompt = messages[-1]["content"]
        ref = task.reference_by_key[key]
        assert TARGET_ABSTRACT not in prompt and task.title in prompt  # the paper by its title only
        assert f"notes on what [{key}] itself does" in prompt and "never from another work's notes" in prompt
        work = prompt.index(f"Now read the cited work [{key}] {ref.title}")
        assert prompt.index("Working memory") < work < prompt.index("Answer with")  # the work next to the instruction
        assert ref.abstract in prompt[work:prompt.index("Answer with")]


def test_current_write_puts_every_work_with_its_notes_next_to_the_instruction():
    _, task, client, generation = _run(prompts.CURRENT_EDITION)
    kind, messages, _, kwargs = client.calls[-1]
    assert kind == "chat" and kwargs["caller"].role == "writer"
    prompt = messages[-1]["content"]
    paper, instruction = prompt.index(TARGET_ABSTRACT), prompt.index("Write the related-work section about")
    by_title = task.id_to_key["p4"]
    for key in reading_order(task, 5):
        ref = task.reference_by_key[key]
        work = prompt.index(f'- [{key}] "{ref.title}"')
        assert paper < work < instruction  # the paper first, each work with its notes right before the instruction
        if key != by_title:  # one line a work: its title, then its notes as sentences cited with its key
            line = prompt[work:prompt.index("\n", work)]
            assert line.endswith(f'"{ref.title}": Work {key} proposes method {key} [{key}].')
    title_only = prompt.index(f'[{by_title}] "A title-only paper')
    assert "known by its title only" in prompt[title_only:prompt.index("\n", title_only)]
    assert prompts.SECTION_RULES[prompts.CURRENT_EDITION] in prompt
    assert generation.text == "Method R1 is proposed [R1]."


def test_merge_keeps_unrepeated_notes_replaces_revised_ones_and_ignores_unread_keys():
    memory = WorkingMemory(notes=[MemoryNote(key="R1", note="one"), MemoryNote(key="R1", note="one more"),
                                  MemoryNote(key="R2", note="two")])
    answer = WorkingMemory(notes=[MemoryNote(key="R3", note="three"), MemoryNote(key="[R1]", note="one, shorter"),
                                 MemoryNote(key="R9", note="a work not read"), MemoryNote(key="R3", note=" ")])
    merged = merge_notes(memory, answer, "R3")
    assert [(n.key, n.note) for n in merged.notes] == [("R1", "one, shorter"), ("R2", "two"), ("R3", "three")]
    assert merge_notes(memory, WorkingMemory(notes=[]), "R3") == memory  # an answer without notes loses nothing


def test_a_reader_that_notes_nothing_on_the_work_is_a_counted_fallback():
    class SilentReaderForTest(FakeClientForTest):
        def chat_json(self, messages, schema, **kwargs):
            self.calls.append(("chat_json", messages, schema, kwargs))
            return _Answer(parsed=schema(notes=[]))

    params = load_params("quick", {"output": {"repairs": []}, "llm": {"prompt_edition": prompts.CURRENT_EDITION},
                                   "baselines": {"srw": {"rounds": 5}}})
    generation = make_system("srw", params, SilentReaderForTest()).generate(_example())
    # 4 works read (the fifth is title-only): each gets its first abstract sentence as its note, counted
    assert generation.fallbacks["reader: no note on the work read"] == 4 and generation.notes["memory_notes"] == 4


def test_sentences_wrapped_in_the_shape_brackets_are_unwrapped():
    class ShapeCopyingWriterForTest(FakeClientForTest):
        def chat(self, messages, **kwargs):
            self.calls.append(("chat", messages, None, kwargs))
            return _Answer(content="<Graph attention is a theme.> Method R1 is proposed [R1]. "
                                   "<[R2] proposes method R2.>")

    params = load_params("quick", {"output": {"repairs": []}, "llm": {"prompt_edition": prompts.CURRENT_EDITION},
                                   "baselines": {"srw": {"rounds": 2}}})
    generation = make_system("srw", params, ShapeCopyingWriterForTest()).generate(_example())
    assert generation.text == "Graph attention is a theme. Method R1 is proposed [R1]. [R2] proposes method R2."
    assert generation.notes["shape_brackets_removed"] == 2
