"""``hack/dev-cluster.sh up|status|down``: a real control plane with the server behind its aggregator.

``up`` starts etcd and kube-apiserver (:class:`~devcluster.controlplane.ControlPlane`), installs the
KubeVirt CRDs, runs the server with the Deployment's arguments of an apiservice/ overlay and registers it
through the overlay's APIServices (:class:`~devcluster.deployed.DeployedServer`), loads examples/, and
leaves the three processes running in the background: the same harness as tests/realk8s, kept alive
between commands. What ``status`` and ``down`` need (process ids, ports, paths) is in ``DIR/state.json``;
``down`` stops only processes whose command line names ``DIR``, so a reused process id is never signalled.

Progress goes to stderr, the admin kubeconfig's path alone to stdout:
``export KUBECONFIG=$(hack/dev-cluster.sh up)``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from devcluster.paths import ASSETS_ENV, CRDS_FILE, REPO, SHARED_K8S, assets_dir

# Only the standard library above: `--help` runs before the virtualenv exists. The harness (trustme,
# cryptography, the server's package) is imported by the commands that use it.
KUBECTL = shutil.which("kubectl")
DEFAULT_DIR = REPO / ".dev-cluster"
STATE = "state.json"
OVERLAYS = REPO / "apiservice" / "overlays"
EXAMPLES = REPO / "examples"
EXAMPLE_VM = ("default", "fedora")
# Namespaces examples/ uses besides default (which kube-apiserver makes itself).
EXAMPLE_NAMESPACES = ("kubevirt",)
# Without a controller-manager nothing rotates the server's ServiceAccount token: one that outlives the
# cluster (the tests' harness takes a day).
TOKEN_DURATION = "8760h"
# The order ``down`` stops them in: the server before the API server it watches, etcd last.
PROCESSES = ("server", "virt-controller", "virt-api", "kube-apiserver", "etcd")

EPILOG = """\
examples:
  # Bring it up and point kubectl at it (progress on stderr, the kubeconfig's path on stdout)
  export KUBECONFIG=$(hack/dev-cluster.sh up)
  kubectl get --raw /apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachines/fedora/expand-spec

  # The binaries of controller-runtime's envtest (setup-envtest use -p path), the own-group overlay
  hack/dev-cluster.sh up --assets "$(setup-envtest use -p path 1.28.x)" --overlay own-group

  # More flags for the server
  hack/dev-cluster.sh up -- --log-level=debug

  hack/dev-cluster.sh status
  hack/dev-cluster.sh down
