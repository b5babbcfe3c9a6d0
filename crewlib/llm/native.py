"""llama.cpp's server built from a pinned source for this machine's CPU (the native runtime).

The prebuilt ``xllamacpp`` wheel carries generic AVX2 kernels; a build with ``GGML_NATIVE=ON``
uses every instruction this CPU has (AVX-512, VNNI, AMX where present). The source is the copy of
llama.cpp vendored in the ``llama-cpp-python`` sdist on PyPI, pinned by version and sha256 like the
model parts. :func:`build_native` downloads it once, builds only ``llama-server`` (static, so the
binary stands alone) and installs it into the user cache with a stamp naming the source and the
CPU it was built for; :func:`native_server` returns that binary, or None when it is absent or was
built for another CPU or source. docs/method.md, "LLM and offline defaults", has the measurements.

Command line::

    python -m crewlib.llm.local build-native            # build once (minutes); a no-op when built
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from crewlib.llm.errors import ModelNotAvailableError
from crewlib.llm.settings import user_cache_dir


@dataclass(frozen=True)
class NativeSource:
    """A source archive holding llama.cpp at ``subdir``."""

    name: str
    url: str
    sha256: str
    subdir: str


SOURCE = NativeSource(
    "llama-cpp-python-0.3.36",
    "https://files.pythonhosted.org/packages/ec/e9/e7de2b0463ea3ffbf0ede6cb21b58c1258a8f6521aae45ca773a59fe7cf3/"
    "llama_cpp_python-0.3.36.tar.gz",
    "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e",
    "llama_cpp_python-0.3.36/vendor/llama.cpp",
)

CMAKE_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=ON", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_TOOLS=ON",
    "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_USE_PREBUILT_UI=OFF",
]


def _cpu_info() -> tuple[str, frozenset[str]]:
    """The CPU model name and its instruction-set flags (``/proc/cpuinfo``; elsewhere the platform's name)."""
    model, flags = "", frozenset()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and not model:
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = frozenset(value.split())
    except OSError:
        import platform
        model = platform.processor() or platform.machine()
    return model, flags


def cpu_signature() -> str:
    """The CPU model and instruction-set flags a native build depends on (a short hash)."""
    model, flags = _cpu_info()
    return hashlib.sha256(f"{model}|{' '.join(sorted(flags))}".encode()).hexdigest()[:12]


def runtime_args() -> list[str]:
    """``llama-server`` options this CPU needs: on a CPU with AMX, ``--no-repack`` — the native build's AMX
    matrix kernel (weights repacked for AMX tiles) crashed with a segmentation fault in
    ``ggml_backend_amx_mul_mat`` on the first graph computation on a 2-core Xeon VM with AMX; without repacking
    the same binary serves (0.5B: 163 prompt tokens/s)."""
    return ["--no-repack"] if "amx_tile" in _cpu_info()[1] else []


def native_dir() -> Path:
    """``$CREW_NATIVE_DIR``, else ``$XDG_CACHE_HOME/crewlib/llama.cpp`` (default ``~/.cache``)."""
    return user_cache_dir("llama.cpp", "CREW_NATIVE_DIR")


def _install_dir() -> Path:
    return native_dir() / f"{SOURCE.name}-{cpu_signature()}"


def native_server() -> Path | None:
    """The built ``llama-server`` for this source and CPU, or None."""
    folder = _install_dir()
    binary, stamp = folder / "llama-server", folder / "build.json"
    if not (binary.exists() and stamp.exists()):
        return None
    try:
        info = json.loads(stamp.read_text())
    except ValueError:
        return None
    ok = info.get("source_sha256") == SOURCE.sha256 and info.get("cpu") == cpu_signature()
    return binary if ok and os.access(binary, os.X_OK) else None


def build_info() -> dict | None:
    """The stamp of the installed build (source, CPU, build seconds), or None."""
    binary = native_server()
    return json.loads((binary.parent / "build.json").read_text()) if binary else None


def missing_tools() -> list[str]:
    return [tool for tool in ("cmake", "c++", "cc") if shutil.which(tool) is None]


def _fetch(dest: Path, log) -> None:
    local = os.environ.get("CREW_LLAMA_CPP_SOURCE")  # an already downloaded archive (offline machines)
    if not local:
        log(f"downloading {SOURCE.url.rsplit('/', 1)[-1]} (73 MiB) ...")
    digest = hashlib.sha256()
    with (open(local, "rb") if local else urllib.request.urlopen(SOURCE.url, timeout=120)) as src, \
            dest.open("wb") as out:  # noqa: S310
        while chunk := src.read(8 * 1024 * 1024):
            digest.update(chunk)
            out.write(chunk)
    digest = digest.hexdigest()
    if digest != SOURCE.sha256:
        raise ModelNotAvailableError(f"the llama.cpp source does not match its pinned sha256 ({digest[:16]}… vs "
                                     f"{SOURCE.sha256[:16]}…)")


def build_native(*, jobs: int | None = None, log=print) -> Path:
    """Build and install ``llama-server`` for this CPU unless it is installed; return its path.

    Raises :class:`ModelNotAvailableError` (with the reason and the build log's tail) when a tool
    is missing, the download fails or the build fails; nothing half-built is installed.
    """
    if (binary := native_server()) is not None:
        return binary
    if missing := missing_tools():
        raise ModelNotAvailableError(f"a native llama.cpp build needs {', '.join(missing)} (not found)")
    folder = _install_dir()
    folder.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".build-") as tmp:
        work = Path(tmp)
        archive = work / "source.tar.gz"
        try:
            _fetch(archive, log)
        except OSError as exc:
            raise ModelNotAvailableError(f"could not download the llama.cpp source: {exc}") from exc
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(SOURCE.subdir + "/")]
            tar.extractall(work, members=members, filter="data")
        source, build = work / SOURCE.subdir, work / "build"
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        log_path = folder.parent / f"build-{SOURCE.name}.log"
        steps = [["cmake", "-S", str(source), "-B", str(build), *generator, *CMAKE_FLAGS],
                 ["cmake", "--build", str(build), "--target", "llama-server", "-j", str(jobs or os.cpu_count() or 2)]]
        log(f"building llama-server for this CPU (a few minutes; log: {log_path}) ...")
        with log_path.open("w") as out:
            for step in steps:
                if subprocess.run(step, stdout=out, stderr=subprocess.STDOUT, check=False).returncode:
                    tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-12:])
                    raise ModelNotAvailableError(f"the native llama.cpp build failed ({' '.join(step[:2])}); "
                                                 f"last lines of {log_path}:\n{tail}")
        staged = work / "install"
        staged.mkdir()
        shutil.copy2(build / "bin" / "llama-server", staged / "llama-server")
        stamp = {"source": SOURCE.name, "source_sha256": SOURCE.sha256, "cpu": cpu_signature(),
                 "cmake_flags": CMAKE_FLAGS, "build_s": round(time.monotonic() - t0, 1)}
        (staged / "build.json").write_text(json.dumps(stamp, indent=1))
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(staged, folder)
    log(f"built {folder / 'llama-server'} in {stamp['build_s']:.0f} s")
    return folder / "llama-server"
