"""Serving: TLS, certificates, bind-address safety, graceful shutdown, the serve command line."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import ssl
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
import trustme
from cryptography import x509

from apiserver.documents.manifests import read_manifest_paths
from apiserver.http.server import CERT_NAME, ServeError, Server, generate_self_signed
from apiserver.http.settings import Settings
from tests.support.http_helpers import (
    EXAMPLES,
    REPO,
    MemorySource,
    ServerProcess,
    client_ssl,
    put_path,
    running_server,
    start_process,
    vm_path,
)
from tests.support.patience import patience
from tests.support.waiting import eventually, poll


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m apiserver.cli ARGS`` from the repository, its output as text."""
    return subprocess.run(
        [sys.executable, "-m", "apiserver.cli", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=patience(60),
        check=False,
    )


@pytest.mark.parametrize("address", ["0.0.0.0", "10.1.2.3", "::"])
def test_refuses_a_non_loopback_address_without_authentication(address: str) -> None:
    with pytest.raises(ServeError, match="authentication is not configured"):
        Server(Settings(bind_address=address), MemorySource())


def test_loopback_addresses_are_allowed_and_authentication_lifts_the_refusal() -> None:
    for address in ("127.0.0.1", "::1", "localhost"):
        Server(Settings(bind_address=address), MemorySource())
    Server(Settings(bind_address="0.0.0.0"), MemorySource(), authentication=True)


def test_cli_refuses_a_public_bind_address(tmp_path: Path) -> None:
    result = _cli(
        "serve", "--manifests", str(EXAMPLES), "--bind-address", "0.0.0.0", "--cert-dir", str(tmp_path)
    )
    # Without authentication the server refuses; with it (it turns on for a public address) it needs a
    # cluster for reviews, which this machine has not: either way a clear start-up error.
    assert result.returncode == 2
    assert "authentication" in result.stderr
    assert "Traceback" not in result.stderr


def test_cli_help_lists_the_options() -> None:
    result = _cli("serve", "--help")
    assert result.returncode == 0
    for option in (
        "--manifests",
        "--api-group",
        "--api-versions",
        "--kubevirt-error-codes",
        "--request-timeout",
        "--bind-address",
        "--secure-port",
        "--tls-cert-file",
        "--tls-private-key-file",
        "--cert-dir",
        "--tls-sni",
        "--log-format",
        "--log-level",
    ):
        assert option in result.stdout


def test_cli_rejects_a_missing_manifest_folder(tmp_path: Path) -> None:
    result = _cli("serve", "--manifests", str(tmp_path / "nope"))
    assert result.returncode == 2
    assert "not a directory" in result.stderr


def test_self_signed_certificate_names_and_reuse(tmp_path: Path) -> None:
    names = ["localhost", "127.0.0.1", "expand.kubevirt.svc"]
    cert_path, key_path = generate_self_signed(tmp_path, names)
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(san.get_values_for_type(x509.DNSName)) == {"localhost", "expand.kubevirt.svc"}
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert key_path.stat().st_mode & 0o077 == 0
    first = cert_path.read_bytes()
    generate_self_signed(tmp_path, names)
    assert cert_path.read_bytes() == first  # still valid: reused
    generate_self_signed(tmp_path, [*names, "new.name"])
    assert cert_path.read_bytes() != first  # a new name: regenerated


async def test_serves_tls_12_or_newer_only(tmp_path: Path) -> None:
    async with running_server(MemorySource(), tmp_path) as srv:
        port = srv.server.port
        ok = client_ssl(srv.ca_file)
        old = client_ssl(srv.ca_file)
        old.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # TLSv1_1 is deprecated: that is the point
            old.maximum_version = ssl.TLSVersion.TLSv1_1

        def handshake(context: ssl.SSLContext) -> str | None:
            with (
                socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
                context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
            ):
                return tls.version()

        assert await asyncio.to_thread(handshake, ok) in ("TLSv1.2", "TLSv1.3")
        with pytest.raises((ssl.SSLError, OSError)):
            await asyncio.to_thread(handshake, old)


async def test_tls_12_suites_are_go_defaults_as_kube_apiservers(tmp_path: Path) -> None:
    """TLS 1.2 with ECDHE and AEAD (or Go's ECDHE CBC-SHA), never the CBC-SHA256/384 suites OpenSSL
    would add, nor static RSA; the authenticated listener's context has the same suites."""
    from apiserver.auth.tls import TLS12_CIPHERS, ServingTLS
    from apiserver.http.server import server_ssl_context

    async with running_server(MemorySource(), tmp_path) as srv:
        port = srv.server.port

        def handshake(ciphers: str) -> str | None:
            context = client_ssl(srv.ca_file)
            context.maximum_version = ssl.TLSVersion.TLSv1_2
            context.set_ciphers(ciphers)
            with (
                socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
                context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
            ):
                cipher = tls.cipher()
                return cipher[0] if cipher else None

        assert await asyncio.to_thread(handshake, "ECDHE-ECDSA-AES128-GCM-SHA256") == (
            "ECDHE-ECDSA-AES128-GCM-SHA256"
        )
        for refused in ("ECDHE-ECDSA-AES128-SHA256", "ECDHE-ECDSA-AES256-SHA384", "AES128-GCM-SHA256"):
            with pytest.raises((ssl.SSLError, OSError)):
                await asyncio.to_thread(handshake, refused)
    cert, key = tmp_path / "certs" / "apiserver.crt", tmp_path / "certs" / "apiserver.key"
    plain = server_ssl_context(cert, key)
    tls12 = {c["name"] for c in plain.get_ciphers() if c["protocol"] != "TLSv1.3"}
    assert tls12 == set(TLS12_CIPHERS.split(":"))
    serving = ServingTLS(str(cert), str(key))
    names = {c["name"] for c in serving.context.get_ciphers() if c["protocol"] != "TLSv1.3"}
    assert names == tls12


async def test_serves_given_certificate_files(tmp_path: Path) -> None:
    ca = trustme.CA()
    leaf = ca.issue_cert("127.0.0.1", "localhost")
    cert_file, key_file, ca_file = tmp_path / "tls.crt", tmp_path / "tls.key", tmp_path / "ca.crt"
    leaf.private_key_and_cert_chain_pem.write_to_path(str(cert_file))
    leaf.private_key_pem.write_to_path(str(key_file))
    ca.cert_pem.write_to_path(str(ca_file))
    async with running_server(
        MemorySource(),
        tmp_path,
        tls_cert_file=str(cert_file),
        tls_private_key_file=str(key_file),
        ca_file=ca_file,
    ) as srv:
        assert (await srv.get("/livez")).status == 200
    assert not (tmp_path / "certs" / CERT_NAME).exists()


async def test_in_flight_request_finishes_during_shutdown(tmp_path: Path) -> None:
    vm = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm1", "namespace": "default"},
    }
    source = MemorySource([vm], delay=1.0)
    async with running_server(source, tmp_path) as srv:
        slow = asyncio.create_task(srv.get(vm_path(name="nosuch")))
        await eventually(lambda: source.reads, 10, "the request reaching the source")  # in flight
        stopping = asyncio.create_task(srv.server.stop())
        reply = await slow
        await stopping
        assert reply.status == 404  # answered, not cut off
        with pytest.raises(OSError):
            await asyncio.open_connection("127.0.0.1", srv.server.port)


