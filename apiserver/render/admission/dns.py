"""Host name, subdomain and DNS rules (``vmi-create-admitter.go``: ``validateHostNameNotConformingToDNSLabelRules``,
``validateSubdomainDNSSubdomainRules``, ``validateDNSPolicy``, ``validatePodDNSConfig``; the last two are
KubeVirt's copies of ``kubernetes/pkg/apis/core/validation``)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from apiserver.render.admission._go import Causes, invalid, items, not_supported, required, text
from apiserver.render.admission.k8svalidation import is_dns1123_label, is_dns1123_subdomain

_MAX_NAMESERVERS = 3
_MAX_SEARCH_PATHS = 6
_MAX_SEARCH_CHARS = 256
_DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None", "")


def validate_hostname(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateHostNameNotConformingToDNSLabelRules``."""
    hostname = text(spec, "hostname")
    if not hostname:
        return []
    errors = is_dns1123_label(hostname)
    if not errors:
        return []
    return [
        invalid(
            f"{field}.hostname",
            f"{field}.hostname does not conform to the kubernetes DNS_LABEL rules : {', '.join(errors)}",
        )
    ]


def validate_subdomain(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateSubdomainDNSSubdomainRules``."""
    subdomain = text(spec, "subdomain")
    if not subdomain:
        return []
    errors = is_dns1123_subdomain(subdomain)
    if not errors:
        return []
    return [
        invalid(
            f"{field}.subdomain",
            f"{field}.subdomain does not conform to the kubernetes DNS_SUBDOMAIN rules : {', '.join(errors)}",
        )
    ]


def validate_dns_policy(policy: str, field: str) -> Causes:
    """``validateDNSPolicy`` (called only for a non-empty policy)."""
    if policy in _DNS_POLICIES:
        return []
    valid = "[" + " ".join(_DNS_POLICIES) + "]"
    return [not_supported(field, f"DNSPolicy: {policy} is not supported, valid values: {valid}")]


def _is_ip(value: str) -> bool:
    """Go's ``net.ParseIP``: dotted IPv4 (no leading zeros) or IPv6 (no zone)."""
    if "%" in value:
        return False
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def validate_pod_dns_config(config: Mapping[str, Any] | None, policy: str, field: str) -> Causes:
    """``validatePodDNSConfig``. Its later causes name bare fields (``nameservers``), as KubeVirt's do."""
    causes: Causes = []
    if policy == "None":
        if config is None:
            return [required(field, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not config.get("nameservers"):
            return [
                required("nameservers", "must provide at least one DNS nameserver when `dnsPolicy` is None")
            ]
    if config is None:
        return causes
    nameservers = [s for s in config.get("nameservers") or [] if isinstance(s, str)]
    if len(nameservers) > _MAX_NAMESERVERS:
        shown = "[" + " ".join(nameservers) + "]"
        causes.append(
            invalid("nameservers", f"must not have more than {_MAX_NAMESERVERS} nameservers: {shown}")
        )
    for server in nameservers:
        if not _is_ip(server):
            causes.append(invalid("nameservers", f"must be valid IP address: {server}"))
    searches = [s for s in config.get("searches") or [] if isinstance(s, str)]
    if len(searches) > _MAX_SEARCH_PATHS:
        causes.append(invalid("searchDomains", f"must not have more than {_MAX_SEARCH_PATHS} search paths"))
    if len(" ".join(searches).encode()) > _MAX_SEARCH_CHARS:
        causes.append(
            invalid(
                "searchDomains",
                f"must not have more than {_MAX_SEARCH_CHARS} characters (including spaces) in the search list",
            )
        )
    for search in searches:
        causes.extend(invalid("searchDomains", msg) for msg in is_dns1123_subdomain(search))
    for option in items(config, "options"):
        if not text(option, "name"):
            causes.append(invalid("options", "Option.Name must not be empty"))
    return causes
