"""`python -m playground.cli`: the command line."""

import sys

from playground.cli.main import main

sys.exit(main())
