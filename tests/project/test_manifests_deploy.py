"""The deployment manifests (apiservice/) and the hack/ scripts that install them.

Every overlay is rendered with the real ``kubectl kustomize`` and checked as the cluster would see
it: objects valid against the Kubernetes schemas, the server's flags accepted by the real
``kubevirt-expand serve`` parser, APIServices routed to group-versions the server serves, the RBAC
the code declares, probes that the running server answers with the certificate hack/gen-certs.sh
makes.
"""

from __future__ import annotations

import base64
import functools
import http.client
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.patience import patience

ROOT = Path(__file__).resolve().parents[2]
APISERVICE = ROOT / "apiservice"
OVERLAYS = sorted(p.name for p in (APISERVICE / "overlays").iterdir() if (p / "kustomization.yaml").is_file())
# The oldest Kubernetes the manifests claim to install on, and the newest the validator knows.
KUBERNETES_VERSIONS = ("1.27.0", "latest")
NAMESPACE = "kubevirt-expand"
SERVICE_DNS = f"kubevirt-expand.{NAMESPACE}.svc"
SERVING_SECRET = "kubevirt-expand-serving-cert"
# Kinds from CRDs the schema bundle does not know; checked field by field below instead.
CERT_MANAGER_KINDS = {"Issuer", "Certificate"}

# What the built-in roles the manifests bind grant (k8s.io/kubernetes
# plugin/pkg/auth/authorizer/rbac/bootstrappolicy), as grants: (apiGroup, resource, verb, where),
# where = "" cluster-wide, else "namespace/resourceName".
AUTH_DELEGATOR = {
    ("authentication.k8s.io", "tokenreviews", "create", ""),
    ("authorization.k8s.io", "subjectaccessreviews", "create", ""),
}
AUTHENTICATION_READER = {
    ("", "configmaps", v, "kube-system/extension-apiserver-authentication") for v in ("get", "list", "watch")
}
Grant = tuple[str, str, str, str]


def _kubectl() -> str:
    found = shutil.which("kubectl") or ("/usr/bin/kubectl" if Path("/usr/bin/kubectl").exists() else None)
    if found is None:
        pytest.skip("kubectl is not installed: cannot render the kustomize overlays")
    return found


