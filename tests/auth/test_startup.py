"""The server refuses to start without authentication anywhere but the folder source on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

from apiserver.auth import options as auth_options
from apiserver.cli import build_parser, main


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        (["--bind-address", "0.0.0.0", "--authentication=off"], "only allowed for the folder source"),
        (["--bind-address", "0.0.0.0"], "authentication is on and needs a cluster"),
        (["--authentication=on"], "authentication is on and needs a cluster"),
    ],
)
def test_refuses_to_start_without_authentication(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    reason: str,
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    code = main(
        [
            "serve",
            "--manifests",
            str(tmp_path),
            "--secure-port",
            "0",
            "--cert-dir",
            str(tmp_path / "c"),
            *extra,
        ]
    )
    assert code == 2
    assert reason in capsys.readouterr().err


@pytest.mark.parametrize(("extra", "seconds"), [([], 5.0), (["--kube-timeout", "0.7"], 0.7)])
def test_kube_timeout_also_bounds_the_reviews(extra: list[str], seconds: float) -> None:
    """--kube-timeout is the deadline of TokenReviews, SubjectAccessReviews and the trust ConfigMap read
    too (test_auth_http shows a hung review answered 503 within it)."""
    args = build_parser().parse_args(["serve", *extra])
    assert auth_options.options_from_args(args).kube_timeout == seconds
