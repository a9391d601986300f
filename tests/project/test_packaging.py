"""The wheel and the Dockerfile that installs it.

No container engine runs here, so the image is tested in its parts: the wheel is built from exactly
the files the Dockerfile's build stage copies with the build stage's own ``pip wheel`` command,
installed into a fresh virtual environment with the runtime stage's own ``pip install`` command
(offline, from those wheels), and run from there (the console script, the offline command, the server
with its packaged data); the Dockerfile itself is checked for the structure the image relies on.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import tomllib
import urllib.request
import venv
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.patience import patience

ROOT = Path(__file__).resolve().parents[2]
# One pytest-xdist worker runs them all, so the module's wheels are built once.
pytestmark = pytest.mark.xdist_group("packaging")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
DISTRIBUTION = PYPROJECT["project"]["name"]
(SCRIPT,) = PYPROJECT["project"]["scripts"]
BUILD_TOOLS = re.compile(r"\b(apt-get|apt|apk|dnf|yum|gcc|g\+\+|cc|make|build-essential|git|curl|wget)\b")


# --- the Dockerfile, read as Docker reads it ----------------------------------------------------------


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def args(self, instruction: str) -> list[str]:
        return [a for i, a in self.instructions if i == instruction]


def dockerfile() -> tuple[dict[str, str], list[Stage]]:
    """Global ARG defaults and the stages: continuation lines joined, comments dropped."""
    lines: list[str] = []
    pending = ""
    for raw in (ROOT / "Dockerfile").read_text().splitlines():
        if raw.lstrip().startswith("#") or not raw.strip():
            continue
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        lines.append(pending + raw)
        pending = ""
    assert not pending, "the Dockerfile ends inside a continued line"
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in lines:
        instruction, _, rest = line.strip().partition(" ")
        instruction, rest = instruction.upper(), " ".join(rest.split())
        if instruction == "FROM":
            words = rest.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(words[0], name))
        elif not stages:
            assert instruction == "ARG", f"{instruction} before the first FROM"
            key, _, value = rest.partition("=")
            args[key] = value
        else:
            stages[-1].instructions.append((instruction, rest))
    return args, stages


def resolve(base: str, args: dict[str, str]) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: args[m.group(1)], base)


def deployment() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((ROOT / "apiservice/base/deployment.yaml").read_text())
    return doc


def test_the_base_image_is_pinned_and_the_python_the_project_needs() -> None:
    args, stages = dockerfile()
    assert len(stages) >= 2, "a build stage and a runtime stage"
    bases = {resolve(s.base, args) for s in stages}
    assert len(bases) == 1, "build and runtime from the same base, so compiled wheels fit"
    (base,) = bases
    # A patch release (or a digest): `python:3.11-slim` would move under the image's feet.
    assert re.fullmatch(r"python:3\.(\d+)\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", base), base
    minor = int(base.split(".")[1])
    required = re.fullmatch(r">=3\.(\d+)", PYPROJECT["project"]["requires-python"])
    assert required and minor >= int(required.group(1))


def test_the_build_stage_makes_the_wheels_from_the_files_it_copies() -> None:
    _, stages = dockerfile()
    build = stages[0]
    assert build.name, "the build stage is named, so the runtime stage can refer to it"
    assert any(
        re.search(r"\bpip wheel\b.*--wheel-dir /wheels \"\.\[server\]\"$", run) for run in build.args("RUN")
    ), "the build stage makes the wheels of the project with its server extra"
    copied = build_stage_sources()
    assert {"pyproject.toml", "apiserver"} <= set(copied)
    # The readme pyproject.toml names is needed by the build too.
    assert PYPROJECT["project"]["readme"] in copied


def build_stage_sources() -> list[str]:
    _, stages = dockerfile()
    sources: list[str] = []
    for copy in stages[0].args("COPY"):
        words = [w for w in copy.split() if not w.startswith("--")]
        sources += [w.rstrip("/") for w in words[:-1]]
    return sources


def test_the_runtime_stage_installs_only_the_wheels_and_runs_unprivileged() -> None:
    _, stages = dockerfile()
    build, final = stages[0], stages[-1]
    for run in final.args("RUN"):
        assert not BUILD_TOOLS.search(run), f"build tool in the runtime stage: {run}"
        for command in re.split(r"&&|;", run):
            words = shlex.split(command.strip())
            words = [w for w in words if not w.startswith("--mount=")]
            if words[:2] == ["pip", "install"]:
                assert "--no-index" in words, "the runtime stage must install from the wheels alone"
                assert words[-1] == f"{DISTRIBUTION}[server]", "the image is the server's"
            elif words[:2] == ["pip", "uninstall"]:
                assert "pip" in words, "pip removes itself once the wheels are in"
            else:
                pytest.fail(f"unexpected command in the runtime stage: {command.strip()}")
        for mount in re.findall(r"--mount=(\S+)", run):
            assert f"from={build.name}" in mount and "target=/wheels" in mount
    # Nothing of the sources reaches the image: no COPY/ADD but wheels from the build stage.
    for instruction in ("COPY", "ADD"):
        for arg in final.args(instruction):
            assert arg.startswith(f"--from={build.name} /wheels"), f"{instruction} {arg}"
    # USER is numeric (runAsNonRoot can only verify a number) and that of the Deployment.
    (user,) = final.args("USER")
    uid, _, gid = user.partition(":")
    pod = deployment()["spec"]["template"]["spec"]["securityContext"]
    assert (int(uid), int(gid)) == (pod["runAsUser"], pod["runAsGroup"])
    assert int(uid) != 0
    kinds = [i for i, _ in final.instructions]
    assert kinds.index("USER") > max(i for i, k in enumerate(kinds) if k == "RUN"), "USER after the last RUN"


def test_the_entrypoint_is_the_console_script_serving_on_the_deployments_port() -> None:
    _, stages = dockerfile()
    final = stages[-1]
    (entrypoint,) = final.args("ENTRYPOINT")
    assert yaml.safe_load(entrypoint) == [SCRIPT, "serve"], "exec form, so SIGTERM reaches the server"
    args = deployment()["spec"]["template"]["spec"]["containers"][0]["args"]
    port = next(a.split("=", 1)[1] for a in args if a.startswith("--secure-port="))
    assert final.args("EXPOSE") == [port]


def dockerignore_admits(path: str) -> bool:
    """Docker's rule: the last pattern that matches a path decides, `!` re-includes."""
    admitted = True
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        pattern = line.strip()
        if not pattern or pattern.startswith("#"):
            continue
        negate = pattern.startswith("!")
        pattern = pattern.lstrip("!").rstrip("/")
        if fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(path, pattern.removeprefix("**/")):
            admitted = negate
    return admitted


