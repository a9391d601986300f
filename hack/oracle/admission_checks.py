"""Count KubeVirt's VM webhook checks and the input variants per area.

The checks and variants live in the package hack/oracle/admission/ (one module per area, named after
apiserver/render/admission's); hack/oracle/fuzz_admission.py and hack/oracle/admission_table.py import it.
This script only says how many there are, so a change to an area shows in the counts.

    .venv/bin/python -m hack.oracle.admission_checks
"""

from __future__ import annotations

import argparse
import collections

from hack.oracle.admission import BASES, CHECKS, VARIANTS


def main() -> int:
    parser = argparse.ArgumentParser(
        description="KubeVirt's VM webhook checks and the input variants hack/oracle/fuzz_admission.py runs "
        "(the package hack/oracle/admission; this counts them per area).",
    )
    parser.parse_args()
    variants = collections.Counter(v.area for v in VARIANTS)
    found = collections.Counter(c.area for c in CHECKS)
    for area in sorted(set(variants) | set(found)):
        print(f"{area:24} {found[area]:4d} checks {variants[area]:6d} variants")
    print(f"{'total':24} {len(CHECKS):4d} checks {len(VARIANTS):6d} variants, {len(BASES)} base VMs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
