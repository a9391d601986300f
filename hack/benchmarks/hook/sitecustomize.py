"""Put on a benchmarked server's PYTHONPATH by hack/benchmarks/switches.py: turns off the fast paths and
memos named in KUBEVIRT_EXPAND_BENCH_WITHOUT (comma-separated) before the server starts."""

import os

_names = os.environ.get("KUBEVIRT_EXPAND_BENCH_WITHOUT", "")
if _names:
    from hack.benchmarks import switches

    switches.turn_off(_names.split(","))
