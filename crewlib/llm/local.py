"""The embedded LLM: Qwen2.5-Coder Instruct GGUF models served by llama.cpp on 127.0.0.1.

The model files (the registry, their parts joined and verified) are :mod:`crewlib.llm.models`'s;
:class:`LocalServer` runs ``xllamacpp``'s OpenAI-compatible server in a child process
bound to 127.0.0.1 on a free port, waits until ``/v1/models`` answers, and stops it on exit.
The server is llama.cpp's: the ``llama-server`` built for this CPU (:mod:`crewlib.llm.native`)
when it is built and ``llm.embedded.runtime`` is ``auto`` or ``native``, else the prebuilt
``xllamacpp`` wheel's.

Command line::

    python -m crewlib.llm.local prepare --model qwen2.5-coder-0.5b --install --prune
    python -m crewlib.llm.local serve --model qwen2.5-coder-1.5b --port 8080
    python -m crewlib.llm.local build-native      # the native runtime, once (a no-op when built)
"""

from __future__ import annotations

import argparse
import atexit
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from crewlib.llm.errors import ModelNotAvailableError, ServerStartError
from crewlib.llm.models import MODELS, XLLAMACPP_PIN, GGUFModel, get_model, model_dir, prepare_model
from crewlib.llm.native import build_native, native_server, runtime_args
from crewlib.llm.settings import llm_config
from crewlib.schema import EmbeddedBlock

__all__ = ["MODELS", "GGUFModel", "LocalServer", "free_port", "get_model", "main", "model_dir", "native_command",
           "prepare_model", "resolve_runtime"]

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _require_runtime() -> None:
    try:
        import xllamacpp  # noqa: F401
    except ImportError as exc:
        raise ModelNotAvailableError(
            f"the embedded LLM runtime is missing: pip install '{XLLAMACPP_PIN}' ({exc})"
        ) from exc


_told_fallback: list[str] = []


def resolve_runtime(runtime: str, log=None) -> Path | None:
    """The native ``llama-server`` to run, or None for the prebuilt wheel's server.

    ``native`` without a build is an error naming the command that builds it; ``auto`` falls
    back to the wheel and says so once per process.
    """
    if runtime not in ("auto", "native", "prebuilt"):
        raise ModelNotAvailableError(f"llm.embedded.runtime must be auto, native or prebuilt, not {runtime!r}")
    if runtime == "prebuilt":
        return None
    binary = native_server()
    if binary is None and runtime == "native":
        raise ModelNotAvailableError("llm.embedded.runtime is native but llama.cpp is not built for this CPU; "
                                     "build it with: python -m crewlib.llm.local build-native")
    if binary is None and not _told_fallback:
        _told_fallback.append(runtime)
        (log or (lambda m: print(m, file=sys.stderr)))(
            "embedded LLM: no native llama.cpp build for this CPU (make setup builds one: python -m "
            "crewlib.llm.local build-native); using the prebuilt xllamacpp runtime, about half the prompt speed")
    return binary


