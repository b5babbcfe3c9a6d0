"""The ``crew`` console command (installed with the package)::

    crew write --title … --abstract … --bib refs.bib [--system crew] [--out related_work]

``crew write``: the related-work section of your own paper (:mod:`crewlib.write`). The other jobs
keep their module command lines (``python -m crewlib.demo``, ``python -m crewlib.rl``, the
experiments' ``python -m crewlib.experiments.*``), listed in docs/guide.md.
"""

from __future__ import annotations

import argparse
import os
import sys


class _OneLineErrors(argparse.ArgumentParser):
    """An argument error is one line on stderr (exit 2), not the usage block: ``--help`` shows the usage."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the project's models and data are local
    parser = _OneLineErrors(prog="crew", description="CREW: multi-agent related-work writing.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     parser_class=_OneLineErrors)
    from crewlib.write import command

    write_parser = commands.add_parser(
        "write", help="write the related-work section of your own paper (BibTeX → Markdown and LaTeX)",
        description="Write the related-work section of your own paper, from a BibTeX (or CSV/JSON) file of its "
                    "references to Markdown and LaTeX. See the README, 'Write the related work of your own paper'.")
    command.add_arguments(write_parser)
    args = parser.parse_args(argv)
    if args.command == "write":
        return command.run_from_args(args)
    parser.error(f"unknown command {args.command}")  # unreachable: argparse checks the choice
    return 2


def entry() -> None:
    """The console script: after Ctrl-C (exit 130) the process ends at once, without waiting for LLM calls still
    in flight in worker threads (their answers, when they arrive, would be cached; nothing is half-written)."""
    code = main()
    if code == 130:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    sys.exit(code)


if __name__ == "__main__":
    entry()
