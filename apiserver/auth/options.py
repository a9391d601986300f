"""The authentication and authorization flags (named as in k8s.io/apiserver) and what they build."""

from __future__ import annotations

import argparse
import ipaddress
import ssl
from dataclasses import dataclass, field
from typing import Any

from apiserver.auth.authorization import DEFAULT_ALLOWED_TTL, DEFAULT_DENIED_TTL, SubjectAccessReviewer
from apiserver.auth.config import TrustOptions, TrustState, split_list
from apiserver.auth.configmap import ConfigMapWatcher
from apiserver.auth.filewatch import DEFAULT_POLL_INTERVAL, FileWatcher
from apiserver.auth.gate import AuthGate
from apiserver.auth.requestheader import (
    DEFAULT_EXTRA_PREFIXES,
    DEFAULT_GROUP_HEADERS,
    DEFAULT_UID_HEADERS,
    DEFAULT_USERNAME_HEADERS,
)
from apiserver.auth.reviewlimits import SUBJECT_ACCESS_REVIEW_LIMITS, ReviewLimits
from apiserver.auth.reviews import KubeReviewClient
from apiserver.auth.tls import TLS_VERSIONS
from apiserver.auth.tokenreview import DEFAULT_TTL, TokenAuthenticator
from apiserver.render.golang.gojson.goscalars import format_duration, parse_duration

READINESS_CHECK = "authentication-config"


class AuthConfigError(ValueError):
    """The server must not start like this (exit 2 with this message)."""


@dataclass(frozen=True, slots=True)
class AuthOptions:
    authentication: str = "auto"  # auto | on | off
    trust: TrustOptions = field(default_factory=TrustOptions)
    authentication_kubeconfig: str = ""
    authorization_kubeconfig: str = ""
    token_cache_ttl: float = DEFAULT_TTL
    authorized_ttl: float = DEFAULT_ALLOWED_TTL
    unauthorized_ttl: float = DEFAULT_DENIED_TTL
    authorize_references: bool = False
    tls_min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2
    file_poll_interval: float = DEFAULT_POLL_INTERVAL
    # --kube-timeout: the longest wait for one TokenReview, SubjectAccessReview or ConfigMap read, so
    # that a hung kube-apiserver makes a request that needs one a 503, not a hang.
    kube_timeout: float = 5.0
    # TokenReviews for tokens not cached: per source and in all (reviewlimits.py).
    review_limits: ReviewLimits = field(default_factory=ReviewLimits)
    # SubjectAccessReviews not cached: per person and in all (reviewlimits.py).
    subject_access_review_limits: ReviewLimits = SUBJECT_ACCESS_REVIEW_LIMITS


def duration(text: str) -> float:
    """A Go duration as Kubernetes flags take them (``10s``, ``1m30s``, ``500ms``), or plain seconds."""
    raw = text.strip()
    try:
        return float(raw)
    except ValueError:
        pass
    try:
        return parse_duration(raw) / 1e9
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 10s, 1m30s)") from None