"""


class DevClusterError(Exception):
    """A problem to report in one line (exit 1)."""


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def command(name: str, folder: Path) -> str:
    """How to run another command on the same cluster."""
    return f"hack/dev-cluster.sh {name}" + ("" if folder == DEFAULT_DIR else f" --dir {folder}")


# -- the state file ----------------------------------------------------------------------------------


def read_state(folder: Path) -> dict[str, Any] | None:
    try:
        state: dict[str, Any] = json.loads((folder / STATE).read_text())
    except FileNotFoundError:
        return None
    except ValueError as err:
        raise DevClusterError(f"{folder / STATE} is not readable ({err}); remove {folder} by hand") from err
    return state


def write_state(folder: Path, state: dict[str, Any]) -> None:
    tmp = folder / f"{STATE}.tmp"
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    os.replace(tmp, folder / STATE)


def command_line(pid: int) -> str:
    """The process's command line, "" when there is no such process."""
    try:
        return (
            (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except FileNotFoundError:
        return ""
    except OSError:  # no /proc (macOS): ask ps
        found = subprocess.run(["ps", "-p", str(pid), "-o", "args="], capture_output=True, text=True)
        return found.stdout.strip()


def ours(folder: Path, pid: int | None) -> bool:
    """Whether ``pid`` is still the process this cluster started (its command line names the folder)."""
    return pid is not None and str(folder) in command_line(pid)


def running(folder: Path, state: dict[str, Any]) -> dict[str, bool]:
    started = state.get("processes", {})
    # KubeVirt's two are there only where up ran them
    return {
        name: ours(folder, started.get(name)) for name in PROCESSES if name in started or "virt" not in name
    }


def stop(folder: Path, state: dict[str, Any], timeout: float = 20) -> list[str]:
    """SIGTERM each process still ours (SIGKILL after ``timeout``), in :data:`PROCESSES` order."""
    stopped = []
    for name in PROCESSES:
        pid = state.get("processes", {}).get(name)
        if pid is None or not ours(folder, pid):
            continue
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while ours(folder, pid) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.1)
        if ours(folder, pid):
            os.kill(pid, signal.SIGKILL)
            while ours(folder, pid):
                _reap(pid)
                time.sleep(0.1)
        stopped.append(f"{name} ({pid})")
    return stopped


def _reap(pid: int) -> None:
    """Collect ``pid`` if it is a child of this process (``up`` tearing down after a failure)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


# -- up ----------------------------------------------------------------------------------------------


def crds_source(given: Path | None) -> Path | None:
    """The CRDs file to apply: the one given, else ../shared's where it exists, else None (built-in)."""
    if given is not None:
        if not given.is_file():
            raise DevClusterError(f"--crds {given}: no such file")
        return given
    return CRDS_FILE if CRDS_FILE.is_file() else None


def check_assets(assets: Path) -> None:
    for name in ("etcd", "kube-apiserver"):
        if not os.access(assets / name, os.X_OK):
            raise DevClusterError(
                f"no {name} in {assets}: give --assets DIR, or set {ASSETS_ENV}, to a folder holding etcd and "
                f"kube-apiserver (controller-runtime's setup-envtest downloads them), or put shared/ beside "
                f"the repository ({SHARED_K8S / 'bin'})"
            )
    if KUBECTL is None:
        raise DevClusterError("kubectl is not installed (it applies the CRDs, manifests and examples)")


def prepare_folder(folder: Path) -> None:
    """An empty folder for a new cluster: the leftovers of a stopped one are removed, anything else refused."""
    state = read_state(folder)
    if state is not None:
        alive = [name for name, up in running(folder, state).items() if up]
        if alive:
            raise DevClusterError(
                f"a dev cluster is already up in {folder} ({', '.join(alive)} running): "
                f"{command('status', folder)} shows it, {command('down', folder)} stops it"
            )
        say(f"== removing the leftovers of a stopped dev cluster in {folder}")
        shutil.rmtree(folder)
    elif folder.exists() and any(folder.iterdir()):
        raise DevClusterError(f"{folder} exists and is not a dev cluster's folder: give another --dir")
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)  # keys and the admin's credentials


