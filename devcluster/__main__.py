"""``python -m devcluster up|status|down`` (what hack/dev-cluster.sh runs)."""

import sys

from devcluster.cli import main

sys.exit(main())