def go_duration(seconds: float) -> str:
    """Seconds as Go's ``time.Duration`` prints them (``10s``, ``1m0s``, ``500ms``): defaults given as
    text, which argparse parses with the flag's type, so ``--help`` shows them in that notation."""
    return format_duration(round(seconds * 1e9))


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be greater than 0")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _tls_version(text: str) -> ssl.TLSVersion:
    try:
        return TLS_VERSIONS[text]
    except KeyError:
        raise argparse.ArgumentTypeError(f"must be one of {', '.join(TLS_VERSIONS)}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("authentication and authorization (as k8s.io/apiserver)")
    add = group.add_argument
    add(
        "--authentication",
        choices=("auto", "on", "off"),
        default="auto",
        help="auto: off only for the folder source on a loopback address, on anywhere else; "
        "off is refused unless the server serves the folder source on loopback",
    )
    add(
        "--client-ca-file",
        default="",
        metavar="FILE",
        help="CA bundle for client certificates (overrides the ConfigMap's client-ca-file)",
    )
    add(
        "--requestheader-client-ca-file",
        default="",
        metavar="FILE",
        help="front-proxy CA bundle; when given, all --requestheader-* flags replace the ConfigMap's values",
    )
    lists = (
        ("--requestheader-allowed-names", (), "common names the front proxy may present (empty: any)"),
        ("--requestheader-username-headers", DEFAULT_USERNAME_HEADERS, "headers naming the user"),
        ("--requestheader-uid-headers", DEFAULT_UID_HEADERS, "headers carrying the user's UID"),
        ("--requestheader-group-headers", DEFAULT_GROUP_HEADERS, "headers naming groups"),
        ("--requestheader-extra-headers-prefix", DEFAULT_EXTRA_PREFIXES, "prefixes of extra-value headers"),
    )
    for flag, default, text in lists:
        add(
            flag,
            action="append",
            default=None,
            metavar="NAME[,NAME]",
            help=f"{text}; comma-separated or repeated"
            + (f" (default [{','.join(default)}])" if default else ""),  # pflag's notation
        )
    add(
        "--authentication-skip-lookup",
        action="store_true",
        help="do not read kube-system/extension-apiserver-authentication (trust only the CA flags)",
    )
    add(
        "--authentication-kubeconfig",
        default="",
        metavar="FILE",
        help="kubeconfig of the cluster for TokenReviews and the ConfigMap; without it the cluster "
        "connection (--kubeconfig, else in-cluster)",
    )
    add(
        "--authorization-kubeconfig",
        default="",
        metavar="FILE",
        help="kubeconfig of the cluster for SubjectAccessReviews; without it the cluster connection",
    )
    add(
        "--authentication-token-webhook-cache-ttl",
        type=duration,
        default=go_duration(DEFAULT_TTL),
        metavar="DURATION",
        help="how long to keep TokenReview answers for bearer tokens",
    )
    review_defaults = ReviewLimits()
    add(
        "--token-review-qps",
        type=_positive_float,
        default=review_defaults.rate,
        metavar="N",
        help="TokenReviews a second for bearer tokens not seen lately, per client address (bursts of "
        "--token-review-burst); a client inventing tokens faster gets 429 TooManyRequests without a review",
    )
    add(
        "--token-review-burst",
        type=_positive_int,
        default=review_defaults.burst,
        metavar="N",
        help="TokenReviews a client address may have at once before --token-review-qps applies",
    )
    add(
        "--max-token-reviews-in-flight",
        type=_positive_int,
        default=review_defaults.concurrent,
        metavar="N",
        help="TokenReviews under way at once (from every client); a request that would wait behind "
        f"{review_defaults.waiting} others for one gets 429 TooManyRequests",
    )
    sar = SUBJECT_ACCESS_REVIEW_LIMITS
    add(
        "--subject-access-review-qps",
        type=_positive_float,
        default=sar.rate,
        metavar="N",
        help="SubjectAccessReviews a second for requests' own answers not cached, per person (a user, or all the "
        "ServiceAccounts of one namespace; bursts of --subject-access-review-burst); beyond, 429 "
        "TooManyRequests without a review",
    )
    add(
        "--subject-access-review-burst",
        type=_positive_int,
        default=sar.burst,
        metavar="N",
        help="SubjectAccessReviews a person may have at once before --subject-access-review-qps applies",
    )
    add(
        "--max-subject-access-reviews-in-flight",
        type=_positive_int,
        default=sar.concurrent,
        metavar="N",
        help="SubjectAccessReviews under way at once (for everyone); a request that would wait behind "
        f"{sar.waiting} others for one gets 429 TooManyRequests",
    )
    add(
        "--authorization-webhook-cache-authorized-ttl",
        type=duration,
        default=go_duration(DEFAULT_ALLOWED_TTL),
        metavar="DURATION",
        help="how long to keep 'allowed' SubjectAccessReview answers",
    )
    add(
        "--authorization-webhook-cache-unauthorized-ttl",
        type=duration,
        default=go_duration(DEFAULT_DENIED_TTL),
        metavar="DURATION",
        help="how long to keep 'denied' SubjectAccessReview answers",
    )
    add(
        "--authorize-references",
        action="store_true",
        help="also require that the caller may get every instancetype, preference (cluster kinds too) "
        "and ControllerRevision a request reads, before anything of it is answered (PVCs, DataVolumes, "
        "DataSources, VolumeSnapshots, presets and revisions holding no instancetype or preference are "
        "always reviewed)",
    )
    add(
        "--tls-min-version",
        type=_tls_version,
        default="VersionTLS12",
        metavar="VersionTLS12|VersionTLS13",
        help="lowest TLS version accepted from clients",
    )


def options_from_args(args: argparse.Namespace) -> AuthOptions:
    def listed(name: str, default: tuple[str, ...]) -> tuple[str, ...]:
        values = getattr(args, name, None)
        return split_list(values) if values is not None else default

    trust = TrustOptions(
        client_ca_file=args.client_ca_file,
        requestheader_client_ca_file=args.requestheader_client_ca_file,
        requestheader_allowed_names=listed("requestheader_allowed_names", ()),
        requestheader_username_headers=listed("requestheader_username_headers", DEFAULT_USERNAME_HEADERS),
        requestheader_uid_headers=listed("requestheader_uid_headers", DEFAULT_UID_HEADERS),
        requestheader_group_headers=listed("requestheader_group_headers", DEFAULT_GROUP_HEADERS),
        requestheader_extra_headers_prefix=listed(
            "requestheader_extra_headers_prefix", DEFAULT_EXTRA_PREFIXES
        ),
        skip_lookup=args.authentication_skip_lookup,
    )
    return AuthOptions(
        authentication=args.authentication,
        trust=trust,
        authentication_kubeconfig=args.authentication_kubeconfig,
        authorization_kubeconfig=args.authorization_kubeconfig,
        token_cache_ttl=args.authentication_token_webhook_cache_ttl,
        authorized_ttl=args.authorization_webhook_cache_authorized_ttl,
        unauthorized_ttl=args.authorization_webhook_cache_unauthorized_ttl,
        authorize_references=args.authorize_references,
        tls_min_version=args.tls_min_version,
        kube_timeout=float(getattr(args, "kube_timeout", 5.0)),
        review_limits=ReviewLimits(
            rate=args.token_review_qps,
            burst=args.token_review_burst,
            concurrent=args.max_token_reviews_in_flight,
        ),
        subject_access_review_limits=ReviewLimits(
            rate=args.subject_access_review_qps,
            burst=args.subject_access_review_burst,
            concurrent=args.max_subject_access_reviews_in_flight,
            waiting=SUBJECT_ACCESS_REVIEW_LIMITS.waiting,
        ),
    )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def authentication_enabled(mode: str, *, folder_source: bool, bind_address: str) -> bool:
    """Whether to authenticate; AuthConfigError when ``off`` is asked for where it is not safe."""
    local = folder_source and is_loopback(bind_address)
    if mode == "on":
        return True
    if mode == "off":
        if not local:
            where = "the cluster source" if not folder_source else f"address {bind_address or '0.0.0.0'}"
            raise AuthConfigError(
                f"--authentication=off is only allowed for the folder source on a loopback address, "
                f"not for {where}: without authentication anyone who reaches the port could read what the "
                "server can read"
            )
        return False
    return not local


class AuthRuntime:
    """Everything authentication needs while the server runs: trust settings kept current, the gate."""

    def __init__(
        self,
        options: AuthOptions,
        *,
        authn_api: Any,
        authz_api: Any,
    ) -> None:
        self.options = options
        self.trust = TrustState(options.trust)
        self._apis = [a for a in dict.fromkeys([authn_api, authz_api]) if a is not None]
        tokens = (
            TokenAuthenticator(
                KubeReviewClient(authn_api, timeout=options.kube_timeout),
                ttl=options.token_cache_ttl,
                limits=options.review_limits,
            )
            if authn_api
            else None
        )
        reviewer = (
            SubjectAccessReviewer(
                KubeReviewClient(authz_api, timeout=options.kube_timeout),
                allowed_ttl=options.authorized_ttl,
                denied_ttl=options.unauthorized_ttl,
                limits=options.subject_access_review_limits,
            )
            if authz_api
            else None
        )
        self.gate = AuthGate(
            self.trust, tokens=tokens, reviewer=reviewer, authorize_references=options.authorize_references
        )
        self._files = FileWatcher(
            options.trust.files, self.trust.reload, poll_interval=options.file_poll_interval
        )
        self._configmap = (
            ConfigMapWatcher(authn_api, self.trust.apply_configmap, timeout=options.kube_timeout)
            if options.trust.needs_lookup and authn_api is not None
            else None
        )

    async def load_files(self) -> None:
        """Read the CA files now (before the TLS context is built), when they are all the trust needed."""
        await self.trust.reload()

    async def start(self) -> None:
        await self.trust.reload()
        await self._files.start()
        if self._configmap is not None:
            await self._configmap.start()

    async def close(self) -> None:
        if self._configmap is not None:
            await self._configmap.close()
        await self._files.close()
        for api in self._apis:
            await api.close()

    def readiness(self) -> tuple[bool, str]:
        return self.trust.readiness()
