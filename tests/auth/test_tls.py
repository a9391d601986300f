"""Serving certificate rotation without a restart, and the start-up rule for authentication."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import aiohttp
import pytest
import trustme

from apiserver.auth.options import AuthConfigError, authentication_enabled
from tests.support.auth_fixtures import auth_env, wait_for


async def _get_livez(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
    writer.write(b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    await reader.readexactly(length)
    return head


async def test_rotated_serving_certificate_is_used_by_new_connections_only(tmp_path: Path) -> None:
    async with auth_env(tmp_path) as env:
        old_ca_file = tmp_path / "old-ca.crt"
        old_ca_file.write_bytes(env.pki.serving_ca_file.read_bytes())
        port = int(env.url.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=env.client_context(trust=old_ca_file), server_hostname="127.0.0.1"
        )
        try:
            assert (await _get_livez(reader, writer)).startswith(b"HTTP/1.1 200")
            old_der = writer.get_extra_info("ssl_object").getpeercert(True)
            generation = env.tls.generation
            env.pki.write_serving(trustme.CA())  # what kubelet does when the Secret changes
            await wait_for(lambda: env.tls.generation > generation)

            # The connection opened before keeps working, with the certificate it was handshaken with.
            assert (await _get_livez(reader, writer)).startswith(b"HTTP/1.1 200")
            assert writer.get_extra_info("ssl_object").getpeercert(True) == old_der
        finally:
            writer.close()
        # New connections get the new certificate: only the new CA verifies them.
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=env.client_context(), server_hostname="127.0.0.1"
        )
        try:
            assert (await _get_livez(reader, writer)).startswith(b"HTTP/1.1 200")
            new_der = writer.get_extra_info("ssl_object").getpeercert(True)
        finally:
            writer.close()
        assert new_der == ssl.PEM_cert_to_DER_cert(env.pki.cert_file.read_text())
        assert new_der != old_der
        async with env.session(trust=old_ca_file) as stale:
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                await stale.get(env.url + "/livez")


async def test_half_written_rotation_keeps_the_previous_certificate(tmp_path: Path) -> None:
    async with auth_env(tmp_path) as env:
        generation = env.tls.generation
        other_key = trustme.CA().issue_cert("x").private_key_pem.bytes()
        env.pki.key_file.write_bytes(other_key)  # the key of another certificate: a half-done rotation
        await env.tls.reload()
        assert env.tls.generation == generation  # nothing new was built
        code, _, _ = await env.call("/livez")
        assert code == 200


@pytest.mark.parametrize(
    ("mode", "folder", "address", "expected"),
    [
        ("auto", True, "127.0.0.1", False),
        ("auto", True, "::1", False),
        ("auto", True, "localhost", False),
        ("auto", True, "0.0.0.0", True),
        ("auto", False, "127.0.0.1", True),
        ("on", True, "127.0.0.1", True),
        ("off", True, "127.0.0.1", False),
    ],
)
def test_when_authentication_is_on(mode: str, folder: bool, address: str, expected: bool) -> None:
    assert authentication_enabled(mode, folder_source=folder, bind_address=address) is expected


@pytest.mark.parametrize(("folder", "address"), [(True, "0.0.0.0"), (True, "10.0.0.5"), (False, "127.0.0.1")])
def test_authentication_off_refused_beyond_folder_on_loopback(folder: bool, address: str) -> None:
    with pytest.raises(AuthConfigError, match="only allowed for the folder source on a loopback address"):
        authentication_enabled("off", folder_source=folder, bind_address=address)
