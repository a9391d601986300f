"""Client-certificate authentication: a certificate of the client CA names its user (CN) and groups (O)."""

from __future__ import annotations

import logging

from cryptography import x509

from apiserver.auth.certs import CABundle, client_certificate_check, common_name, fingerprint, organizations
from apiserver.auth.identity import CREDENTIAL_ID_KEY, UserInfo

log = logging.getLogger(__name__)


def authenticate(bundle: CABundle | None, cert: x509.Certificate | None) -> UserInfo | None:
    """The certificate's subject as a user, when the client CA issued it; else None."""
    if bundle is None or cert is None:
        return None
    problem, _window = client_certificate_check(cert, bundle)
    if problem is not None:
        log.debug("client certificate %r not accepted: %s", cert.subject.rfc4514_string(), problem)
        return None
    name = common_name(cert.subject)
    if not name:
        log.info("client certificate %r has no common name: not a user", cert.subject.rfc4514_string())
        return None
    return UserInfo(
        name=name,
        groups=organizations(cert.subject),
        extra={CREDENTIAL_ID_KEY: (f"X509SHA256={fingerprint(cert)}",)},
        method="x509",
    )
