"""`python -m kernlink`."""

import sys

from kernlink.cli import main

sys.exit(main())
