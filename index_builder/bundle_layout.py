"""The names a bundle folder is laid out with, apart from the code that reads it::

    <bundles_root>/<bundle>/CURRENT               the version served (one line)
    <bundles_root>/<bundle>/<version>/manifest.json

Importing this costs nothing (no numpy, no faiss): a process that only checks paths, such as
the service's supervisor, reads the names from here; :mod:`index_builder.bundle` reads bundles.
"""

from __future__ import annotations

import re
from typing import Final

MANIFEST_FILE: Final = "manifest.json"
# A published version folder: everyone may read it (the service may run as another user), only
# its writer may change it.
PUBLISHED_VERSION_MODE: Final = 0o755
CURRENT_FILE: Final = "CURRENT"
VERSION_PATTERN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