def test_the_build_context_holds_what_the_build_copies_and_nothing_else() -> None:
    for source in build_stage_sources():
        assert dockerignore_admits(source), f".dockerignore leaves out {source}, which the build copies"
    for excluded in (".venv", ".git", "tests", ".certs", "apiserver/__pycache__"):
        assert not dockerignore_admits(excluded), f"{excluded} would be sent to the builder"


# --- the wheel, built from the build stage's files ------------------------------------------------------


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A snapshot of the files the build stage copies (the tree changes while others work)."""
    src = tmp_path_factory.mktemp("src")
    for source in build_stage_sources():
        origin = ROOT / source
        if origin.is_dir():
            shutil.copytree(origin, src / source, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(origin, src / source)
    return src


def stage_pip_command(stage: Stage, verb: str, wheels: Path) -> list[str]:
    """The stage's ``pip <verb> ...`` command, its /wheels replaced by a local folder."""
    for run in stage.args("RUN"):
        for command in re.split(r"&&|;", run):
            words = [w for w in shlex.split(command.strip()) if not w.startswith("--mount=")]
            if words[:2] == ["pip", verb]:
                return [str(wheels) if w == "/wheels" else w for w in words[1:]]
    raise AssertionError(f"no pip {verb} in stage {stage.name or stage.base}")


# The build arguments of the Dockerfile's documented command (its header): a release and its commit.
BUILD_ARGS = {"VERSION": "9.8.7", "COMMIT": "0123456789abcdef0123456789abcdef01234567"}


def _substitute(text: str, values: dict[str, str]) -> str:
    """Docker's ``${X}``, ``${X:+word}`` and ``${X:-word}`` in ENV, and its ``\\"`` escapes."""

    def one(match: re.Match[str]) -> str:
        value = values.get(match.group(1), "")
        if match.group(2) == ":+":
            return match.group(3) if value else ""
        if match.group(2) == ":-":
            return value or match.group(3)
        return value

    return re.sub(r"\$\{(\w+)(?:(:[+-])([^}]*))?\}", one, text).replace('\\"', '"')


def stage_env(stage: Stage, build_args: dict[str, str]) -> dict[str, str]:
    """The stage's ENV as ``docker build --build-arg`` would set it (its ARG defaults otherwise)."""
    values: dict[str, str] = {}
    for arg in stage.args("ARG"):
        key, _, default = arg.partition("=")
        values[key] = build_args.get(key, default)
    env: dict[str, str] = {}
    for line in stage.args("ENV"):
        for key, value in re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)', line):
            value = value[1:-1] if value.startswith('"') else value
            env[key] = _substitute(value, values)
    return env


