"""Tests against a real control plane: etcd and kube-apiserver started by the test session, with the
server registered behind kube-apiserver's aggregator exactly as the manifests in ``apiservice/`` deploy
it (see ``conftest.py`` for the fixtures and ``docs/development.md`` for what they need)."""
