"""`python -m wsod` is the same program as the `wsod` console script."""

import sys

from wsod.cli import main

sys.exit(main())
