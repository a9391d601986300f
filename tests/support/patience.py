"""How long a test waits on a loaded machine: in devcluster/patience.py, which the real control plane's
start-up shares with the tests; these names stay importable from here."""

from __future__ import annotations

from devcluster.patience import SCALE_ENV, load_factor, patience

__all__ = ["SCALE_ENV", "load_factor", "patience"]
