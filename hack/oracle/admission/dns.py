"""DNS: hostname, subdomain, DNS policy and config (``apiserver/render/admission/dns.py``)."""

from __future__ import annotations

from typing import Any

from hack.oracle.admission.base import INV, NAMES, NS, REQ, VMI_CREATE, check, go_file, sweep, tspec

_DNS_CONFIGS: list[Any] = [
    None,
    {},
    {"nameservers": ["1.1.1.1"]},
    {"nameservers": ["1.1.1.1", "8.8.8.8", "9.9.9.9", "1.0.0.1"]},
    {"nameservers": ["bogus", "::1", "1.2.3.4.5", "fe80::1%eth0"]},
    {"nameservers": ["1.1.1.1"], "searches": ["a", "b", "c", "d", "e", "f", "g"]},
    {"nameservers": ["1.1.1.1"], "searches": ["x" * 60 + str(i) for i in range(5)]},
    {"nameservers": ["1.1.1.1"], "searches": ["Bad_Domain", "ok.example", "-x", "a..b"]},
    {"nameservers": ["1.1.1.1"], "options": [{"name": ""}, {"name": "ndots", "value": "2"}, {}]},
    {"searches": ["a.b"]},
    {"nameservers": []},
    {"nameservers": ["::ffff:1.2.3.4", "01.2.3.4", "1.2.3.04"]},
]


def hostname_variants() -> None:
    """validateHostNameNotConformingToDNSLabelRules, validateSubdomainDNSSubdomainRules."""
    sweep("dns", "hostname={}", NAMES, lambda vm, v: tspec(vm).__setitem__("hostname", v))
    sweep("dns", "subdomain={}", NAMES, lambda vm, v: tspec(vm).__setitem__("subdomain", v))


def policy_variants() -> None:
    """validateDNSPolicy, validatePodDNSConfig."""
    sweep(
        "dns",
        "dnsPolicy={}",
        ["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None", "", "bogus", "clusterfirst"],
        lambda vm, v: tspec(vm).__setitem__("dnsPolicy", v),
    )
    for policy in ("None", "ClusterFirst"):
        sweep(
            "dns",
            f"dnsPolicy {policy} dnsConfig={{}}",
            _DNS_CONFIGS,
            lambda vm, v, p=policy: tspec(vm).update(
                {"dnsPolicy": p, **({"dnsConfig": v} if v is not None else {})}
            ),
        )


def hostname_checks() -> None:
    go_file(VMI_CREATE, "dns")
    check(
        "dns.hostname",
        "validateHostNameNotConformingToDNSLabelRules",
        INV,
        "does not conform to the kubernetes DNS_LABEL rules",
        field="hostname",
    )
    check(
        "dns.subdomain",
        "validateSubdomainDNSSubdomainRules",
        INV,
        "does not conform to the kubernetes DNS_SUBDOMAIN rules",
    )


def policy_checks() -> None:
    go_file(VMI_CREATE, "dns")
    check("dns.policy", "validateDNSPolicy", NS, "DNSPolicy: ")
    check("dns.none-config", "validatePodDNSConfig", REQ, "must provide `dnsConfig` when `dnsPolicy` is None")
    check("dns.none-nameserver", "validatePodDNSConfig", REQ, "must provide at least one DNS nameserver")
    check("dns.nameserver-count", "validatePodDNSConfig", INV, "must not have more than 3 nameservers")
    check("dns.nameserver-ip", "validatePodDNSConfig", INV, "must be valid IP address")
    check("dns.search-count", "validatePodDNSConfig", INV, "must not have more than 6 search paths")
    check("dns.search-chars", "validatePodDNSConfig", INV, "must not have more than 256 characters")
    check(
        "dns.search-domain",
        "validatePodDNSConfig (IsDNS1123Subdomain)",
        INV,
        "re:^(a lowercase RFC 1123 subdomain|must be no more than 253)",
        field="searchDomains",
    )
    check("dns.option-name", "validatePodDNSConfig", INV, "Option.Name must not be empty")
