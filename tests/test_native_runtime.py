"""The native llama.cpp runtime: which server runs, and when a build is trusted (no compiler run here)."""

from __future__ import annotations

import json

import pytest

from crewlib.llm import local, native
from crewlib.llm.errors import ModelNotAvailableError


def _install_fake_build(folder, **stamp):
    """A stand-in for an installed build: an executable file and its stamp (not llama.cpp)."""
    target = folder / f"{native.SOURCE.name}-{native.cpu_signature()}"
    target.mkdir(parents=True)
    binary = target / "llama-server"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    info = {"source": native.SOURCE.name, "source_sha256": native.SOURCE.sha256, "cpu": native.cpu_signature(),
            "build_s": 1.0, **stamp}
    (target / "build.json").write_text(json.dumps(info))
    return binary


def test_a_build_is_used_only_for_its_source_and_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("CREW_NATIVE_DIR", str(tmp_path))
    assert native.native_server() is None
    binary = _install_fake_build(tmp_path)
    assert native.native_server() == binary
    (binary.parent / "build.json").write_text(json.dumps({"source_sha256": native.SOURCE.sha256, "cpu": "other"}))
    assert native.native_server() is None  # built for another CPU
    (binary.parent / "build.json").write_text("{not json")
    assert native.native_server() is None


def test_runtime_choice(tmp_path, monkeypatch):
    monkeypatch.setenv("CREW_NATIVE_DIR", str(tmp_path))
    monkeypatch.setattr(local, "_told_fallback", [])
    told = []
    assert local.resolve_runtime("prebuilt", told.append) is None
    with pytest.raises(ModelNotAvailableError, match="build-native"):
        local.resolve_runtime("native", told.append)
    assert local.resolve_runtime("auto", told.append) is None
    assert local.resolve_runtime("auto", told.append) is None
    assert len(told) == 1 and "prebuilt xllamacpp" in told[0]  # the fallback is said once
    with pytest.raises(ModelNotAvailableError, match="auto, native or prebuilt"):
        local.resolve_runtime("fast", told.append)
    binary = _install_fake_build(tmp_path)
    assert local.resolve_runtime("auto") == binary == local.resolve_runtime("native")
    assert local.resolve_runtime("prebuilt") is None


def test_native_command_serves_loopback_with_the_configured_slots():
    cmd = local.native_command("/x/llama-server", "/m.gguf", "qwen", 8123, n_ctx_per_slot=2048, n_parallel=4,
                               n_threads=2)
    pairs = dict(zip(cmd[1::2], cmd[2::2], strict=False))
    assert pairs["--host"] == "127.0.0.1" and pairs["--port"] == "8123"
    assert pairs["--ctx-size"] == "8192" and pairs["--parallel"] == "4" and pairs["--threads"] == "2"


def test_build_without_a_compiler_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("CREW_NATIVE_DIR", str(tmp_path))
    monkeypatch.setattr(native.shutil, "which", lambda tool: None)
    with pytest.raises(ModelNotAvailableError, match="needs cmake"):
        native.build_native(log=lambda m: None)
    local._build_native(optional=True)  # says so and returns: the wheel serves


def test_a_source_archive_with_the_wrong_checksum_is_refused(tmp_path, monkeypatch):
    bogus = tmp_path / "source.tar.gz"
    bogus.write_bytes(b"not the pinned archive")
    monkeypatch.setenv("CREW_LLAMA_CPP_SOURCE", str(bogus))
    with pytest.raises(ModelNotAvailableError, match="sha256"):
        native._fetch(tmp_path / "copy.tar.gz", log=lambda m: None)
