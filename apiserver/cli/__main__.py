import sys

from apiserver.cli import main

sys.exit(main())
