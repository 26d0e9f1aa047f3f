"""minipkg: settings and helpers for a small HTTP client.

A fixture for `codeasst eval fix-modules`: lint-dirty in the ways old releases of real packages are.
"""

__version__ = "0.3.1"

import logging
import warnings

def check_compatibility(version):
    """Warn about a release this package was not tested with."""
    major = int(version.split('.')[0])
    if major!=0:
        warnings.warn("minipkg %s is untested with this client" % version)
check_compatibility(__version__)

from .helpers import to_native, parse_header_links, merge_settings
from .settings import Settings, DEFAULT_TIMEOUT
from ._internal import *

logging.getLogger(__name__).addHandler(logging.NullHandler())
