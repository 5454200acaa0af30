"""`python -m playground` is the `playground` command."""

import sys

from playground.cli.main import main

sys.exit(main())
