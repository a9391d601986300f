"""CA bundles and the checks a client certificate must pass against one of them.

OpenSSL has already verified the peer's chain during the handshake, against the union of every CA the
server trusts. What is left to decide per request is *which* bundle the certificate was issued by, and
whether it still is: the bundles can change while a keep-alive connection stays open, so the check is
repeated against the bundle current at the time of the request.
"""

from __future__ import annotations

import datetime
import hashlib
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


class BundleError(ValueError):
    """A CA bundle that cannot be used (not PEM, no certificate in it)."""


def common_name(name: x509.Name) -> str:
    values = name.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(values[0].value) if values else ""


def organizations(name: x509.Name) -> tuple[str, ...]:
    return tuple(str(a.value) for a in name.get_attributes_for_oid(NameOID.ORGANIZATION_NAME))


def fingerprint(cert: x509.Certificate) -> str:
    return hashlib.sha256(cert.public_bytes(Encoding.DER)).hexdigest()


@dataclass(frozen=True, slots=True)
class CABundle:
    """A set of trusted CA certificates, kept with the PEM it came from (for the SSL context)."""

    pem: bytes
    certificates: tuple[x509.Certificate, ...]
    origin: str  # "configmap kube-system/extension-apiserver-authentication" or a file path

    @classmethod
    def from_pem(cls, pem: bytes, origin: str) -> CABundle:
        try:
            certs = tuple(x509.load_pem_x509_certificates(pem))
        except ValueError as exc:
            raise BundleError(f"{origin}: not a PEM bundle of certificates: {exc}") from None
        if not certs:
            raise BundleError(f"{origin}: no certificate in the bundle")
        return cls(pem, certs, origin)

    def describe(self) -> str:
        """Name each CA the way an operator compares it with ``openssl x509 -noout -subject``."""
        parts = [f"{c.subject.rfc4514_string()} (sha256 {fingerprint(c)[:16]})" for c in self.certificates]
        return f"[{'; '.join(parts)}] from {self.origin}"

    def issuer_of(self, cert: x509.Certificate) -> x509.Certificate | None:
        """The CA in this bundle that signed ``cert``, if any."""
        for ca in self.certificates:
            if ca.subject != cert.issuer:
                continue
            try:
                cert.verify_directly_issued_by(ca)
            except (InvalidSignature, ValueError, TypeError):  # TypeError: unsupported key type
                continue
            return ca
        return None


def check_client_certificate(
    cert: x509.Certificate, bundle: CABundle, now: datetime.datetime | None = None
) -> str | None:
    """Why ``cert`` cannot authenticate a client against ``bundle``; None when it can."""
    return _check(cert, bundle, now or datetime.datetime.now(datetime.UTC))[0]


Window = tuple[float, float]  # POSIX seconds [from, until) in which an answer holds
_ALWAYS: Window = (-math.inf, math.inf)


def _check(cert: x509.Certificate, bundle: CABundle, now: datetime.datetime) -> tuple[str | None, Window]:
    """The answer and the window of time in which it stays the same (empty when it is time-bound)."""
    issuer = bundle.issuer_of(cert)
    if issuer is None:
        issued_by = cert.issuer.rfc4514_string()
        return f"certificate issued by {issued_by!r} is not signed by a CA of {bundle.describe()}", _ALWAYS
    for c in (cert, issuer):
        if not c.not_valid_before_utc <= now <= c.not_valid_after_utc:
            stamp = now.timestamp()
            return f"certificate {c.subject.rfc4514_string()!r} is not valid at {now.isoformat()}", (
                stamp,
                stamp,
            )
    window = (
        max(cert.not_valid_before_utc, issuer.not_valid_before_utc).timestamp(),
        min(cert.not_valid_after_utc, issuer.not_valid_after_utc).timestamp(),
    )
    try:
        usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        return None, window
    if (
        ExtendedKeyUsageOID.CLIENT_AUTH not in usages
        and ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE not in usages
    ):
        return "certificate is not meant for client authentication (no clientAuth extended key usage)", window
    return None, window


# (certificate, bundle) by identity -> the answer and its window: the signature check is the costly part
# of every request from the aggregator, whose certificate and the bundle objects stay the same: 199 us
# against 1.4 us remembered (timed in process), about a whole warm request's CPU, on every request whose
# admission is not remembered (hack/benchmarks/switches.py repeats its requests: 1.0x there).
_CHECKS: dict[tuple[int, int], tuple[x509.Certificate, CABundle, str | None, Window]] = {}
_CHECKS_MAX = 1024


def client_certificate_check(cert: x509.Certificate, bundle: CABundle) -> tuple[str | None, Window]:
    """``check_client_certificate`` now, with the window in which its answer holds (remembered for the
    same certificate and bundle objects while the clock is inside that window)."""
    key = (id(cert), id(bundle))
    now = time.time()
    known = _CHECKS.get(key)
    if known is not None and known[0] is cert and known[1] is bundle and known[3][0] <= now < known[3][1]:
        return known[2], known[3]
    refusal, window = _check(cert, bundle, datetime.datetime.fromtimestamp(now, datetime.UTC))
    if len(_CHECKS) >= _CHECKS_MAX:
        _CHECKS.clear()
    _CHECKS[key] = (cert, bundle, refusal, window)
    return refusal, window


def load_der(der: bytes) -> x509.Certificate | None:
    try:
        return x509.load_der_x509_certificate(der)
    except ValueError:
        return None


def union_pem(bundles: Sequence[CABundle | None]) -> bytes:
    """One PEM blob with every CA of ``bundles``, for ``SSLContext.load_verify_locations``."""
    return b"\n".join(b.pem.strip() + b"\n" for b in bundles if b is not None)