def _kustomize(path: Path) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [_kubectl(), "kustomize", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, f"kubectl kustomize {path} failed:\n{proc.stderr}"
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


@functools.cache
def _rendered(overlay: str) -> tuple[dict[str, Any], ...]:
    return tuple(_kustomize(APISERVICE / "overlays" / overlay))


def rendered(overlay: str) -> list[dict[str, Any]]:
    """A fresh copy each time, so a test cannot change what the next one sees."""
    return [yaml.safe_load(yaml.safe_dump(o)) for o in _rendered(overlay)]


def only(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected exactly one {kind} {name or ''}, found {len(found)}"
    return found[0]


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    containers = only(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    c: dict[str, Any] = containers[0]
    return c


def serve_options(args: list[str]) -> Any:
    """The Deployment's args as the real ``kubevirt-expand serve`` parser reads them."""
    from apiserver.cli import build_parser

    parser = build_parser()
    try:
        return parser.parse_args(["serve", *args])
    except SystemExit as e:  # argparse already printed which flag it refused
        pytest.fail(f"kubevirt-expand serve refuses the Deployment's args {args}: exit {e.code}")


def served_versions(options: Any) -> list[str]:
    versions = options.api_versions
    if isinstance(versions, str):
        versions = versions.split(",")
    return [v.strip() for v in versions if v.strip()]


# --- every object valid -------------------------------------------------------------------------


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_object_is_valid_against_the_kubernetes_schemas(overlay: str) -> None:
    import kubernetes_validate  # type: ignore[import-untyped]

    versions = [kubernetes_validate.latest_version() if v == "latest" else v for v in KUBERNETES_VERSIONS]
    objects = rendered(overlay)
    assert objects
    seen = set()
    for obj in objects:
        key = (obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])
        assert key not in seen, f"{overlay}: {key} appears twice"
        seen.add(key)
        if obj["kind"] in CERT_MANAGER_KINDS and obj["apiVersion"] == "cert-manager.io/v1":
            continue
        for version in versions:
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.ValidationError as e:
                pytest.fail(f"{overlay}: {key} is invalid for Kubernetes {version}: {e.message} at {e.path}")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_namespaced_object_lives_in_the_namespace_the_overlay_creates(overlay: str) -> None:
    objects = rendered(overlay)
    assert only(objects, "Namespace")["metadata"]["name"] == NAMESPACE
    for obj in objects:
        ns = obj["metadata"].get("namespace")
        if obj["kind"] == "RoleBinding":
            assert ns == "kube-system"  # the only object outside: it binds a kube-system Role
        elif obj["kind"] not in {"Namespace", "ClusterRole", "ClusterRoleBinding", "APIService"}:
            assert ns == NAMESPACE, f"{obj['kind']} {obj['metadata']['name']} is in {ns}"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_object_carries_the_label_that_finds_the_whole_install(overlay: str) -> None:
    for obj in rendered(overlay):
        labels = obj["metadata"].get("labels") or {}
        assert labels.get("app.kubernetes.io/part-of") == "kubevirt-expand", (
            obj["kind"],
            obj["metadata"]["name"],
        )


# --- the server's flags, the APIServices and the wiring between them --------------------------------


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_apiservices_route_exactly_the_group_versions_the_server_serves(overlay: str) -> None:
    objects = rendered(overlay)
    options = serve_options(container(objects)["args"])
    versions = served_versions(options)
    apiservices = of_kind(objects, "APIService")
    expected = {f"{v}.{options.api_group}" for v in versions}
    if options.vm_cache:  # the rendered VMs' collection, always in the server's own group
        expected.add("v1.expand.kubevirt-expand.io")
    assert sorted(a["metadata"]["name"] for a in apiservices) == sorted(expected)
    for a in apiservices:
        spec = a["spec"]
        assert a["metadata"]["name"] == f"{spec['version']}.{spec['group']}"
        assert not spec.get("insecureSkipTLSVerify"), "the caBundle must verify the server"
        assert spec["groupPriorityMinimum"] > 0 and spec["versionPriority"] > 0
    # The preferred (first) version the server lists is the one discovery ranks highest.
    ours = [a for a in apiservices if a["spec"]["group"] == options.api_group]
    ranked = sorted(ours, key=lambda a: -a["spec"]["versionPriority"])
    assert ranked[0]["spec"]["version"] == versions[0]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_service_reaches_the_port_the_server_listens_on(overlay: str) -> None:
    objects = rendered(overlay)
    c = container(objects)
    options = serve_options(c["args"])
    service = only(objects, "Service")
    pod_labels = only(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    for a in of_kind(objects, "APIService"):
        ref = a["spec"]["service"]
        assert (ref["namespace"], ref["name"]) == (
            service["metadata"]["namespace"],
            service["metadata"]["name"],
        )
        (port,) = [p for p in service["spec"]["ports"] if p["port"] == ref.get("port", 443)]
        target = port["targetPort"]
        if isinstance(target, str):
            (cport,) = [p for p in c["ports"] if p.get("name") == target]
            target = cport["containerPort"]
        assert target == options.secure_port
    # Reachable from outside the pod, with a certificate the APIService can verify.
    assert options.bind_address in {"0.0.0.0", "::"}
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in only(objects, "Deployment")["spec"]["template"]["spec"]["volumes"]}
    (secret_volume,) = [
        n for n, v in volumes.items() if v.get("secret", {}).get("secretName") == SERVING_SECRET
    ]
    assert options.tls_cert_file == f"{mounts[secret_volume]}/tls.crt"
    assert options.tls_private_key_file == f"{mounts[secret_volume]}/tls.key"
    cert_dir_mount = [m for m in mounts.values() if options.cert_dir.startswith(m)]
    assert cert_dir_mount and "emptyDir" in volumes[next(n for n, m in mounts.items() if m in cert_dir_mount)]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_probes_ask_the_health_paths_over_http_on_the_probe_port(overlay: str) -> None:
    """The kubelet probes the listener of --health-probe-bind-address (plain HTTP, on every interface:
    the kubelet dials the pod's IP), not the API port that connections could fill."""
    from apiserver.http.server import host_port

    objects = rendered(overlay)
    c = container(objects)
    options = serve_options(c["args"])
    host, probe_port = host_port(options.health_probe_bind_address)
    assert host is None and probe_port != options.secure_port
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/livez")):
        get = c[probe]["httpGet"]
        assert (get["scheme"], get["path"]) == ("HTTP", path)
        assert ports.get(get["port"], get["port"]) == probe_port
        assert c[probe]["timeoutSeconds"] >= 5  # a busy replica is not a dead one


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_pdb_and_network_policy_cover_the_server_pods_and_only_its_port(overlay: str) -> None:
    objects = rendered(overlay)
    deployment = only(objects, "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["replicas"] >= 2
    pdb = only(objects, "PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert 0 < pdb["spec"]["minAvailable"] < deployment["spec"]["replicas"]
    anti = deployment["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    (term,) = anti["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"].items() <= pod_labels.items()
    policy = only(objects, "NetworkPolicy")
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    options = serve_options(container(objects)["args"])
    ports = [p for rule in policy["spec"]["ingress"] for p in rule["ports"]]
    # Not the probe port: the node's traffic (the kubelet) is always allowed, other pods' is not.
    assert ports == [{"protocol": "TCP", "port": options.secure_port}]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_pod_runs_restricted(overlay: str) -> None:
    objects = rendered(overlay)
    pod = only(objects, "Deployment")["spec"]["template"]["spec"]
    c = container(objects)
    sc = c["securityContext"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == dockerfile_uid() != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    for key in ("requests", "limits"):
        assert c["resources"][key]["memory"]
    assert c["resources"]["requests"]["cpu"]
    # Pod Security admission enforces the same, so a later edit cannot quietly loosen it.
    labels = only(objects, "Namespace")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


def dockerfile_uid() -> int:
    users = [
        line.split()[1] for line in (ROOT / "Dockerfile").read_text().splitlines() if line.startswith("USER ")
    ]
    assert users, "the Dockerfile sets no USER"
    return int(users[-1].split(":")[0])


# --- RBAC ---------------------------------------------------------------------------------------


def _triples(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {
        (g, r, v)
        for rule in rules
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }


def _declared(rules: Any, what: str) -> set[Grant]:
    """Rules the code declares: (api_group, resource, verbs[, namespace, resource_names]) each."""
    out: set[Grant] = set()
    for rule in rules:
        namespace = getattr(rule, "namespace", None)
        names = getattr(rule, "resource_names", ()) or ("",)
        for verb in rule.verbs:
            for name in names:
                where = f"{namespace}/{name}" if namespace else ""
                out.add((rule.api_group, rule.resource, verb, where))
    assert out, f"{what} is empty"
    return out


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_server_is_granted_exactly_what_the_code_declares(overlay: str) -> None:
    """Nothing the code reads with the Deployment's flags is missing (a 403 in production), nothing
    more is granted: what the reader role holds follows from the flags (rules_for)."""
    from apiserver.auth import rbac as auth_rbac
    from apiserver.sources.cluster import rbac

    objects = rendered(overlay)
    options = serve_options(container(objects)["args"])
    sa = only(objects, "ServiceAccount")
    subject = {"kind": "ServiceAccount", "name": sa["metadata"]["name"], "namespace": NAMESPACE}
    cluster_roles = {r["metadata"]["name"]: r for r in of_kind(objects, "ClusterRole")}
    granted: set[Grant] = set()
    builtin = {"system:auth-delegator": AUTH_DELEGATOR}
    for binding in of_kind(objects, "ClusterRoleBinding"):
        assert binding["subjects"] == [subject]
        name = binding["roleRef"]["name"]
        if name in builtin:
            granted |= builtin[name]
        else:
            assert all("resourceNames" not in r for r in cluster_roles[name]["rules"])
            granted |= {(*t, "") for t in _triples(cluster_roles[name]["rules"])}
    (rb,) = of_kind(objects, "RoleBinding")
    assert rb["subjects"] == [subject]
    assert rb["metadata"]["namespace"] == "kube-system"
    assert rb["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "extension-apiserver-authentication-reader",
    }
    granted |= AUTHENTICATION_READER
    reads = rbac.rules_for(vm_cache=options.vm_cache)
    declared = _declared(reads, "sources.cluster.rbac") | _declared(auth_rbac.RULES, "auth.rbac")
    assert granted == declared, (
        f"missing: {sorted(declared - granted)}; granted but unused: {sorted(granted - declared)}"
    )


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_list_and_watch_on_vms_are_granted_because_the_deployment_passes_vm_cache(overlay: str) -> None:
    """The collection needs the VM cache, so the base Deployment passes --vm-cache; that flag, not a
    default, is why the reader role may list and watch VirtualMachines in every namespace."""
    from apiserver.sources.cluster import rbac

    objects = rendered(overlay)
    assert serve_options(container(objects)["args"]).vm_cache
    vm_verbs = {
        verb
        for role in of_kind(objects, "ClusterRole")
        for rule in role["rules"]
        if "virtualmachines" in rule.get("resources", []) and "kubevirt.io" in rule.get("apiGroups", [])
        for verb in rule["verbs"]
    }
    assert {"list", "watch"} <= vm_verbs
    without = {(r.resource, v) for r in rbac.rules_for(vm_cache=False) for v in r.verbs}
    assert ("virtualmachines", "get") in without
    assert not {("virtualmachines", "list"), ("virtualmachines", "watch")} & without


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_view_edit_admin_may_call_both_endpoints_of_the_served_group(overlay: str) -> None:
    objects = rendered(overlay)
    options = serve_options(container(objects)["args"])
    role = only(objects, "ClusterRole", "kubevirt-expand:expand")
    for aggregate in ("view", "edit", "admin"):
        assert role["metadata"]["labels"][f"rbac.authorization.k8s.io/aggregate-to-{aggregate}"] == "true"
    assert _triples(role["rules"]) == {
        (options.api_group, "virtualmachines/expand-spec", "get"),
        (options.api_group, "expand-vm-spec", "update"),
        (options.api_group, "virtualmachines/launch-spec", "get"),
        (options.api_group, "launch-vm-spec", "update"),
    }
    # Nobody is bound to it directly: it reaches users only through the aggregated roles.
    assert all(
        b["roleRef"]["name"] != role["metadata"]["name"] for b in of_kind(objects, "ClusterRoleBinding")
    )


# --- certificates: hack/gen-certs.sh, components/ca-bundle, cert-manager ---------------------------


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """The manifests and scripts in a scratch tree, so the scripts' .certs/ lands there."""
    for part in ("apiservice", "hack"):
        shutil.copytree(ROOT / part, tmp_path / part)
    return tmp_path


def _run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=patience(120), check=False, **kw)


def _certificate(pem: bytes) -> Any:
    from cryptography import x509

    return x509.load_pem_x509_certificate(pem)


@pytest.mark.parametrize("overlay", ["kubevirt-group", "own-group"])
def test_deploy_fills_every_caBundle_with_the_CA_of_the_serving_secret(repo_copy: Path, overlay: str) -> None:
    from cryptography import x509

    _kubectl()
    proc = _run(["bash", str(repo_copy / "hack/deploy.sh"), "--dry-run", overlay])
    assert proc.returncode == 0, proc.stderr
    assert "the Secret and caBundle below come from a throwaway one" in proc.stderr
    objects = [d for d in yaml.safe_load_all(proc.stdout) if d]
    secret = only(objects, "Secret", SERVING_SECRET)
    ca_pem = base64.b64decode(secret["data"]["ca.crt"])
    assert secret["type"] == "kubernetes.io/tls"
    assert base64.b64decode(secret["data"]["ca.crt"]) == ca_pem
    apiservices = of_kind(objects, "APIService")
    assert apiservices
    for a in apiservices:
        assert base64.b64decode(a["spec"]["caBundle"]) == ca_pem
    # The serving certificate in the Secret chains to that CA and names the Service.
    ca = _certificate(ca_pem)
    cert = _certificate(base64.b64decode(secret["data"]["tls.crt"]))
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(names.get_values_for_type(x509.DNSName)) == {SERVICE_DNS, f"{SERVICE_DNS}.cluster.local"}
    # The rest is the overlay as rendered on its own.
    assert sorted(o["kind"] for o in objects) == sorted([o["kind"] for o in rendered(overlay)] + ["Secret"])
    # A dry run does nothing: no CA, no certificate, no kustomization written.
    assert not (repo_copy / ".certs").exists()


def test_a_dry_run_shows_the_kept_certificate_and_writes_nothing(repo_copy: Path) -> None:
    _kubectl()
    certs = repo_copy / ".certs"
    assert _run(["bash", str(repo_copy / "hack/gen-certs.sh"), "--out", str(certs)]).returncode == 0
    before = {p: p.read_bytes() for p in certs.rglob("*") if p.is_file()}
    proc = _run(["bash", str(repo_copy / "hack/deploy.sh"), "--dry-run", "own-group"])
    assert proc.returncode == 0, proc.stderr
    assert "throwaway" not in proc.stderr
    secret = only([d for d in yaml.safe_load_all(proc.stdout) if d], "Secret", SERVING_SECRET)
    assert base64.b64decode(secret["data"]["ca.crt"]) == before[certs / "ca.crt"]
    assert base64.b64decode(secret["data"]["tls.crt"]) == before[certs / "tls.crt"]
    assert {p: p.read_bytes() for p in certs.rglob("*") if p.is_file()} == before


def test_deploy_sets_the_image_it_is_given(repo_copy: Path) -> None:
    _kubectl()
    for image, expected in (
        ("registry.example:5000/team/kubevirt-expand:1.2", "registry.example:5000/team/kubevirt-expand:1.2"),
        ("registry.example/kx@sha256:" + "a" * 64, "registry.example/kx@sha256:" + "a" * 64),
    ):
        proc = _run(["bash", str(repo_copy / "hack/deploy.sh"), "--dry-run", "--image", image, "own-group"])
        assert proc.returncode == 0, proc.stderr
        objects = [d for d in yaml.safe_load_all(proc.stdout) if d]
        assert container(objects)["image"] == expected


def test_deploy_refuses_an_unknown_overlay_and_explains_its_usage(repo_copy: Path) -> None:
    proc = _run(["bash", str(repo_copy / "hack/deploy.sh"), "no-such-overlay"])
    assert proc.returncode == 2
    assert "no overlay 'no-such-overlay'" in proc.stderr and "kubevirt-group" in proc.stderr


def test_gen_certs_keeps_a_good_certificate_and_replaces_it_on_force(tmp_path: Path) -> None:
    from cryptography import x509

    script = str(ROOT / "hack/gen-certs.sh")
    out = tmp_path / "certs"
    assert _run(["bash", script, "--out", str(out)]).returncode == 0
    first = {n: (out / n).read_bytes() for n in ("ca.crt", "tls.crt", "tls.key")}
    assert _run(["bash", script, "--out", str(out)]).returncode == 0
    assert {n: (out / n).read_bytes() for n in first} == first
    proc = _run(["bash", script, "--out", str(out), "--force"])
    assert proc.returncode == 0, proc.stderr
    assert (out / "ca.crt").read_bytes() == first["ca.crt"]
    assert (out / "tls.crt").read_bytes() != first["tls.crt"]
    # Another service name cannot reuse the certificate.
    assert _run(["bash", script, "--out", str(out), "--service", "other"]).returncode == 0
    san = _certificate((out / "tls.crt").read_bytes()).extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    assert "other.kubevirt-expand.svc" in san.value.get_values_for_type(x509.DNSName)
    assert oct((out / "tls.key").stat().st_mode & 0o777) == "0o600"


def test_gen_certs_adds_the_names_asked_for_and_reissues_until_the_certificate_has_them(
    tmp_path: Path,
) -> None:
    import ipaddress

    from cryptography import x509

    script = str(ROOT / "hack/gen-certs.sh")
    out = tmp_path / "certs"
    assert _run(["bash", script, "--out", str(out)]).returncode == 0
    plain = (out / "tls.crt").read_bytes()
    proc = _run(["bash", script, "--out", str(out), "--san", "127.0.0.1", "--san", "localhost"])
    assert proc.returncode == 0, proc.stderr
    named = (out / "tls.crt").read_bytes()
    assert named != plain  # the kept certificate lacked the names
    san = _certificate(named).extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert set(san.get_values_for_type(x509.DNSName)) == {
        SERVICE_DNS,
        f"{SERVICE_DNS}.cluster.local",
        "localhost",
    }
    # Asked again (or for fewer names), the certificate is kept.
    for args in (["--san", "localhost", "--san", "127.0.0.1"], []):
        assert _run(["bash", script, "--out", str(out), *args]).returncode == 0
        assert (out / "tls.crt").read_bytes() == named
    proc = _run(["bash", script, "--out", str(out), "--san", "not a name"])
    assert proc.returncode == 2 and "neither a DNS name nor an IPv4 address" in proc.stderr


def test_cert_manager_overlay_issues_the_secret_the_pods_mount_and_injects_its_CA() -> None:
    objects = rendered("cert-manager")
    volumes = only(objects, "Deployment")["spec"]["template"]["spec"]["volumes"]
    mounted = {v["secret"]["secretName"] for v in volumes if "secret" in v}
    serving = [c for c in of_kind(objects, "Certificate") if c["spec"]["secretName"] in mounted]
    assert len(serving) == 1
    cert = serving[0]
    assert cert["metadata"]["namespace"] == NAMESPACE
    assert set(cert["spec"]["dnsNames"]) == {SERVICE_DNS, f"{SERVICE_DNS}.cluster.local"}
    assert "server auth" in cert["spec"]["usages"]
    issuers = {i["metadata"]["name"]: i for i in of_kind(objects, "Issuer")}
    issuer = issuers[cert["spec"]["issuerRef"]["name"]]
    # That issuer signs with a CA Certificate issued in turn by a self-signed Issuer of the overlay.
    (ca_cert,) = [
        c
        for c in of_kind(objects, "Certificate")
        if c["spec"]["secretName"] == issuer["spec"]["ca"]["secretName"]
    ]
    assert ca_cert["spec"]["isCA"] is True
    assert "selfSigned" in issuers[ca_cert["spec"]["issuerRef"]["name"]]["spec"]
    apiservices = of_kind(objects, "APIService")
    assert apiservices
    for a in apiservices:
        inject = a["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
        assert inject == f"{NAMESPACE}/{cert['metadata']['name']}"
        assert "caBundle" not in a["spec"]  # cainjector's to fill; an apply must not blank it


# --- the scripts --------------------------------------------------------------------------------

SCRIPTS = ["gen-certs.sh", "deploy.sh", "run-local.sh", "dev-cluster.sh"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_scripts_are_strict_and_explain_themselves(script: str) -> None:
    path = ROOT / "hack" / script
    text = path.read_text()
    assert "set -euo pipefail" in text
    assert os.access(path, os.X_OK), f"{script} is not executable"
    assert _run(["bash", "-n", str(path)]).returncode == 0
    proc = _run(["bash", str(path), "--help"])
    assert proc.returncode == 0 and proc.stdout.lower().startswith("usage: hack/" + script)
    bad = _run(["bash", str(path), "--no-such-option"])
    assert bad.returncode == 2 and "unknown" in bad.stderr
    if shutil.which("shellcheck"):
        check = _run(["shellcheck", "-S", "warning", str(path)])
        assert check.returncode == 0, check.stdout


# --- the manifests' flags and probes against the running server ------------------------------------


class _HTTPS(http.client.HTTPSConnection):
    """Connects to 127.0.0.1 but checks the certificate for the name the aggregator uses."""

    def __init__(self, port: int, ctx: ssl.SSLContext, server_name: str) -> None:
        super().__init__("127.0.0.1", port, timeout=patience(5))
        self._ctx, self._name = ctx, server_name

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._ctx.wrap_socket(sock, server_hostname=self._name)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(params=["kubevirt-group", "own-group"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, int, ssl.SSLContext, int]]:
    """The server started with an overlay's Deployment args, its files moved to tmp: the overlay, the
    API port, a context trusting the serving certificate, the probe port."""
    overlay: str = request.param
    objects = rendered(overlay)
    args = container(objects)["args"]
    serve_options(args)  # skips while serve has no flags
    certs = tmp_path / "certs"
    proc = _run(["bash", str(ROOT / "hack/gen-certs.sh"), "--out", str(certs)])
    assert proc.returncode == 0, proc.stderr
    port = _free_port()
    probe_port = _free_port()
    local = []
    for arg in args:
        flag, _, _value = arg.partition("=")
        local.append(
            {
                "--bind-address": "--bind-address=127.0.0.1",  # loopback only in tests
                "--secure-port": f"--secure-port={port}",
                "--tls-cert-file": f"--tls-cert-file={certs / 'tls.crt'}",
                "--tls-private-key-file": f"--tls-private-key-file={certs / 'tls.key'}",
                "--cert-dir": f"--cert-dir={tmp_path / 'cert-dir'}",
                "--health-probe-bind-address": f"--health-probe-bind-address=127.0.0.1:{probe_port}",
            }.get(flag, arg)
        )
    # The folder source stands in for the cluster: the one difference from the Deployment.
    cmd = [sys.executable, "-m", "apiserver.cli", "serve", *local, "--manifests", str(ROOT / "examples")]
    server = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ctx = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    try:
        deadline = time.monotonic() + patience(30)
        while True:
            try:
                conn = _HTTPS(port, ctx, SERVICE_DNS)
                conn.request("GET", "/livez")
                conn.getresponse().read()
                conn.close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    server.kill()
                    pytest.fail(f"the server did not start: {' '.join(cmd)}\n{server.communicate()[1]}")
                time.sleep(0.2)
        yield overlay, port, ctx, probe_port
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def test_the_probe_paths_and_apiservice_paths_answer_with_the_generated_certificate(
    served: tuple[str, int, ssl.SSLContext, int],
) -> None:
    overlay, port, ctx, probe_port = served
    objects = rendered(overlay)
    c = container(objects)
    # The kubelet's probes, as it sends them: plain HTTP to the probe port, a new connection each.
    probes = [(c[p]["httpGet"]["path"], True) for p in ("readinessProbe", "livenessProbe")]
    # What the aggregator's availability check fetches for each APIService.
    apis = [f"/apis/{a['spec']['group']}/{a['spec']['version']}" for a in of_kind(objects, "APIService")]
    for path, probe in [*probes, *((p, False) for p in apis)]:
        deadline = time.monotonic() + patience(30)
        while True:
            conn: http.client.HTTPConnection = (
                http.client.HTTPConnection("127.0.0.1", probe_port, timeout=5)
                if probe
                else _HTTPS(port, ctx, SERVICE_DNS)
            )
            conn.request("GET", path, headers={"User-Agent": "kube-probe/1.28", "Connection": "close"})
            response = conn.getresponse()
            body = response.read()
            conn.close()
            if response.status == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.2)  # /readyz turns ready once the source has loaded
        assert response.status == 200, f"GET {path}: {response.status} {body[:300]!r}"


# --- hack/run-local.sh against the fake Kubernetes API ---------------------------------------------


async def test_run_local_serves_the_kubeconfig_cluster_to_kubectl_with_the_users_credentials(
    tmp_path: Path,
) -> None:
    """The script's whole flow: the server reads the cluster of the kubeconfig, and kubectl calls it
    through the client kubeconfig the script writes, authenticated by the cluster (TokenReview)."""
    import asyncio

    from tests.support.fakekube import FakeKube
    from tests.support.fakekube.reviews import Reviews, Rule
    from tests.support.fakekube.testing import kubeconfig

    kubectl = _kubectl()
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "hack", root / "hack")
    fake = FakeKube()
    reviews = Reviews.install(fake)
    reviews.tokens["alice-token"] = ("alice", ["system:authenticated"])
    reviews.rules.append(Rule(answer="allow", user="alice"))
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                fake.create(doc)
    await fake.start()
    port = _free_port()
    env = {
        **os.environ,
        "KUBECONFIG": kubeconfig(fake, tmp_path / "user.kubeconfig", token="alice-token"),
        "KUBEVIRT_EXPAND": str(Path(sys.executable).parent / "kubevirt-expand"),
    }
    server = await asyncio.create_subprocess_exec(
        "bash",
        str(root / "hack/run-local.sh"),
        "--port",
        str(port),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    client = root / f".certs/run-local/{port}/client.kubeconfig"
    vm = "/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachines/fedora/expand-spec"
    try:
        deadline = time.monotonic() + patience(60)
        while True:
            call = await asyncio.create_subprocess_exec(
                kubectl,
                "--kubeconfig",
                str(client),
                "get",
                "--raw",
                vm,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await call.communicate()
            if call.returncode == 0:
                break
            if server.returncode is not None or time.monotonic() > deadline:
                assert server.stdout is not None
                log = (await server.stdout.read()).decode() if server.returncode is not None else ""
                pytest.fail(f"kubectl never got the VM: {err.decode()}\n{log[-3000:]}")
            await asyncio.sleep(0.3)
        expanded = yaml.safe_load(out)
        assert expanded["kind"] == "VirtualMachine" and expanded["metadata"]["name"] == "fedora"
        assert "instancetype" not in expanded["spec"]  # rendered, matchers stripped
        assert reviews.token_reviews, "the caller was authenticated by the cluster"
        # ... and authorized by it (kubectl may ask /version too).
        assert {r["spec"]["user"] for r in reviews.access_reviews} == {"alice"}
        assert any(
            r["spec"].get("resourceAttributes", {}).get("subresource") == "expand-spec"
            for r in reviews.access_reviews
        )
        # The user's credentials are in the client kubeconfig, the server's CA beside them; the serving
        # certificate names 127.0.0.1 and localhost, so no tls-server-name is needed (nor by curl --cacert).
        config = yaml.safe_load(client.read_text())
        (cluster,) = config["clusters"]
        assert cluster["cluster"]["server"] == f"https://127.0.0.1:{port}"
        assert "tls-server-name" not in cluster["cluster"]
        assert config["users"][0]["user"]["token"] == "alice-token"
        ca_file = root / f".certs/run-local/{port}/ca.crt"
        for host in ("127.0.0.1", "localhost"):  # the name checked, as curl --cacert does
            assert await asyncio.to_thread(_answers, port, ca_file, host)
        # A second instance on another port writes a folder of its own: the first's kubectl is unmoved.
        port2 = _free_port()
        second = await asyncio.create_subprocess_exec(
            "bash",
            str(root / "hack/run-local.sh"),
            "--port",
            str(port2),
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            client2 = root / f".certs/run-local/{port2}/client.kubeconfig"
            deadline = time.monotonic() + 60
            ca_file2 = root / f".certs/run-local/{port2}/ca.crt"
            while not (client2.exists() and await asyncio.to_thread(_answers, port2, ca_file2)):
                assert second.returncode is None and time.monotonic() < deadline, "no second instance"
                await asyncio.sleep(0.3)
            assert yaml.safe_load(client2.read_text())["clusters"][0]["cluster"]["server"].endswith(
                f":{port2}"
            )
            assert yaml.safe_load(client.read_text())["clusters"][0]["cluster"]["server"].endswith(f":{port}")
        finally:
            await _terminate(second)
    finally:
        await _terminate(server)
        await fake.stop()


def _answers(port: int, ca_file: Path, host: str = "127.0.0.1") -> bool:
    """Whether https://HOST:PORT/readyz answers 200 with a certificate of that CA naming HOST."""
    if not ca_file.exists():
        return False
    try:
        context = ssl.create_default_context(cafile=str(ca_file))
        with urllib.request.urlopen(f"https://{host}:{port}/readyz", context=context, timeout=5) as resp:
            return bool(resp.status == 200)
    except (OSError, ssl.SSLError):
        return False


async def _terminate(process: Any) -> None:
    import asyncio

    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), 20)
        except TimeoutError:
            process.kill()
            await process.wait()


# --- hack/deploy.sh's steps, with kubectl's cluster calls answered by a recording stand-in ------------

KUBECTL_STANDIN = r"""#!/usr/bin/env bash
# Renders with the real kubectl; answers cluster calls as FAKE_* say; records every call.
echo "$*" >> "$CALLS"
case "$1" in
  kustomize) exec "$REAL_KUBECTL" "$@" ;;
  get)
    if [[ "$2" == --raw && "$3" == /version ]]; then
      [[ "${FAKE_REACH_RC:-0}" == 0 ]] || echo "dial tcp 127.0.0.1:6443: connect: connection refused" >&2
      exit "${FAKE_REACH_RC:-0}"
    fi
    if [[ "$2" == crd ]]; then exit "${FAKE_CRD_RC:-0}"; fi
    if [[ "$2" == apiservices ]]; then printf '%s' "${FAKE_APISERVICES:-}"; exit 0; fi
    if [[ "$2" == apiservice && "$*" == *jsonpath=\{.spec.service* ]]; then
      printf '%s' "${FAKE_OWNER:-}"; [[ -n "${FAKE_OWNER:-}" ]] || exit 1; exit 0
    fi
    exit 0 ;;
  rollout) exit "${FAKE_ROLLOUT_RC:-0}" ;;
  wait) exit "${FAKE_WAIT_RC:-0}" ;;
  *) exit 0 ;;
esac
"""


def _deploy(
    repo: Path, tmp_path: Path, *args: str, **fake: str
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    standin = tmp_path / "kubectl"
    standin.write_text(KUBECTL_STANDIN)
    standin.chmod(0o755)
    calls = tmp_path / "calls"
    calls.write_text("")
    env = {**os.environ, "KUBECTL": str(standin), "REAL_KUBECTL": _kubectl(), "CALLS": str(calls)}
    env.update({f"FAKE_{k.upper()}": v for k, v in fake.items()})
    proc = _run(["bash", str(repo / "hack/deploy.sh"), "--timeout", "30", *args], env=env)
    return proc, [c for c in calls.read_text().splitlines() if not c.startswith("kustomize")]


def test_deploy_applies_then_waits_for_the_rollout_and_every_apiservice(
    repo_copy: Path, tmp_path: Path
) -> None:
    proc, calls = _deploy(repo_copy, tmp_path, "kubevirt-group")
    assert proc.returncode == 0, proc.stderr
    applied = [c for c in calls if c.startswith("apply -f ")]
    assert len(applied) == 1
    objects = [d for d in yaml.safe_load_all(Path(applied[0].split()[-1]).read_text()) if d]
    assert {o["metadata"]["name"] for o in of_kind(objects, "APIService")} == {
        "v1.subresources.kubevirt.io",
        "v1alpha3.subresources.kubevirt.io",
        "v1.expand.kubevirt-expand.io",
    }
    rest = calls[calls.index(applied[0]) + 1 :]
    assert rest[0].startswith("-n kubevirt-expand rollout status deploy/kubevirt-expand")
    waited = sorted(c.split()[2] for c in rest if c.startswith("wait --for=condition=Available"))
    assert waited == [
        "apiservice/v1.expand.kubevirt-expand.io",
        "apiservice/v1.subresources.kubevirt.io",
        "apiservice/v1alpha3.subresources.kubevirt.io",
    ]
    assert "kubectl get --raw /apis/subresources.kubevirt.io" in proc.stdout


def test_deploy_explains_an_apiservice_that_does_not_become_available(
    repo_copy: Path, tmp_path: Path
) -> None:
    proc, _ = _deploy(repo_copy, tmp_path, "own-group", wait_rc="1")
    assert proc.returncode == 1
    assert "APIService v1.expand.kubevirt-expand.io is not Available" in proc.stderr
    assert "x509: certificate signed by unknown authority" in proc.stderr  # the hints
    assert "front-proxy CA" in proc.stderr


def test_deploy_will_not_take_over_a_group_version_virt_api_serves(repo_copy: Path, tmp_path: Path) -> None:
    proc, calls = _deploy(repo_copy, tmp_path, "kubevirt-group", owner="kubevirt/virt-api")
    assert proc.returncode == 1
    assert "already routes to kubevirt/virt-api" in proc.stderr and "own-group" in proc.stderr
    assert not [c for c in calls if c.startswith("apply")]
    proc, calls = _deploy(repo_copy, tmp_path, "kubevirt-group", "--takeover", owner="kubevirt/virt-api")
    assert proc.returncode == 0, proc.stderr
    assert [c for c in calls if c.startswith("apply")]


def test_deploy_needs_cert_manager_for_the_cert_manager_overlay(repo_copy: Path, tmp_path: Path) -> None:
    proc, calls = _deploy(repo_copy, tmp_path, "cert-manager", crd_rc="1")
    assert proc.returncode == 1 and "cert-manager is not installed" in proc.stderr
    assert not [c for c in calls if c.startswith("apply")]
    proc, calls = _deploy(repo_copy, tmp_path, "cert-manager")
    assert proc.returncode == 0, proc.stderr
    assert not (repo_copy / ".certs/serving-cert-secret.yaml").exists(), "cert-manager makes the certificate"


def test_deploy_delete_removes_the_apiservices_before_the_server(repo_copy: Path, tmp_path: Path) -> None:
    proc, calls = _deploy(repo_copy, tmp_path, "--delete", "kubevirt-group")
    assert proc.returncode == 0, proc.stderr
    deletes = [c for c in calls if c.startswith("delete")]
    assert deletes[:3] == [
        "delete apiservice v1.expand.kubevirt-expand.io --ignore-not-found",
        "delete apiservice v1.subresources.kubevirt.io --ignore-not-found",
        "delete apiservice v1alpha3.subresources.kubevirt.io --ignore-not-found",
    ]
    assert deletes[3].startswith("delete -f ") and len(deletes) == 4


def test_deploy_writes_nothing_for_a_cluster_it_cannot_reach(repo_copy: Path, tmp_path: Path) -> None:
    proc, calls = _deploy(repo_copy, tmp_path, "own-group", reach_rc="1")
    assert proc.returncode == 1
    assert "cannot reach the cluster" in proc.stderr and "connection refused" in proc.stderr
    assert calls == ["get --raw /version --request-timeout=15s"]
    assert not (repo_copy / ".certs").exists(), "no CA or key written for a cluster that is not there"


def test_a_dry_run_of_delete_says_it_would_delete(repo_copy: Path, tmp_path: Path) -> None:
    proc, calls = _deploy(repo_copy, tmp_path, "--dry-run", "--delete", "own-group")
    assert proc.returncode == 0, proc.stderr
    assert "would be DELETED" in proc.stderr
    assert proc.stdout.startswith(
        "# hack/deploy.sh --dry-run --delete own-group: these objects would be deleted"
    )
    assert calls == [], "a dry run calls no cluster"
    install, _ = _deploy(repo_copy, tmp_path, "--dry-run", "own-group")
    assert "delete" not in install.stdout.splitlines()[0] and "DELETED" not in install.stderr


# What `kubectl get apiservices -o jsonpath=...` lists after `deploy.sh kubevirt-group` beside KubeVirt-less
# built-in ones (a local APIService has no service: "/").
KUBEVIRT_GROUP_INSTALLED = (
    "v1. /\n"
    "v1.expand.kubevirt-expand.io kubevirt-expand/kubevirt-expand\n"
    "v1.subresources.kubevirt.io kubevirt-expand/kubevirt-expand\n"
    "v1alpha3.subresources.kubevirt.io kubevirt-expand/kubevirt-expand\n"
    "v1.metrics.k8s.io kube-system/metrics-server\n"
)


def test_switching_overlays_removes_the_old_apiservices_before_applying(
    repo_copy: Path, tmp_path: Path
) -> None:
    proc, calls = _deploy(repo_copy, tmp_path, "own-group", apiservices=KUBEVIRT_GROUP_INSTALLED)
    assert proc.returncode == 0, proc.stderr
    changes = [c for c in calls if c.startswith(("delete", "apply"))]
    assert changes[:2] == [
        "delete apiservice v1.subresources.kubevirt.io --ignore-not-found",
        "delete apiservice v1alpha3.subresources.kubevirt.io --ignore-not-found",
    ]
    assert changes[2].startswith("apply -f ") and len(changes) == 3  # metrics-server's is left alone
    assert "removing APIService v1.subresources.kubevirt.io: it routes to this server" in proc.stdout
    # Re-applying the same overlay removes nothing.
    proc, calls = _deploy(repo_copy, tmp_path, "kubevirt-group", apiservices=KUBEVIRT_GROUP_INSTALLED)
    assert proc.returncode == 0, proc.stderr
    assert not [c for c in calls if c.startswith("delete")]
    # --delete of the new overlay also removes what the old one left routed here.
    proc, calls = _deploy(repo_copy, tmp_path, "--delete", "own-group", apiservices=KUBEVIRT_GROUP_INSTALLED)
    assert proc.returncode == 0, proc.stderr
    assert [c for c in calls if c.startswith("delete apiservice")] == [
        "delete apiservice v1.expand.kubevirt-expand.io --ignore-not-found",
        "delete apiservice v1.subresources.kubevirt.io --ignore-not-found",
        "delete apiservice v1alpha3.subresources.kubevirt.io --ignore-not-found",
    ]