def up(args: argparse.Namespace) -> int:
    from devcluster import kubevirt
    from devcluster.controlplane import ControlPlane, ProcessError
    from devcluster.crds import kubevirt_crds
    from devcluster.deployed import DeployedServer

    folder: Path = args.dir.absolute()
    assets: Path = (args.assets or assets_dir()).absolute()
    check_assets(assets)
    crds = crds_source(args.crds)
    overlay = OVERLAYS / args.overlay
    binaries = None
    if not args.no_kubevirt:
        binaries = kubevirt.find_binaries(args.kubevirt_bin)
        if binaries is None and args.kubevirt_bin is not None:
            raise DevClusterError(
                f"--kubevirt-bin {args.kubevirt_bin}: {kubevirt.unavailable(args.kubevirt_bin)}"
            )
    prepare_folder(folder)
    state: dict[str, Any] = {"overlay": args.overlay, "processes": {}}
    plane = ControlPlane(
        folder, assets, extra_args=["--shutdown-watch-termination-grace-period=2s", *args.apiserver_arg]
    )
    state["kubeconfig"] = str(plane.admin_kubeconfig)
    state["apiserver"] = plane.url
    try:
        say(f"== starting etcd and kube-apiserver from {assets}")
        plane.start_etcd()
        state["processes"]["etcd"] = _pid(plane.etcd)
        write_state(folder, state)
        plane.start_apiserver()
        state["processes"]["kube-apiserver"] = _pid(plane.apiserver)
        write_state(folder, state)
        say(f"== kube-apiserver ready on {plane.url}; installing the KubeVirt CRDs ({crds or 'built in'})")
        if crds is not None:
            plane.kubectl("apply", "-f", str(crds))
        else:
            plane.kubectl("apply", "-f", "-", stdin=json.dumps(kubevirt_crds()))
        plane.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        if binaries is None:
            say(f"== without KubeVirt: {kubevirt.unavailable() if not args.no_kubevirt else '--no-kubevirt'}")
        else:
            say(f"== starting KubeVirt's control plane (virt-api, virt-controller) from {binaries.folder}")
            kv = kubevirt.KubeVirtPlane(
                plane, folder / "kubevirt", binaries, apiservice=args.overlay == "own-group"
            )
            kv.start()
            state["processes"].update(kv.pids())
            state["kubevirt"] = {"binaries": str(binaries.folder), "virt-api": kv.api_url}
            write_state(folder, state)
            for namespace in ("default", *EXAMPLE_NAMESPACES):
                kv.prepare_namespace(namespace)
            say(
                f"== KubeVirt's webhooks and virt-controller ready after {kv.seconds['virt-controller']:.1f} s"
            )
        server = DeployedServer(plane, folder / "server", extra_args=args.serve_args, overlay=overlay)
        say(f"== starting the server with the {args.overlay} overlay's Deployment arguments")
        server.install(token_duration=TOKEN_DURATION)
        server.start(detach=True)
        state["processes"]["server"] = _pid(server.process)
        state["server"] = server.url
        state["apiservices"] = [svc["metadata"]["name"] for svc in server.apiservices()]
        write_state(folder, state)
        say(f"== registering {', '.join(state['apiservices'])} and waiting until Available")
        server.register()
        if not args.no_examples:
            # KubeVirt's plane made them already (with the ServiceAccount virt-launcher Pods need)
            plane.apply(
                *(
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
                    for n in EXAMPLE_NAMESPACES
                )
            )
            plane.kubectl("apply", "-f", str(EXAMPLES))
            say(f"== loaded {EXAMPLES}")
    except (ProcessError, subprocess.SubprocessError, OSError) as err:
        say(f"dev-cluster: up failed: {err}")
        stopped = stop(folder, state)
        say(f"== stopped {', '.join(stopped) or 'nothing'}; the logs stay in {folder} (down removes them)")
        return 1
    group = server.group
    namespace, name = EXAMPLE_VM
    say(
        f"""== up: kube-apiserver {plane.url}, the server {server.url} behind it as {group}
   (logs: {plane.apiserver_log}, {server.log_file})
Try:
  export KUBECONFIG={plane.admin_kubeconfig}
  kubectl get --raw /apis/{group}/v1/namespaces/{namespace}/virtualmachines/{name}/expand-spec
  kubectl replace --raw /apis/{group}/v1/namespaces/{namespace}/expand-vm-spec -f {EXAMPLES / "vm-fedora.yaml"}"""
    )
    if group == "subresources.kubevirt.io":
        installed = "" if shutil.which("virtctl") else "   (virtctl is not installed here)"
        say(f"  virtctl expand --vm {name} -n {namespace}{installed}")
    say(f"  {command('status', folder)}; {command('down', folder)}")
    print(plane.admin_kubeconfig, flush=True)
    return 0


def _pid(process: subprocess.Popen[bytes] | None) -> int:
    assert process is not None
    return process.pid


# -- status and down ---------------------------------------------------------------------------------


def status(args: argparse.Namespace) -> int:
    folder: Path = args.dir.absolute()
    state = read_state(folder)
    if state is None:
        say(f"no dev cluster in {folder} ({command('up', folder)} starts one)")
        return 1
    healthy = True
    for name, alive in running(folder, state).items():
        pid = state.get("processes", {}).get(name)
        say(f"{name}: {'running' if alive else 'not running'}{f' (pid {pid})' if pid else ''}")
        healthy &= alive
    if healthy:
        for apiservice in state.get("apiservices", []):
            found = _kubectl(state, "get", "apiservice", apiservice, "-o", "json")
            conditions = (
                (json.loads(found.stdout).get("status") or {}).get("conditions") or [] if found.stdout else []
            )
            available = next((c for c in conditions if c.get("type") == "Available"), None)
            ok = available is not None and available.get("status") == "True"
            detail = (
                "" if ok or available is None else f": {available.get('reason')}: {available.get('message')}"
            )
            say(f"APIService {apiservice}: {'Available' if ok else 'not Available'}{detail}")
            healthy &= ok
    say(
        f"kube-apiserver: {state.get('apiserver')}, the server: {state.get('server')}, overlay {state.get('overlay')}"
    )
    print(state["kubeconfig"], flush=True)
    return 0 if healthy else 1


