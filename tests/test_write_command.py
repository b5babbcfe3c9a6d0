"""``crew write`` as a user runs it: the exit status tells the truth, arguments are checked before any work, files
are read as people save them, a LaTeX paper goes in, a library becomes the pool, Ctrl-C is one line.

Endpoint cases run against the scripted server of ``tests/fakes.py`` (a test double) or a closed port; the
others use the LLM-free ``extractive`` system.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
from pathlib import Path

import pytest
from fakes import Step

from crewlib.cli import main
from crewlib.config import PROJECT_ROOT, ParamsError, load_params
from crewlib.eval.relating import MEASURES
from crewlib.write import (
    LatexPaperError,
    ReferenceFileError,
    read_latex_paper,
    read_references,
    select_references,
)
from crewlib.write.writer import WriteResult

EXAMPLE = PROJECT_ROOT / "examples"
ARGS = ["write", "--title", str(EXAMPLE / "crew_paper_title.txt"), "--abstract",
        str(EXAMPLE / "crew_paper_abstract.txt"), "--bib", str(EXAMPLE / "crew_paper.bib"), "--quiet"]


def crew(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith(("warning:", "plan:"))]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def fast_params(tmp_path: Path) -> str:
    path = tmp_path / "fast.yaml"
    path.write_text(f"base: quick\nllm: {{max_retries: 0, timeout_s: 3, cache_dir: {tmp_path / 'cache'}}}\n")
    return str(path)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ----------------------------------------------------------------------------- the exit status tells the truth
@pytest.mark.parametrize("system", ["crew", "long_context"])
def test_a_dead_endpoint_exits_1_with_one_line_and_writes_nothing(tmp_path, capsys, system):
    out = tmp_path / "out"
    code, stdout, err = crew(capsys, *ARGS, "--system", system, "--params", fast_params(tmp_path), "--rounds" if
                             system == "crew" else "--context-tokens", "3" if system == "crew" else "8000",
                             "--base-url", f"http://127.0.0.1:{closed_port()}/v1", "--model", "m",
                             "--api-key-env", "", "--out", str(out))
    line = one_line_error(err)
    assert code == 1 and stdout == "" and not out.exists(), line
    if system == "crew":
        assert re.search(r"all \d+ LLM calls failed .*\(first: \w+", line) and "nothing written" in line


def test_answers_that_are_never_json_exit_1_saying_the_section_is_empty(tmp_path, capsys, scripted_server):
    scripted_server.default = Step(content="I am not JSON at all.")
    code, _, err = crew(capsys, *ARGS, "--params", fast_params(tmp_path), "--rounds", "3", "--base-url",
                        scripted_server.base_url, "--model", "m", "--api-key-env", "", "--out", str(tmp_path / "out"))
    line = one_line_error(err)
    assert code == 1 and "wrote an empty section" in line and "counted fallbacks" in line
    assert not (tmp_path / "out").exists()
    # before the first call, what the run will spend (issue 47): crew at the endpoint's model, calls and tokens
    assert re.search(r"^plan: crew at m, about \d+ LLM calls and [\d,]+ tokens", err, re.M), err


def test_the_summary_line_counts_fallbacks_and_names_unverifiable_citations():
    summary = {"system": "crew", "calls": 9, "prompt_tokens": 10, "completion_tokens": 5, "wall_time_s": 1.0,
               "citation_verification": 0.9, "markers_resolved": 9, "citations": 10, "unverifiable_citations": 1,
               "cited": 5, "references": 8, "words": 300, "fallbacks": {"nothing new to compose from": 2}}
    line = WriteResult(None, None, summary, Path("."), "", "").summary_line
    assert "90% (9/10; unverifiable citations: 1)" in line and "2 counted fallbacks" in line


# ----------------------------------------------------------------------------- arguments checked before any work
@pytest.mark.parametrize("option", ["--abstract", "--introduction", "--title"])
def test_a_mistyped_path_is_an_error_not_the_text(tmp_path, capsys, option):
    args = [*ARGS, "--system", "extractive", "--out", str(tmp_path / "o")]
    args += [option, str(tmp_path / "my_abstract.txt")]  # the later value wins
    code, _, err = crew(capsys, *args)
    assert code == 1 and "looks like a file, and no such file exists" in one_line_error(err)
    assert not (tmp_path / "o").exists()


def test_text_with_a_slash_or_a_dot_is_still_text(tmp_path, capsys):
    code, stdout, err = crew(capsys, *ARGS, "--title", "A/B testing for graph networks v2.0", "--system",
                             "extractive", "--out", str(tmp_path / "o"))
    assert code == 0, err
    assert "A/B testing for graph networks v2.0" in stdout


@pytest.mark.parametrize(("extra", "message"), [
    (["--system", "extractive", "--rounds", "3"], "fewer than 4 rounds"),
    (["--rounds", "2"], "crew writes nothing in fewer than 3 rounds"),
    (["--model", "gpt-4o"], "--model needs --base-url"),
    (["--api-key-env", "OPENAI_API_KEY"], "--api-key-env needs --base-url"),
    (["--out", ""], "(out, --out) is empty"),
    (["--system", "srw", "--context-tokens", "9000"], "--context-tokens is for --system long_context"),
    (["--system", "long_context", "--base-url", "http://127.0.0.1:9/v1", "--model", "big"],
     "give --context-tokens N"),
])
def test_bad_arguments_are_refused_before_any_work(tmp_path, capsys, monkeypatch, extra, message):
    monkeypatch.delenv("CREW_LLM_BASE_URL", raising=False)
    code, _, err = crew(capsys, *ARGS, "--out", str(tmp_path / "o"), *extra)
    assert code == 1 and message in one_line_error(err)
    assert not (tmp_path / "o").exists()


def test_a_key_given_as_the_variable_name_is_refused_without_echoing_it(tmp_path, capsys):
    secret = "-".join(("sk", "not", "a", "real", "key", "0123"))  # shaped like a key, not one
    code, out, err = crew(capsys, *ARGS, "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--api-key-env",
                          secret, "--out", str(tmp_path / "o"))
    assert code == 1 and "NAME of the environment variable" in one_line_error(err)
    assert secret not in err + out


@pytest.mark.parametrize("value", ["0", "-1", "x"])
def test_rounds_that_are_not_a_positive_number_are_an_argument_error(capsys, value):
    with pytest.raises(SystemExit) as exited:
        main([*ARGS, "--rounds", value])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "--rounds needs a whole number >= 1" in err
    assert len(err.strip().splitlines()) == 1 and "usage:" not in err  # one line, not the usage block


def test_the_output_folder_is_checked_first_and_a_previous_run_is_never_mixed_in(tmp_path, capsys):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for out, message in ((a_file, "is a file"), (a_file / "sub", "is not writable")):
        code, _, err = crew(capsys, *ARGS, "--system", "extractive", "--out", str(out))
        assert code == 1 and message in one_line_error(err)
    out = tmp_path / "out"
    assert crew(capsys, *ARGS, "--system", "extractive", "--out", str(out))[0] == 0
    (out / "ledger.csv").write_text("a previous run's ledger")
    (out / "notes.txt").write_text("the user's own file")
    code, _, err = crew(capsys, *ARGS, "--system", "extractive", "--out", str(out))
    assert code == 1 and "--force" in one_line_error(err)
    code, stdout, _ = crew(capsys, *ARGS, "--system", "extractive", "--out", str(out), "--force")
    assert code == 0 and not (out / "ledger.csv").exists() and (out / "notes.txt").exists()
    assert "ledger.csv" not in stdout.splitlines()[-1] and "trace.json" in stdout.splitlines()[-1]


def test_ctrl_c_is_one_line_and_exit_130(capsys, monkeypatch, tmp_path):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("crewlib.write.writer.write_related_work", interrupted)
    code, _, err = crew(capsys, *ARGS, "--system", "extractive", "--out", str(tmp_path / "o"))
    assert code == 130 and err.strip().splitlines()[-1] == "interrupted; a rerun reuses the 0 cached answers"
    assert "Traceback" not in err and not (tmp_path / "o").exists()


def test_a_params_file_without_base_names_the_typo_first(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("llm: {modle: gpt-4o}\n")
    with pytest.raises(ParamsError) as error:
        load_params(path)
    message = str(error.value)
    assert message.index("llm.modle: unknown setting") < message.index("settings missing")
    assert "`base: quick`" in message and len(message) < 600


# ----------------------------------------------------------------------------- files as people save them
def test_files_with_a_byte_order_mark_are_read(tmp_path):
    rows = [{"key": "a1", "title": "Graph Networks", "abstract": "GNNs learn."}]
    (tmp_path / "r.csv").write_text("\ufeffkey,title,abstract\na1,Graph Networks,GNNs learn.\n", encoding="utf-8")
    (tmp_path / "r.json").write_text("\ufeff" + json.dumps(rows), encoding="utf-8")
    (tmp_path / "r.bib").write_text("\ufeff@misc{a1, title={Graph Networks}, abstract={GNNs learn.}}\n")
    for name in ("r.csv", "r.json", "r.bib"):
        refs = read_references(tmp_path / name)
        assert [(r.id, r.title, r.abstract) for r in refs.references] == [("a1", "Graph Networks", "GNNs learn.")]


def test_a_text_file_that_is_not_utf8_is_named(tmp_path, capsys):
    title = tmp_path / "title.txt"
    title.write_bytes("Müller's graphs".encode("latin-1"))
    code, _, err = crew(capsys, *ARGS, "--title", str(title), "--system", "extractive", "--out", str(tmp_path / "o"))
    assert code == 1 and f"--title {title} is not UTF-8" in one_line_error(err)


def test_bibtex_a_missing_comma_is_an_error_math_is_kept_and_a_word_year_is_kept_and_warned(tmp_path):
    bad = tmp_path / "bad.bib"
    bad.write_text("@article{doe2020, title = {Missing Comma Between Fields} author = {Doe, John}, year = 2020}\n")
    with pytest.raises(ReferenceFileError, match=r"entry 'doe2020': its field 'title' holds 'author'"):
        read_references(bad)
    good = tmp_path / "good.bib"
    good.write_text("@article{lee, title={Fast $\\mathcal{O}(\\sqrt{n})$ Search}, author={Lee, Bo}, "
                    "year={forthcoming}, abstract={We set the title = best and search in $O(\\log n)$ time.}}\n")
    refs = read_references(good)
    assert refs.references[0].title == "Fast $\\mathcal{O}(\\sqrt{n})$ Search"
    assert "$O(\\log n)$" in refs.references[0].abstract
    assert refs.years_as_written == {"lee": "forthcoming"} and "'forthcoming', not a number" in refs.warnings()[0]


def test_a_word_year_appears_as_written_in_the_markdown(tmp_path, capsys):
    bib = tmp_path / "r.bib"
    bib.write_text((EXAMPLE / "crew_paper.bib").read_text().replace("year = {2010}", "year = {forthcoming}", 1))
    code, stdout, err = crew(capsys, *ARGS[:-3], "--bib", str(bib), "--quiet", "--system", "extractive",
                             "--out", str(tmp_path / "o"))
    assert code == 0 and "has the year 'forthcoming'" in err
    markdown = (tmp_path / "o" / "related_work.md").read_text()
    assert "[hoang2010towards] Hoang and Kan (forthcoming)." in markdown  # the extractive section cites it


# ----------------------------------------------------------------------------- a LaTeX paper in
def test_the_example_latex_paper_is_read_with_its_input_and_bibliography():
    paper = read_latex_paper(EXAMPLE / "tex_paper" / "main.tex")
    assert paper.title.startswith("CREW: Cooperative Related-work Writing")
    assert paper.abstract.startswith("Writing the related-work section") and "$\\mathcal{O}(n)$" in paper.abstract
    assert "a comment" not in paper.abstract and "\\emph" not in paper.abstract
    assert paper.introduction.startswith("Related-work generation asks") and "\\cite" not in paper.introduction
    assert "earlier work." in paper.introduction and "(Section" not in paper.introduction
    assert paper.bib == (EXAMPLE / "crew_paper.bib").resolve()


def test_a_latex_paper_without_its_pieces_names_each_one(tmp_path):
    (tmp_path / "main.tex").write_text("\\documentclass{article}\\begin{document}\\input{missing}\\end{document}")
    with pytest.raises(LatexPaperError, match=r"\\input\{missing\} names .*missing.tex, which does not exist"):
        read_latex_paper(tmp_path / "main.tex")
    (tmp_path / "main.tex").write_text("\\documentclass{article}\\begin{document}Hello\\end{document}")
    with pytest.raises(LatexPaperError) as error:
        read_latex_paper(tmp_path / "main.tex")
    for piece in ("\\title", "an abstract", "Introduction", "a references file"):
        assert piece in str(error.value)


def test_crew_write_tex_writes_a_section_citing_only_keys_of_its_bib(tmp_path, capsys):
    out = tmp_path / "out"
    code, stdout, err = crew(capsys, "write", "--tex", str(EXAMPLE / "tex_paper" / "main.tex"), "--system",
                             "extractive", "--quiet", "--out", str(out))
    assert code == 0, err
    bib_keys = set(re.findall(r"@\w+\{([^,\s]+),", (EXAMPLE / "crew_paper.bib").read_text()))
    latex = (out / "related_work.tex").read_text()
    cited = {k for group in re.findall(r"\\cite\{([^}]*)\}", latex) for k in group.split(",")}
    assert cited and cited <= bib_keys
    summary = json.loads((out / "summary.json").read_text())
    assert summary["title"].startswith("CREW: Cooperative")
    # the section's relating measures, computed on the section written (an extractive list positions nothing)
    assert set(summary["relating"]) == set(MEASURES) and summary["relating"]["positioning"] == 0.0


# ----------------------------------------------------------------------------- the whole library as the pool
def test_select_keeps_the_references_closest_to_the_paper_and_reports_their_scores(tmp_path, capsys):
    rows = ["key,title,abstract"]
    rows += [f"graph{i},Graph neural networks for citation recommendation {i},"
             f"We recommend citations for a paper with graph neural networks over the citation graph."
             for i in range(3)]
    rows += [f"bio{i},Protein folding study {i},We fold proteins with molecular dynamics and measure energy."
             for i in range(12)]
    library = tmp_path / "library.csv"
    library.write_text("\n".join(rows) + "\n")
    refs = read_references(library)
    chosen = select_references("Citation recommendation with graph neural networks", refs.references, 3)
    assert {s.reference.id for s in chosen} == {"graph0", "graph1", "graph2"}
    assert all(0 <= s.score <= 1 for s in chosen) and chosen[0].score >= chosen[-1].score
    code, stdout, err = crew(capsys, "write", "--title", "Citation recommendation with graph neural networks",
                             "--abstract", "We recommend citations with graph neural networks.", "--references",
                             str(library), "--select", "3", "--system", "extractive", "--quiet",
                             "--out", str(tmp_path / "o"))
    assert code == 0, err
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["selected_from"] == 15 and summary["references"] == 3
    assert {s["key"] for s in summary["selected"]} == {"graph0", "graph1", "graph2"}
    assert "3 selected (--select 3)" in stdout


def _as_in_a_terminal() -> None:
    """Ctrl-C reaches the child as it reaches a command typed in a terminal: a test runner started in the
    background may hand its children SIGINT ignored or blocked (the suite's clean-clone run once did: the calls
    timed out, status 1)."""
    import signal

    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_a_real_ctrl_c_mid_run_prints_one_line_and_exits_130(tmp_path, scripted_server):
    import os
    import signal
    import sys
    import time

    scripted_server.default = Step(content="{}", delay_s=60)  # every call hangs: Ctrl-C arrives mid-round
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "HF_HUB_OFFLINE": "1"}
    # the call must still be waiting when Ctrl-C comes (a call that times out first ends the run with status 1): the
    # run then waits for its calls in flight, up to their timeout, before it exits
    params = tmp_path / "slow.yaml"
    params.write_text(f"base: quick\nllm: {{max_retries: 0, timeout_s: 15, cache_dir: {tmp_path / 'cache'}}}\n")
    process = subprocess.Popen([sys.executable, "-m", "crewlib.cli", *ARGS, "--params", str(params),
                                "--base-url", scripted_server.base_url, "--model", "m", "--api-key-env", "",
                                "--rounds", "3", "--out", str(tmp_path / "o")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                               preexec_fn=_as_in_a_terminal)
    deadline = time.monotonic() + 120
    while not scripted_server.requests and time.monotonic() < deadline:  # wait for the first LLM call
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err[-2000:]
    assert err.strip().splitlines()[-1] == "interrupted; a rerun reuses the 0 cached answers"
    assert "Traceback" not in err and not (tmp_path / "o").exists()


def test_an_abstract_that_is_a_whole_paper_is_warned_about(tmp_path, capsys):
    abstract = tmp_path / "abstract.txt"
    abstract.write_text("Agents write related work sections together. " * 200)  # 1,200 words
    code, _, err = crew(capsys, *ARGS, "--abstract", str(abstract), "--system", "extractive",
                        "--out", str(tmp_path / "o"))
    assert code == 0 and "the abstract holds 1,200 words" in err
