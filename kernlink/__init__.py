"""kernlink: verification-first contracts for GPU kernel components.

The public API lives in :mod:`kernlink.api`; the command line in :mod:`kernlink.cli`.
"""

__version__ = "0.1.0"
