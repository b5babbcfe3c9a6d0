"""The shape of the code (docs/architecture.md): imports point down, one action vocabulary, files a reader can hold.

Every ``import`` of a crewlib module is read from the source — those inside functions too, which Python
resolves late and which therefore hide a circle until the wrong call order meets it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx

from crewlib.actions import ACTION_NAMES, Action
from crewlib.config import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "crewlib"
MAX_MODULE_LINES = 600


def module_names() -> dict[str, Path]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
        names[".".join(parts[:-1]) if parts[-1] == "__init__" else ".".join(parts)] = path
    return names


def import_graph() -> nx.DiGraph:
    """module -> the crewlib module each of its imports names (a package's ``__init__`` for ``from pkg import x``
    unless ``x`` is a submodule)."""
    modules = module_names()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1]) + (f".{node.module}" if node.module else "")
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            for target in targets:
                resolved = resolve(target) if target.startswith("crewlib") else None
                if resolved and resolved != name:
                    graph.add_edge(name, resolved)
    return graph


def test_the_import_walk_sees_imports_inside_functions():
    graph = import_graph()
    assert graph.has_edge("crewlib.cli", "crewlib.write.command")  # imported inside main()
    assert graph.has_edge("crewlib.rl.train", "crewlib.rl.episodes")


def test_no_import_circle_among_crewlib_modules():
    cycles = sorted((" -> ".join([*c, c[0]]) for c in nx.simple_cycles(import_graph())), key=len)
    assert not cycles, f"{len(cycles)} import circle(s), the shortest: {cycles[:5]}"


def test_the_llm_client_knows_nothing_of_prompts_and_settings_have_no_second_home():
    """``llm/`` sends what it is given (prompts are reworded where they are made, crewlib.prompts.for_task), and no
    module reads a default of its own from the params files (``from_quick`` and ``default()`` are gone)."""
    graph = import_graph()
    llm = [m for m in graph if m == "crewlib.llm" or m.startswith("crewlib.llm.")]
    assert not [(m, t) for m in llm for t in graph.successors(m) if t.startswith("crewlib.prompts")]
    source = "\n".join(p.read_text() for p in PACKAGE.rglob("*.py"))
    assert not re.search(r"\bfrom_quick\b|\bimport default\b|(?<![\w.])default\(\"", source)


def test_no_module_over_600_lines():
    long = {str(p.relative_to(PROJECT_ROOT)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_module_file_names_are_distinct():
    names: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name != "__init__.py" and path.name != "__main__.py":
            names.setdefault(path.name, []).append(str(path.relative_to(PROJECT_ROOT)))
    repeated = {n: p for n, p in names.items() if len(p) > 1}
    assert not repeated, f"file names used twice: {repeated}"


def test_the_action_vocabulary_is_spelled_once():
    assert tuple(a.name.lower() for a in Action) == ACTION_NAMES and len(Action) == 4
    spelled = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "actions.py":
            continue
        text = path.read_text()
        if re.search(r"ACTION_NAMES\s*[:=]|N_ACTIONS\s*=|class Action\(|[\"']retrieve[\"'],\s*[\"']disseminate[\"']",
                     text):
            spelled.append(str(path.relative_to(PROJECT_ROOT)))
    assert not spelled, f"the action list is defined again in {spelled}; import it from crewlib.actions"


def test_no_function_over_60_lines():
    long = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno >= 60:
                long.append(f"{path.relative_to(PROJECT_ROOT)}:{node.name} ({node.end_lineno - node.lineno + 1})")
    assert not long, f"functions over 60 lines: {long}"


def test_the_citation_key_pattern_is_written_only_in_citations_py():
    """Every pattern over R-keys is built from crewlib.citations.KEY and KEY_GROUP (issue 50); the tests' own
    regexes, which read prompts, are theirs."""
    spelled = [str(p.relative_to(PROJECT_ROOT)) for folder in (PACKAGE, PROJECT_ROOT / "benchmarks")
               for p in folder.rglob("*.py")
               if p.name != "citations.py" and re.search(r"R\\d|R\[0-9\]", p.read_text())]
    assert not spelled, f"the citation key pattern is written again in {spelled}; build it from crewlib.citations"
