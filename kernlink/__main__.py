"""`python -m kernlink`.

Python puts the working directory first on ``sys.path`` for ``-m``; a folder there named
like one of kernlink's top-level packages (``solver/``, ``checker/``) would be imported in
its place. That entry is replaced by this file, from which nothing can be imported (it
stays an entry: the build server's key leaves out the launcher's first entry), unless
kernlink itself was found there (a source checkout run without installing). SIGINT is
recorded before anything heavy is imported.
"""

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_FIRST = os.path.abspath(sys.path[0] or os.curdir) if sys.path else None
if _FIRST == os.getcwd() != _ROOT and not sys.flags.safe_path:
    sys.path[0] = os.path.abspath(__file__)

try:
    from diagnostics import interrupts

    interrupts.install()
    from kernlink.cli import main
except KeyboardInterrupt:  # Ctrl-C before kernlink's handler was in place: still no traceback
    sys.exit(130)

sys.exit(main())
