"""``crew write``'s command line: every argument checked before any work, one line for every failure.

The exit status tells the truth: 0 for a written section (its counted fallbacks printed), 1 for
a run that wrote none or an input that cannot be used (one line on stderr, no traceback), 130
for Ctrl-C (the answers received are cached; a rerun reuses them).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from crewlib import CrewError
from crewlib.write.reference_files import ReferenceList, read_text_file

_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_KEY_PREFIX = re.compile(r"^(?:(?:sk|gsk|hf|xai|pk|rk|ghp|gho|glpat|nvapi|csk|pplx|r8)[-_][A-Za-z0-9]{8}|AIza[\w-]{8})")
# the suffixes of a text file a paper's title, abstract or introduction is saved in ("Node.js" is a title)
_SUFFIX = re.compile(r"\.(?:txt|text|md|tex|rst)$", re.IGNORECASE)


class ArgumentError(CrewError, ValueError):
    """An argument that cannot be used; the message names it."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from crewlib.baselines import SYSTEMS

    paper = parser.add_argument_group("the paper (--tex, or --title and --abstract)")
    paper.add_argument("--tex", default=None,
                       help="the paper's main LaTeX file: title, abstract and introduction read from it (\\input "
                            "followed), and its \\bibliography when --bib is not given")
    paper.add_argument("--title", default=None, help="the paper's title (text or a file)")
    paper.add_argument("--abstract", default=None, help="the paper's abstract (text or a file)")
    paper.add_argument("--introduction", default=None,
                       help="optionally, its introduction (text or a file); with --tex it replaces the section "
                            "named Introduction, and a paper without one needs it")
    refs = parser.add_mutually_exclusive_group()
    refs.add_argument("--bib", help="a BibTeX file; each entry's abstract field is used")
    refs.add_argument("--references", help="a CSV, JSON or JSONL file of key, title, abstract, authors, year")
    parser.add_argument("--select", type=_positive("--select"), default=None, metavar="K",
                        help="the references file is a library: keep the K references most relevant to the paper "
                             "(BM25 and MiniLM, docs/method.md)")
    parser.add_argument("--system", default="crew", choices=sorted(SYSTEMS), help="who writes (default: crew)")
    parser.add_argument("--params", default="quick", help="params mode or YAML path (default: quick)")
    parser.add_argument("--rounds", type=_rounds, default=None,
                        help="rounds for crew and the other round-based systems: a number, or auto (crew's "
                             "default: enough to read every reference with an abstract)")
    parser.add_argument("--out", default="related_work", help="output folder (default: ./related_work)")
    parser.add_argument("--force", action="store_true", help="replace a previous run's files in --out")
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible endpoint (default: the embedded model)")
    parser.add_argument("--model", default=None, help="the model name at --base-url")
    parser.add_argument("--api-key-env", default=None,
                        help="the NAME of the variable holding the endpoint's key (never the key itself)")
    parser.add_argument("--context-tokens", type=_positive("--context-tokens"), default=None, metavar="N",
                        help="long_context at your endpoint: the model's context window in tokens")
    parser.add_argument("--max-calls", type=_positive("--max-calls"), default=None, metavar="N",
                        help="a budget of LLM calls: once spent, no call is made and the run ends with what was "
                             "answered (answers are cached: a rerun pays for none of them again)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def _positive(name: str):
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            number = 0
        if number < 1:
            raise argparse.ArgumentTypeError(f"{name} needs a whole number >= 1, not {value!r}")
        return number

    return parse


def _rounds(value: str) -> int | str:
    return value if value == "auto" else _positive("--rounds")(value)


def text_argument(value: str | None, name: str) -> str:
    """A ``--title``/``--abstract``/``--introduction`` value: the text of the file it names, or the text itself.
    A value that looks like a path (no spaces and a folder separator or a text file's suffix — ``.txt``, ``.md``,
    ``.tex`` —, or starting with ``/``, ``~`` or ``./``) must name an existing file: a mistyped path is an error,
    never the text; any other value is text (``--title Node.js``)."""
    if not value:
        return ""
    single = "\n" not in value and len(value) < 1024
    path = Path(value).expanduser()
    if single and path.is_file():
        return read_text_file(path, name)
    looks_like_path = single and (value.startswith(("/", "~", "./", "../")) or (
        not re.search(r"\s", value) and ("/" in value or "\\" in value or _SUFFIX.search(value))))
    if looks_like_path:
        raise ArgumentError(f"{name} {value!r} looks like a file, and no such file exists")
    return value


def looks_like_key(value: str) -> bool:
    """A value shaped like an API key rather than a variable's name: a known key prefix (``sk-``, ``gsk_``, ``hf_``
    ...), or long with lower-case letters and digits mixed (a variable is ``OPENAI_API_KEY``, ``MY_KEY_2``)."""
    return bool(_KEY_PREFIX.match(value)) or (len(value) >= 24 and bool(re.search(r"\d", value))
                                              and bool(re.search(r"[a-z]", value)))


def check_llm_arguments(args: argparse.Namespace) -> dict:
    """The ``llm`` overrides of ``--base-url``/``--model``/``--api-key-env``, checked: a model or key variable
    needs an endpoint; a key variable must be a variable's name (never echoed: it may be the key itself)."""
    endpoint = args.base_url or os.environ.get("CREW_LLM_BASE_URL")
    if args.base_url is not None and not args.base_url.strip():
        raise ArgumentError("--base-url is empty")
    for name, value in (("--model", args.model), ("--api-key-env", args.api_key_env)):
        if value is not None and not endpoint:
            raise ArgumentError(f"{name} needs --base-url (or CREW_LLM_BASE_URL): without an endpoint the embedded "
                                "model runs and would ignore it")
    if args.api_key_env and (not _VARIABLE.match(args.api_key_env) or looks_like_key(args.api_key_env)):
        raise ArgumentError("--api-key-env takes the NAME of the environment variable that holds the key (letters, "
                            "digits and _), not the key itself; the value given is not shown")
    return {k: v for k, v in (("provider", "openai" if args.base_url else None), ("base_url", args.base_url),
                              ("model", args.model), ("api_key_env", args.api_key_env)) if v is not None}


def load_inputs(args: argparse.Namespace):
    """The paper (title, abstract, introduction) and its references, from ``--tex`` and/or the text arguments.
    ``--introduction`` replaces the source's Introduction section (a paper without one needs it); ``--bib`` or
    ``--references`` replace every ``.bib`` file the source names, which are read together as one database."""
    from crewlib.write.latex_paper import read_latex_paper
    from crewlib.write.reference_files import read_bibtex_files, read_references

    title = text_argument(args.title, "--title")
    abstract = text_argument(args.abstract, "--abstract")
    introduction = text_argument(args.introduction, "--introduction")
    given = args.bib or args.references
    bibs: tuple[Path, ...] = ()
    if args.tex:
        paper = read_latex_paper(args.tex, need_bib=not given, need_introduction=not introduction)
        title, abstract = title or paper.title, abstract or paper.abstract
        introduction = introduction or paper.introduction
        bibs = paper.bibs
    if not title or not abstract:
        raise ArgumentError("give the paper: --tex main.tex, or --title and --abstract")
    if not given and not bibs:
        raise ArgumentError("give the references: --bib refs.bib or --references refs.csv (or --tex with a "
                            "\\bibliography)")
    return title, abstract, introduction, read_references(given) if given else read_bibtex_files(bibs)


def run_from_args(args: argparse.Namespace) -> int:
    session: dict = {}
    try:
        result, references, pool = _run(args, session)
    except KeyboardInterrupt:
        session.get("abandon", lambda: None)()
        client = session.get("client")
        answers = sum(r.error is None for r in client.ledger.records) if client else 0
        print(f"\ninterrupted; a rerun reuses the {answers} cached answers", file=sys.stderr)
        return 130
    except (CrewError, ValueError, OSError) as exc:  # every input and run failure the project names; a bad path
        session.get("abandon", lambda: None)()  # the folder this run created, left empty
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(result.markdown)
    print(references.report() + (f"; {len(pool.references)} selected (--select {args.select})" if args.select else ""))
    print(result.summary_line)
    if result.generation.notes.get("truncated"):
        print("warning: the material did not fit the context and was cut (generation.json, notes)", file=sys.stderr)
    if result.summary.get("cut_answers"):
        print(f"warning: {result.summary['cut_answers']} answers stopped at the token limit (llm.max_tokens) and may "
              "end early; raise it in a --params file (summary.json: cut_answers)", file=sys.stderr)
    print(f"written: {result.out}/" + ", ".join(result.written))
    return 0


def _run(args: argparse.Namespace, session: dict):
    """Check every argument, read the inputs, write; the result, the references read and the pool written from."""
    from crewlib.config import load_params
    from crewlib.write.out_folder import prepare_out
    from crewlib.write.writer import check_rounds, write_related_work

    llm = check_llm_arguments(args)
    overrides: dict = {"llm": llm} if llm else {}
    if args.context_tokens is not None:
        if args.system != "long_context":
            raise ArgumentError("--context-tokens is for --system long_context")
        overrides["baselines"] = {"long_context": {"context_tokens": args.context_tokens}}
    params = load_params(args.params, overrides or None)
    if args.system == "long_context" and params.llm.provider != "embedded" and \
            not params.baselines.long_context.context_tokens:
        raise ArgumentError(f"long_context at {params.llm.model} needs the model's context window: give "
                            "--context-tokens N (e.g. 128000)")
    check_rounds(params, args.system, args.rounds)
    title, abstract, introduction, references = load_inputs(args)
    folder = prepare_out(args.out, force=args.force)  # before any work: held until the run ends
    session["abandon"] = folder.abandon
    for line in references.warnings():
        print(f"warning: {line}", file=sys.stderr)
    pool, extra = references, {}
    if args.select is not None:
        pool, extra = _select(title, abstract, introduction, references, args.select, progress=not args.quiet)
    _warn_long(abstract, introduction)
    if len(pool.references) > 200 and not args.quiet:
        print(f"note: {len(pool.references):,} references: embedding them all for the features takes about "
              f"{len(pool.references) // 10:,} s on a CPU; is this a library? --select K keeps the K most relevant",
              file=sys.stderr)
    result = write_related_work(title, abstract, pool, params=params, system=args.system, rounds=args.rounds,
                                introduction=introduction, out=folder, progress=not args.quiet,
                                session=session, extra_summary=extra, max_calls=args.max_calls)
    folder.finish()
    return result, references, pool


def _select(title: str, abstract: str, introduction: str, references, k: int, *, progress: bool):
    from crewlib.write.library import select_references

    chosen = select_references(f"{title}. {abstract} {introduction}", references.references, k, progress=progress)
    extra = {"selected_from": len(references.references),
             "selected": [{"key": s.reference.id, "score": s.score, "bm25": s.bm25, "embedding": s.embedding}
                          for s in chosen]}
    keys = {s.reference.id for s in chosen}
    pool = ReferenceList([s.reference for s in chosen], references.source,
                         [k for k in references.title_only if k in keys],
                         {k: y for k, y in references.years_as_written.items() if k in keys})
    return pool, extra


def _warn_long(abstract: str, introduction: str, *, abstract_words: int = 1000) -> None:
    """A warning for an abstract far longer than an abstract (a whole paper pasted?), in the words of what then
    happens: a system that cannot fit it with the references cuts it (recorded in ``generation.json``) or, left no
    room for any reference, refuses the paper (long context's error); the introduction's first 300 words are read."""
    words = len(abstract.split())
    if words > abstract_words:
        print(f"warning: the abstract holds {words:,} words (an abstract is usually under 300); a system whose "
              "context cannot hold it with the references cuts it (generation.json, notes) or, with no room left "
              "for any reference, refuses the paper (raise its context_tokens)", file=sys.stderr)
    if len(introduction.split()) > 300:
        print(f"warning: the introduction holds {len(introduction.split()):,} words; the systems read its first 300",
              file=sys.stderr)
