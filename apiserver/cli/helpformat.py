"""``--help`` as a Kubernetes user reads it: defaults in pflag's notation, prose wrapped to the terminal.

kube-apiserver's flags print ``(default "X-Remote-User")`` for text, ``(default [a,b])`` for lists,
``(default 10s)`` for durations, ``(default 8443)`` for numbers, ``(default true)`` for a boolean that
is on, and nothing for an empty or false default; a flag's help may name its own default instead (then
nothing is added). Prose paragraphs of descriptions and epilogs are re-wrapped; indented lines (command
examples) are kept as written.
"""

from __future__ import annotations

import argparse
import re
import textwrap

_ARGPARSE_DEFAULT = " (default: %(default)s)"  # what BooleanOptionalAction appends by itself
DURATION = "DURATION"  # the metavar of flags taking a Go duration: their default ("10s") is shown bare


def _number(value: float) -> str:
    return f"{value:g}"


def kube_default(action: argparse.Action) -> str | None:
    """The default of ``action`` in pflag's notation, or None when pflag would show none."""
    default = action.default
    if default is None or default is argparse.SUPPRESS or default is False:
        return None
    if default is True:
        return "true"
    if isinstance(default, str):
        if not default:
            return None
        return default if action.metavar == DURATION else f'"{default}"'
    if isinstance(default, int | float):
        return _number(default)
    if isinstance(default, list | tuple):
        return "[" + ",".join(str(item) for item in default) + "]" if default else None
    return str(default)


class KubeHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Kubernetes notation for defaults; wrapped prose, raw indented lines."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = (action.help or "").replace(_ARGPARSE_DEFAULT, "")
        if "(default" in text:
            return text
        shown = kube_default(action)
        if shown is None:
            return text
        # argparse %-formats help texts: a literal % in a default must survive that.
        return f"{text} (default {shown.replace('%', '%%')})"

    def _split_lines(self, text: str, width: int) -> list[str]:
        # Never at a hyphen: header names (X-Remote-User) and flags stay whole.
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        blocks: list[str] = []
        for block in re.split(r"\n\s*\n", text.strip("\n")):
            lines = block.splitlines()
            if any(line[:1].isspace() for line in lines[1:]):
                blocks.append("\n".join(indent + line for line in lines))  # examples: as written
            else:
                blocks.append(
                    textwrap.fill(
                        " ".join(line.strip() for line in lines),
                        width,
                        initial_indent=indent,
                        subsequent_indent=indent,
                    )
                )
        return "\n\n".join(blocks) + "\n"
