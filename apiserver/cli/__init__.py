"""The ``kubevirt-expand`` command line: ``expand`` (offline rendering), ``preview`` (a change's effect),
``resources`` (what a VM's pod will request), ``catalog`` (a cluster's instancetypes and preferences) and ``serve`` (the API server).

Each subcommand lives in its own module exposing ``add_parser(subparsers)``; the parser it adds
carries ``func`` (``args -> exit code``) as a default.

``expand`` must start fast (a pre-commit hook runs it on every commit) and run where only the base
install is (``pip install kubevirt-expand-apiserver``, without the ``server`` extra): a run of ``expand``
never imports :mod:`apiserver.cli.serve`, whose flags need the server's dependencies (aiohttp,
kubernetes_asyncio, prometheus_client, cryptography); ``serve`` is then listed by a stand-in that is never
parsed. Without those dependencies, ``serve`` says which extra to install.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

SERVE_HELP = "run the aggregated API server (expand-spec, expand-vm-spec)"
SERVER_EXTRA = "kubevirt-expand-apiserver[server]"
CLUSTER_EXTRA = "kubevirt-expand-apiserver[cluster]"  # what reading a cluster needs (in SERVER_EXTRA too)


def _command(argv: Sequence[str]) -> str | None:
    """The subcommand the arguments name (the first word that is not an option), if any."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; for ``command="expand"``, without importing the server (see above)."""
    from apiserver.cli import expand
    from apiserver.version import KUBEVIRT_MATCHED, version_line

    parser = argparse.ArgumentParser(
        prog="kubevirt-expand",
        description="Render KubeVirt VirtualMachines with their instancetypes and preferences applied.",
        formatter_class=argparse.RawDescriptionHelpFormatter,  # --version's two lines as written
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"{version_line()}\noutput matches {KUBEVIRT_MATCHED}",
        help="print the version and the KubeVirt code the output matches, then exit",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    expand.add_parser(sub)
    if command == "expand":
        sub.add_parser("serve", help=SERVE_HELP)  # a stand-in: this run is expand's
        return parser
    from apiserver.cli import catalog, preview, resources

    resources.add_parser(sub)
    preview.add_parser(sub)
    catalog.add_parser(sub)
    try:
        from apiserver.cli import serve
    except ModuleNotFoundError:  # the base install: serve is listed, main() says what it needs
        sub.add_parser("serve", help=SERVE_HELP)
        return parser
    serve.add_parser(sub)
    return parser


def _no_server(missing: str) -> int:
    print(
        f"kubevirt-expand serve: the server's dependencies are not installed (no module {missing!r}); "
        f"install them with: pip install '{SERVER_EXTRA}'",
        file=sys.stderr,
    )
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code (2 for usage errors)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    command = _command(arguments)
    if command == "serve":
        try:
            import apiserver.cli.serve  # noqa: F401
        except ModuleNotFoundError as err:
            return _no_server(err.name or str(err))
    parser = build_parser(command)
    args = parser.parse_args(arguments)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
