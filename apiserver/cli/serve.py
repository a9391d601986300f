"""The ``kubevirt-expand serve``subcommand (being written)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("serve", help="(not implemented yet)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print("kubevirt-expand serve: not implemented yet", file=sys.stderr)
    return 2