def _kubectl(state: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    return subprocess.run(
        [KUBECTL, "--kubeconfig", state["kubeconfig"], "--request-timeout=10s", *args],
        capture_output=True,
        text=True,
        timeout=30,
    )


def down(args: argparse.Namespace) -> int:
    folder: Path = args.dir.absolute()
    state = read_state(folder)
    if state is None:
        say(f"no dev cluster in {folder}: nothing to stop")
        return 0
    stopped = stop(folder, state)
    shutil.rmtree(folder)
    say(f"== stopped {', '.join(stopped) or 'nothing (it was not running)'}; removed {folder}")
    return 0


# -- the command line --------------------------------------------------------------------------------


def wrap(text: str) -> str:
    return textwrap.fill(text, min(shutil.get_terminal_size().columns - 2, 100))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hack/dev-cluster.sh",
        description=wrap(
            "A real Kubernetes control plane on this machine for trying and developing: etcd and "
            "kube-apiserver with the aggregation layer, the KubeVirt CRDs, the server registered through "
            "an APIService as apiservice/ deploys it, examples/ loaded, and KubeVirt's own control plane "
            "(virt-api's webhooks and virt-controller) wherever its binaries are found. The tests start theirs "
            "with the same code (devcluster/). No controller-manager, scheduler or kubelet: virt-launcher pods "
            "stay Pending and VMIs never run."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    dir_help = f"the cluster's folder: certificates, etcd data, logs, kubeconfig (default: {DEFAULT_DIR})"
    start = sub.add_parser(
        "up",
        help="start it; prints the admin kubeconfig's path",
        description=wrap(
            "Start etcd, kube-apiserver and the server in the background, and print the path of the admin "
            "kubeconfig (progress goes to stderr). Everything listens on 127.0.0.1 at free ports. Arguments "
            "after -- go to `kubevirt-expand serve`."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    start.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=dir_help)
    start.add_argument(
        "--assets",
        type=Path,
        metavar="DIR",
        help=f"a folder holding etcd and kube-apiserver (default: ${ASSETS_ENV}, else {SHARED_K8S / 'bin'})",
    )
    start.add_argument(
        "--crds",
        type=Path,
        metavar="FILE",
        help=f"the KubeVirt CRDs to apply (default: {CRDS_FILE} where it exists, else built-in ones with open "
        "schemas for the kinds the server reads)",
    )
    start.add_argument(
        "--overlay",
        choices=sorted(p.name for p in OVERLAYS.iterdir() if p.name != "cert-manager"),
        default="kubevirt-group",
        help="the apiservice/overlays/ whose Deployment arguments and APIServices are used (default: "
        "kubevirt-group, subresources.kubevirt.io as virtctl calls it)",
    )
    start.add_argument("--no-examples", action="store_true", help="do not load examples/")
    start.add_argument(
        "--kubevirt-bin",
        type=Path,
        metavar="DIR",
        help="a folder holding KubeVirt's virt-api and virt-controller (default: $KUBEVIRT_BIN, else "
        "../shared/oracle/kubevirt/bin, else ~/.cache/kubevirt-oracle/bin); KubeVirt's control plane runs "
        "whenever they are found",
    )
    start.add_argument(
        "--no-kubevirt",
        action="store_true",
        help="do not run KubeVirt's control plane, even where it is found",
    )
    start.add_argument(
        "--apiserver-arg",
        action="append",
        default=[],
        metavar="FLAG",
        help="one more kube-apiserver flag, given as --apiserver-arg=--FLAG=VALUE; repeatable (the policy "
        "recipe of docs/cost.md turns ValidatingAdmissionPolicy on so)",
    )
    for name, text in (
        ("status", "say what runs and whether the APIServices are Available"),
        ("down", "stop it and remove its folder"),
    ):
        sub.add_parser(name, help=text, description=wrap(text[0].upper() + text[1:] + ".")).add_argument(
            "--dir", type=Path, default=DEFAULT_DIR, help=dir_help
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    serve_args: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, serve_args = argv[:at], argv[at + 1 :]
    args = build_parser().parse_args(argv)
    if serve_args and args.command != "up":
        build_parser().error("arguments after -- are for up (flags of the server)")
    args.serve_args = serve_args
    try:
        result: int = {"up": up, "status": status, "down": down}[args.command](args)
    except DevClusterError as err:
        say(f"dev-cluster: {err}")
        return 1
    return result