def test_the_build_stage_says_the_version_and_commit_it_is_given() -> None:
    _, stages = dockerfile()
    assert stage_env(stages[0], BUILD_ARGS) == {
        "SETUPTOOLS_SCM_PRETEND_VERSION_FOR_KUBEVIRT_EXPAND_APISERVER": "9.8.7",
        "SETUPTOOLS_SCM_PRETEND_METADATA_FOR_KUBEVIRT_EXPAND_APISERVER": f'{{node="g{BUILD_ARGS["COMMIT"]}"}}',
    }
    assert stage_env(stages[0], {})["SETUPTOOLS_SCM_PRETEND_METADATA_FOR_KUBEVIRT_EXPAND_APISERVER"] == (
        '{node=""}'
    )


@pytest.fixture(scope="module")
def wheelhouse(sources: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the build stage's ``pip wheel`` makes, given the documented build arguments: the project's
    wheel and every dependency's."""
    wheels = tmp_path_factory.mktemp("wheels")
    _, stages = dockerfile()
    proc = subprocess.run(
        [sys.executable, "-m", "pip", *stage_pip_command(stages[0], "wheel", wheels), "-q"],
        cwd=sources,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, **stage_env(stages[0], BUILD_ARGS)},
    )
    assert proc.returncode == 0, f"the build stage's pip wheel fails:\n{proc.stderr[-3000:]}"
    return wheels


@pytest.fixture(scope="module")
def wheel(wheelhouse: Path) -> Path:
    (built,) = wheelhouse.glob(f"{DISTRIBUTION.replace('-', '_')}-*.whl")
    return built