def _read_response(tls: ssl.SSLSocket) -> bytes:
    data = b""
    while chunk := tls.recv(65536):
        data += chunk
    return data


def test_sigterm_stops_the_process_cleanly(tmp_path: Path) -> None:
    """SIGTERM runs the same graceful stop as test_in_flight_request_finishes_during_shutdown."""
    proc = start_process(tmp_path, "--manifests", str(EXAMPLES), "--log-format", "json")
    try:
        secret = "do-not-log-this-password"
        body = json.dumps(
            {"metadata": {"name": "vm1", "namespace": "elsewhere"}, "spec": {"x": secret}}
        ).encode()
        head = (
            f"PUT {put_path('default')} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        raw = socket.create_connection(("127.0.0.1", proc.port), timeout=10)
        with client_ssl(proc.ca_file).wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(head + body)
            assert tls.recv(65536).startswith(b"HTTP/1.1 422")
            # The keep-alive connection is still open when the signal arrives.
            started = time.monotonic()
            proc.process.send_signal(signal.SIGTERM)
            assert proc.process.wait(patience(20)) == 0
            # Not held open by the idle connection for --idle-timeout (2 min).
            assert time.monotonic() - started < patience(10)
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", proc.port), timeout=2).close()
        log = proc.log()
        lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
        access = [e for e in lines if e.get("logger") == "apiserver.access"]
        assert any(
            e["method"] == "PUT" and e["code"] == 422 and e["path"] == put_path("default") for e in access
        )
        assert any("shutting down" in e["msg"] for e in lines)
        assert any(e["msg"] == "server stopped" for e in lines)
        assert secret not in log
    finally:
        proc.stop()


def test_text_access_log_from_the_process(tmp_path: Path) -> None:
    proc = start_process(tmp_path, "--manifests", str(EXAMPLES))
    try:
        context = client_ssl(proc.ca_file)
        with (
            socket.create_connection(("127.0.0.1", proc.port), timeout=10) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
        ):
            tls.sendall(
                f"GET {vm_path(name='nosuch')} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
            )
            assert _read_response(tls).startswith(b"HTTP/1.1 404")
    finally:
        assert proc.stop() == 0
    assert f"apiserver.access: GET {vm_path(name='nosuch')} 404 " in proc.log()


def _get(proc: ServerProcess, path: str) -> bytes:
    context = client_ssl(proc.ca_file)
    with (
        socket.create_connection(("127.0.0.1", proc.port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        tls.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        return _read_response(tls)


def test_a_log_written_into_the_manifests_folder_does_not_wake_the_server(tmp_path: Path) -> None:
    """``serve --manifests . > server.log``: each log line used to be a change of the folder, which
    logged a line ('1 change detected') and re-read the folder, forever."""
    for manifest in EXAMPLES.glob("*.yaml"):
        (tmp_path / manifest.name).write_bytes(manifest.read_bytes())
    proc = start_process(tmp_path, "--manifests", str(tmp_path))  # its log is tmp_path/server.log
    try:
        # A change to a manifest is seen: the folder is watched (and the log has had lines written since).
        assert b'"name":"fedora"' in _get(proc, vm_path(name="fedora"))
        text = (tmp_path / "vm-fedora.yaml").read_text()
        (tmp_path / "vm-fedora.yaml").write_text(text.replace("name: fedora\n", "name: fedora-renamed\n", 1))
        poll(
            "the renamed VM served",
            lambda: _get(proc, vm_path(name="fedora-renamed"))[:20],
            lambda head: b" 200 OK" in head,
        )
        # ...and its access line written (lines are written in batches, a moment after the answer).
        log = poll("the access line", proc.log, lambda log: "fedora-renamed/expand-spec 200 " in log)
        watched = len(log.splitlines())
        # A window for a loop to show (each log line a change of the folder, each change a line): what is
        # tested is that nothing happens in it, with the watch known to be live.
        time.sleep(1.5)
        lines = proc.log().splitlines()
        # The collector's one-time freeze is logged once the source is ready, which under load can come after
        # the first answers: a line of its own, not a change of the folder.
        assert [line for line in lines[watched:] if "apiserver.runtime.gctune" not in line] == [], lines
        assert not [line for line in lines if "change" in line], lines
        assert len([line for line in lines if "apiserver.access" not in line]) < 10, lines
    finally:
        assert proc.stop() == 0


def test_cli_names_the_flag_when_the_port_is_taken(tmp_path: Path) -> None:
    """A second server on a busy port says how to pick another one, without a traceback."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _cli(
            "serve", "--manifests", str(EXAMPLES), "--secure-port", str(port), "--cert-dir", str(tmp_path)
        )
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "choose another port with --secure-port" in result.stderr
    assert "Traceback" not in result.stderr


def test_cli_help_example_names_a_vm_of_the_examples() -> None:
    """The curl line of ``serve --help`` works against the folder its other line serves."""
    result = _cli("serve", "--help")
    vms = {
        obj["metadata"]["name"]
        for _, obj in read_manifest_paths([str(EXAMPLES)])
        if obj.get("kind") == "VirtualMachine"
    }
    named = [
        line.split("/virtualmachines/")[1].split("/")[0]
        for line in result.stdout.splitlines()
        if line.strip().startswith("curl ")
    ]
    assert named and set(named) <= vms, (named, vms)
