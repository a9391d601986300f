"""Identity headers from a peer that is not the front proxy (issue 37, finding 5): counted, logged once
per peer and reason, cut short; never a line per request (an 8 KB ``X-Remote-User`` on every
``/readyz?verbose`` wrote 8 KB of log each)."""

from __future__ import annotations

import logging

import pytest
import trustme
from multidict import CIMultiDict

from apiserver.auth.certs import CABundle
from apiserver.auth.requestheader import (
    SHOWN,
    RequestHeaderConfig,
    UntrustedHeaders,
    authenticate,
)

CA = trustme.CA()
CONFIG = RequestHeaderConfig(CABundle.from_pem(CA.cert_pem.bytes(), "test"), ("front-proxy-client",))
HUGE = "u" * 8192


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "apiserver.auth.requestheader"]


def test_a_flood_from_one_peer_is_one_short_line_and_a_count(caplog: pytest.LogCaptureFixture) -> None:
    untrusted = UntrustedHeaders()
    headers = CIMultiDict({"X-Remote-User": HUGE, "X-Remote-Group": "system:masters"})
    with caplog.at_level(logging.WARNING):
        for _ in range(300):
            assert authenticate(CONFIG, None, headers, peer="10.0.0.7", untrusted=untrusted) is None
    (line,) = _lines(caplog)
    assert "10.0.0.7" in line and "without a client certificate" in line
    assert "u" * SHOWN in line and "u" * (SHOWN + 1) not in line and "(8192 characters)" in line
    assert len(line) < 600
    assert untrusted.count == 300


def test_each_peer_and_reason_is_logged_once_up_to_a_bound(caplog: pytest.LogCaptureFixture) -> None:
    untrusted = UntrustedHeaders(max_peers=3)
    headers = CIMultiDict({"X-Remote-User": "alice"})
    with caplog.at_level(logging.WARNING):
        for peer in ("10.0.0.1", "10.0.0.2", "10.0.0.1", "10.0.0.3", "10.0.0.4", "10.0.0.5"):
            authenticate(CONFIG, None, headers, peer=peer, untrusted=untrusted)
    lines = _lines(caplog)
    assert [line.split()[3] for line in lines[:3]] == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    assert len(lines) == 4 and "no longer logged, still counted" in lines[3]
    assert untrusted.count == 6


def test_headers_without_a_user_are_not_noted() -> None:
    untrusted = UntrustedHeaders()
    authenticate(CONFIG, None, CIMultiDict({"X-Remote-Group": "g"}), peer="p", untrusted=untrusted)
    assert untrusted.count == 0
