"""The server refuses to start without authentication anywhere but the folder source on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

from apiserver.cli import main


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