class LocalServer:
    """llama.cpp's OpenAI-compatible server for one embedded model, in a child process.

    Use as a context manager, or call :meth:`start` / :meth:`stop` (also run at interpreter
    exit). ``base_url`` is ``http://127.0.0.1:<port>/v1``; the served model name is ``alias``.
    """

    def __init__(self, config: EmbeddedBlock, *, port: int | None = None, model_folder: Path | None = None,
                 log_path: Path | None = None, native_args: tuple[str, ...] = ()) -> None:
        self.config = config
        self.native_args = tuple(native_args)  # extra llama-server options (benchmarks/llm_local.py)
        self.model = get_model(config.model)
        self.port = port
        self.model_folder = model_folder
        self.log_path = log_path
        self._proc: subprocess.Popen | None = None
        self._log_file = None
        self._owns_log = False  # a temporary log we created, removed after a clean stop
        self.runtime: str | None = None  # "native" or "prebuilt" once started

    @property
    def alias(self) -> str:
        return self.model.alias

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> LocalServer:
        """Start the server. With ``runtime: auto``, a native build that crashes while starting (a build that
        does not run on this CPU) is reported on stderr and the prebuilt runtime serves instead."""
        if self.running:
            return self
        binary = resolve_runtime(self.config.runtime)
        if binary is None:
            _require_runtime()
            if self.native_args:
                raise ModelNotAvailableError(f"llama-server options {self.native_args} need the native runtime")
        path = prepare_model(self.config.model, self.model_folder)
        requested_port = self.port
        try:
            self._launch(binary, path)
        except ServerStartError as exc:
            if not (binary and self.config.runtime == "auto" and not self.native_args):
                raise
            print(f"embedded LLM: the native llama.cpp build failed to start ({str(exc).splitlines()[0]}); "
                  f"using the prebuilt xllamacpp runtime instead (rebuild: python -m crewlib.llm.local "
                  f"build-native)", file=sys.stderr)
            _require_runtime()
            self.port = requested_port
            self._launch(None, path)
        return self

    def _launch(self, binary: Path | None, path: Path) -> None:
        self.runtime = "native" if binary else "prebuilt"
        self.port = self.port or free_port()
        cmd = [
            sys.executable, "-m", "crewlib.llm.local", "serve", "--model-path", str(path), "--alias", self.alias,
            "--port", str(self.port),
            "--n-ctx-per-slot", str(self.config.n_ctx_per_slot), "--n-parallel", str(self.config.n_parallel),
            "--n-threads", str(self.config.n_threads), "--no-standalone",
            *(["--server-binary", str(binary)] if binary else []),
            *(f"--native-arg={arg}" for arg in self.native_args),
        ]
        if self.log_path is None:  # keep the server's output so a failure can be explained
            fd, name = tempfile.mkstemp(prefix="crew-llm-server-", suffix=".log")
            os.close(fd)
            self.log_path, self._owns_log = Path(name), True
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._proc = subprocess.Popen(cmd, stdout=self._log_file, stderr=subprocess.STDOUT, start_new_session=True)
        atexit.register(self.stop)
        self._wait_until_ready()

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.config.startup_timeout_s
        url = f"{self.base_url}/models"
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via an HTTP proxy
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                code, tail = self._proc.returncode, self._log_tail()
                self.stop(keep_log=True)
                raise ServerStartError(
                    f"the embedded LLM server exited with code {code} while starting; last lines of "
                    f"{self.log_path}:\n{tail}"
                )
            try:
                with direct.open(url, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            time.sleep(0.25)
        self.stop(keep_log=True)
        raise ServerStartError(
            f"the embedded LLM server did not answer {url} within {self.config.startup_timeout_s:.0f} s"
        )

    def _log_tail(self, lines: int = 8) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.strip().splitlines()[-lines:])

    def stop(self, keep_log: bool = False) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if self._log_file:
            self._log_file.close()
            self._log_file = None
        if self._owns_log and not keep_log and self.log_path:
            self.log_path.unlink(missing_ok=True)
            self.log_path, self._owns_log = None, False

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _wait_for_stop(standalone: bool, child: subprocess.Popen | None = None) -> None:
    """Block until SIGTERM/SIGINT, until the process that started us is gone (killed without atexit),
    or until ``child`` exits."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    parent = os.getppid()
    while not stop and (standalone or os.getppid() == parent) and (child is None or child.poll() is None):
        time.sleep(0.2)


def native_command(binary: str | Path, model_path: str | Path, alias: str, port: int, *, n_ctx_per_slot: int,
                   n_parallel: int, n_threads: int) -> list[str]:
    """The ``llama-server`` command line for the same settings the wheel's server gets."""
    return [str(binary), "--model", str(model_path), "--alias", alias, "--host", "127.0.0.1", "--port", str(port),
            "--ctx-size", str(n_ctx_per_slot * n_parallel), "--parallel", str(n_parallel),
            "--threads", str(n_threads), "--threads-batch", str(n_threads), "--no-webui", *runtime_args()]


