"""``--help`` of ``serve`` and ``expand``: every flag explained, defaults in Kubernetes' notation, prose
wrapped to the terminal."""

from __future__ import annotations

import argparse
import itertools
import os
import re
import subprocess
import sys

import pytest

from apiserver.cli import build_parser


def run_help(*args: str, columns: int) -> str:
    env = {**os.environ, "COLUMNS": str(columns)}
    result = subprocess.run(
        [sys.executable, "-m", "apiserver.cli", *args, "--help"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def flag_blocks(text: str) -> dict[str, str]:
    """Each option's help as one line of text, by its long flag."""
    blocks: dict[str, str] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if re.match(r"^  -", line):
            current = [line.strip()]
            flags = re.findall(r"--[a-z][a-z0-9-]*", line)
            blocks[flags[0]] = ""  # filled below
            name = flags[0]
        elif current is not None and line.startswith("    ") and line.strip():
            current.append(line.strip())
        else:
            current = None
            continue
        blocks[name] = " ".join(current)
    return blocks


def subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found: argparse.ArgumentParser = sub.choices[name]
    return found


@pytest.mark.parametrize("command", ["serve", "expand"])
def test_every_flag_has_help_and_no_python_reprs(command: str) -> None:
    text = run_help(command, columns=100)
    blocks = flag_blocks(text)
    actions = [a for a in subparser(command)._actions if a.option_strings and a.dest != "help"]
    assert actions
    for action in actions:
        flag = next(s for s in action.option_strings if s.startswith("--"))
        assert action.help and len(action.help.split()) >= 3, f"{flag} has no help"
        assert " ".join(action.help.split()[:3]) in blocks[flag], blocks[flag]
    for python_repr in ("['", "(default: ", "True)", "None", "TLSVersion", "10.0"):
        assert python_repr not in text, python_repr


def test_serve_defaults_in_kubernetes_notation() -> None:
    blocks = flag_blocks(run_help("serve", columns=100))
    expected = {
        "--requestheader-username-headers": "(default [X-Remote-User])",
        "--requestheader-group-headers": "(default [X-Remote-Group])",
        "--requestheader-extra-headers-prefix": "(default [X-Remote-Extra-])",
        "--api-versions": "(default [v1,v1alpha3])",
        "--api-group": '(default "subresources.kubevirt.io")',
        "--bind-address": '(default "127.0.0.1")',
        "--secure-port": "(default 8443)",
        "--request-timeout": "(default 60)",
        "--authentication-token-webhook-cache-ttl": "(default 10s)",
        "--authorization-webhook-cache-authorized-ttl": "(default 10s)",
        "--authorization-webhook-cache-unauthorized-ttl": "(default 10s)",
        "--tls-min-version": '(default "VersionTLS12")',
        "--gc-freeze": "(default true)",
        "--log-format": '(default "text")',
        "--authentication": '(default "auto")',
    }
    for flag, default in expected.items():
        assert blocks[flag].endswith(default), blocks[flag]
    # pflag shows no default for what is empty or off.
    for flag in ("--requestheader-allowed-names", "--requestheader-uid-headers", "--tls-sni", "--vm-cache"):
        assert "(default" not in blocks[flag], blocks[flag]


def test_defaults_shown_are_the_defaults_used() -> None:
    args = subparser("serve").parse_args([])
    assert args.authentication_token_webhook_cache_ttl == 10.0
    assert args.authorization_webhook_cache_unauthorized_ttl == 10.0
    assert args.tls_min_version.name == "TLSv1_2"
    assert args.secure_port == 8443 and args.gc_freeze is True


def test_expand_description_is_wrapped() -> None:
    text = run_help("expand", columns=80)
    description = text.split("\n\n")[1]
    assert description.startswith("Expand every VirtualMachine")
    assert len(description.splitlines()) > 2
    assert max(len(line) for line in description.splitlines()) <= 80
    # The examples in the epilog stay as written.
    assert "\n  kubectl get vm fedora -o yaml | kubevirt-expand expand -f - -f objects.yaml \\\n" in text
    # Every continued example line ends in a backslash; a lost one (in the Python source) joins the two
    # lines into one with the indentation in between.
    lines = text.split("examples:\n")[1].split("\n\nexit status:")[0].splitlines()
    assert [line for line in lines if "   " in line.strip()] == []
    for line, following in itertools.pairwise(lines):
        if following.startswith("      "):
            assert line.endswith(" \\"), line


def test_expand_namespace_help_says_when_another_namespace_is_an_error() -> None:
    assert (
        "if given, a VM in another namespace is"
        in flag_blocks(run_help("expand", columns=100))["--namespace"]
    )
