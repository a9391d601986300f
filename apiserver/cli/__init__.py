"""The ``kubevirt-expand`` command line: ``expand`` (offline rendering) and ``serve`` (the API server).

Each subcommand lives in its own module exposing ``add_parser(subparsers)``; the parser it adds
carries ``func`` (``args -> exit code``) as a default.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    from apiserver.cli import expand, resources, serve
    from apiserver.version import KUBEVIRT_MATCHED, package_version

    parser = argparse.ArgumentParser(
        prog="kubevirt-expand",
        description="Render KubeVirt VirtualMachines with their instancetypes and preferences applied.",
        formatter_class=argparse.RawDescriptionHelpFormatter,  # --version's two lines as written
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"kubevirt-expand {package_version()}\noutput matches {KUBEVIRT_MATCHED}",
        help="print the version and the KubeVirt code the output matches, then exit",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    expand.add_parser(sub)
    resources.add_parser(sub)
    serve.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code (2 for usage errors)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