def _serve_native(args: argparse.Namespace, alias: str, model_path: str) -> None:
    cmd = native_command(args.server_binary, model_path, alias, args.port, n_ctx_per_slot=args.n_ctx_per_slot,
                         n_parallel=args.n_parallel, n_threads=args.n_threads) + list(args.native_arg)
    print(f"serving {alias} at http://127.0.0.1:{args.port}/v1 with {args.server_binary}", flush=True)
    proc = subprocess.Popen(cmd)
    try:
        _wait_for_stop(args.standalone, proc)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    if proc.returncode not in (0, None, -signal.SIGTERM):
        sys.exit(f"error: llama-server exited with code {proc.returncode}; while starting, that means llama.cpp "
                 f"could not load {model_path} (its own lines above say why)")


def _serve(args: argparse.Namespace) -> None:
    """Child-process entry: run llama.cpp's server (native binary or the xllamacpp wheel) until SIGTERM."""
    alias = args.alias or get_model(args.model).alias
    model_path = str(args.model_path or prepare_model(args.model))
    if args.server_binary:
        return _serve_native(args, alias, model_path)
    _require_runtime()
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = model_path
    params.model_alias = {alias}
    params.n_parallel = args.n_parallel
    params.n_ctx = args.n_ctx_per_slot * args.n_parallel
    params.cpuparams.n_threads = args.n_threads
    params.cpuparams_batch.n_threads = args.n_threads
    params.hostnames = ["127.0.0.1"]  # loopback only
    params.port = args.port
    try:
        server = xlc.Server(params)
    except RuntimeError as exc:
        sys.exit(f"error: llama.cpp could not load {params.model.path}: {exc}")
    print(f"serving {alias} at http://127.0.0.1:{args.port}/v1", flush=True)
    _wait_for_stop(args.standalone)
    del server


def _build_native(optional: bool) -> None:
    try:
        print(f"native llama.cpp: {build_native()}")
    except ModelNotAvailableError as exc:
        if not optional:
            raise
        print(f"no native llama.cpp build ({exc}); the prebuilt xllamacpp runtime will be used")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m crewlib.llm.local", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="join and verify a model's PyPI parts")
    prep.add_argument("--model", default="qwen2.5-coder-1.5b", choices=sorted(MODELS))
    prep.add_argument("--install", action="store_true", help="pip-install missing parts first")
    prep.add_argument("--prune", action="store_true", help="uninstall the parts after joining")
    native = sub.add_parser("build-native", help="build llama.cpp's server for this CPU (once; cached)")
    native.add_argument("--optional", action="store_true",
                        help="on a missing compiler or a failed build, say so and exit 0 (the wheel is used)")
    serve = sub.add_parser("serve", help="serve a model on 127.0.0.1 until interrupted")
    serve.add_argument("--model", default="qwen2.5-coder-1.5b", choices=sorted(MODELS))
    serve.add_argument("--model-path", default=None, help="a GGUF file (default: the prepared --model)")
    serve.add_argument("--alias", default=None, help="model name to answer to (default: from --model)")
    serve.add_argument("--port", type=int, default=8080)
    defaults = llm_config().embedded
    serve.add_argument("--n-ctx-per-slot", type=int, default=defaults.n_ctx_per_slot)
    serve.add_argument("--n-parallel", type=int, default=defaults.n_parallel)
    serve.add_argument("--n-threads", type=int, default=defaults.n_threads)
    serve.add_argument("--server-binary", default=None,
                       help="a native llama-server to run (default: the xllamacpp wheel's server)")
    serve.add_argument("--native-arg", action="append", default=[],
                       help="an extra llama-server option, repeatable (with --server-binary)")
    serve.add_argument("--standalone", action=argparse.BooleanOptionalAction, default=True,
                       help="keep serving when the parent process exits (LocalServer passes --no-standalone)")
    args = parser.parse_args(argv)
    try:
        if args.command == "build-native":
            _build_native(args.optional)
        elif args.command == "prepare":
            path = prepare_model(args.model, install=args.install, prune=args.prune)
            print(f"{args.model}: {path} (sha256 verified)")
        else:
            _serve(args)
    except ModelNotAvailableError as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    main()