def test_the_wheel_holds_every_file_of_the_package(wheel: Path, sources: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    package = {
        p.relative_to(sources).as_posix()
        for p in (sources / "apiserver").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    missing = package - names
    assert not missing, f"files of apiserver/ left out of the wheel (package data?): {sorted(missing)}"
    assert {n for n in names if n.endswith(".json")} >= {p for p in package if p.endswith(".json")}
    assert "apiserver/py.typed" in names
    assert not {n for n in names if n.startswith("tests/")}, "the tests are not shipped"


def test_the_wheel_declares_the_console_script_and_the_dependencies(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        info = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA")).rsplit("/", 1)[0]
        entry_points = zf.read(f"{info}/entry_points.txt").decode()
        metadata = zf.read(f"{info}/METADATA").decode()
    assert f"{SCRIPT} = {PYPROJECT['project']['scripts'][SCRIPT]}" in entry_points
    requires = {
        line.split(": ", 1)[1] for line in metadata.splitlines() if line.startswith("Requires-Dist: ")
    }
    assert set(PYPROJECT["project"]["dependencies"]) <= requires


@pytest.fixture(scope="module")
def installed(wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv where the runtime stage's ``pip install`` ran: from the wheels alone, offline."""
    env = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=True, clear=True).create(env)
    _, stages = dockerfile()
    proc = subprocess.run(
        [str(env / "bin/python"), "-m", "pip", *stage_pip_command(stages[-1], "install", wheelhouse), "-q"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**_clean_env(), "PIP_FIND_LINKS": "", "PIP_EXTRA_INDEX_URL": ""},
    )
    assert proc.returncode == 0, f"the runtime stage's pip install fails:\n{proc.stderr[-3000:]}"
    return env


@pytest.fixture(scope="module")
def installed_cli(wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the base install only (no ``server`` extra), from the same wheels, offline."""
    env = tmp_path_factory.mktemp("venv-cli")
    venv.EnvBuilder(with_pip=True, clear=True).create(env)
    proc = subprocess.run(
        [
            str(env / "bin/python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--find-links",
            str(wheelhouse),
            DISTRIBUTION,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**_clean_env(), "PIP_FIND_LINKS": "", "PIP_EXTRA_INDEX_URL": ""},
    )
    assert proc.returncode == 0, f"the base install fails:\n{proc.stderr[-3000:]}"
    return env


def test_the_command_line_alone_installs_and_runs_without_the_server(
    installed_cli: Path, tmp_path: Path
) -> None:
    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(installed_cli / "bin" / SCRIPT), *argv],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=_clean_env(),
            timeout=patience(60),
            check=False,
        )

    server_only = ("aiohttp", "kubernetes_asyncio", "prometheus_client", "cryptography", "watchfiles")
    for module in server_only:
        proc = subprocess.run(
            [str(installed_cli / "bin/python"), "-c", f"import {module}"],
            capture_output=True,
            cwd=tmp_path,
            env=_clean_env(),
            check=False,
        )
        assert proc.returncode != 0, f"{module} is installed without the server extra"
    expanded = run("expand", "-f", str(ROOT / "examples"), "--check")
    assert expanded.returncode == 0, expanded.stderr
    assert expanded.stderr.splitlines()[-1].startswith("summary: 3 VMs, 3 admitted")
    listed = run("--help")
    assert listed.returncode == 0
    assert all(command in listed.stdout for command in ("serve", "preview", "resources", "catalog"))
    costs = run("resources", "-f", str(ROOT / "examples"))
    assert costs.returncode == 0 and "Traceback" not in costs.stderr, costs.stderr
    same = run("preview", "--before", str(ROOT / "examples"), "--after", str(ROOT / "examples"))
    assert same.returncode == 0 and "Traceback" not in same.stderr, same.stderr
    snapshot = run("catalog", "snapshot", "-o", str(tmp_path / "catalog.yaml"))
    assert snapshot.returncode == 2 and "Traceback" not in snapshot.stderr
    assert f"pip install '{DISTRIBUTION}[cluster]'" in snapshot.stderr
    serve = run("serve", "--manifests", str(ROOT / "examples"))
    assert serve.returncode == 2
    assert f"pip install '{DISTRIBUTION}[server]'" in serve.stderr and "Traceback" not in serve.stderr


def _clean_env() -> dict[str, str]:
    """No PYTHONPATH or working directory that could reach the source tree."""
    return {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"}}


def test_the_installed_package_is_the_wheels_not_the_source_tree(installed: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(installed / "bin/python"), "-c", "import apiserver, sys; print(apiserver.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_clean_env(),
        timeout=patience(60),
        check=True,
    )
    assert Path(proc.stdout.strip()).is_relative_to(installed)


def test_the_image_says_the_version_and_commit_it_was_built_with(installed: Path, tmp_path: Path) -> None:
    """The build context has no .git: the build arguments are what --version says."""
    proc = subprocess.run(
        [str(installed / "bin" / SCRIPT), "--version"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_clean_env(),
        timeout=patience(60),
        check=True,
    )
    assert proc.stdout.splitlines()[0] == f"{SCRIPT} 9.8.7 (commit {BUILD_ARGS['COMMIT'][:12]})"


def test_the_console_script_runs(installed: Path, tmp_path: Path) -> None:
    for argv in ([SCRIPT, "--help"], [SCRIPT, "serve", "--help"], [SCRIPT, "expand", "--help"]):
        proc = subprocess.run(
            [str(installed / "bin" / argv[0]), *argv[1:]],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=_clean_env(),
            timeout=patience(60),
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(f"usage: {' '.join(argv[:-1])}")


def test_the_installed_command_expands_like_the_source_tree(installed: Path, tmp_path: Path) -> None:
    def expand(binary: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(binary), "expand", "-f", str(ROOT / "examples"), "-o", "json"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=_clean_env(),
            timeout=120,
            check=False,
        )

    from_wheel = expand(installed / "bin" / SCRIPT)
    from_tree = subprocess.run(
        [sys.executable, "-m", "apiserver.cli", "expand", "-f", str(ROOT / "examples"), "-o", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert (from_wheel.returncode, from_wheel.stdout, from_wheel.stderr) == (
        from_tree.returncode,
        from_tree.stdout,
        from_tree.stderr,
    )


@pytest.fixture
def wheel_server(installed: Path, tmp_path: Path) -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    cmd = [
        str(installed / "bin" / SCRIPT),
        "serve",
        "--manifests",
        str(ROOT / "examples"),
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={tmp_path / 'certs'}",
    ]
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, env=_clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + patience(30)
        while _get(port, "/livez")[0] != 200:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"the installed server did not start:\n{proc.communicate()[1].decode()[-3000:]}")
            time.sleep(0.2)
        yield port
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _get(port: int, path: str) -> tuple[int, bytes]:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the server's self-signed certificate from --cert-dir
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}{path}", context=ctx, timeout=patience(5)) as r:
            status: int = r.status
            return status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError:
        return 0, b""


def test_the_installed_server_serves_with_its_packaged_data(wheel_server: int) -> None:
    deadline = time.monotonic() + patience(30)
    while (ready := _get(wheel_server, "/readyz"))[0] != 200 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ready[0] == 200, ready
    # The OpenAPI documents are built from the JSON shipped as package data.
    status, body = _get(wheel_server, "/openapi/v2")
    assert status == 200
    assert b"io.kubevirt" in body or b"VirtualMachine" in body
