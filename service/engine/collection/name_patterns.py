"""The names the engine keeps on disk and takes from requests, as the storage writes them: a
live collection's name and a bundle's version folder. The HTTP layer checks requests against
these (it reads no storage module itself)."""

from __future__ import annotations

import re
from typing import Final

from storage.layout import VERSION_PATTERN
from storage.live.spec import NAME_PATTERN

LIVE_COLLECTION_NAME: Final[re.Pattern[str]] = NAME_PATTERN
"""A live collection's name: a letter or digit, then up to 63 letters, digits, ``_``, ``.``,
``-``."""

BUNDLE_VERSION: Final[re.Pattern[str]] = VERSION_PATTERN
"""A bundle's version folder: a letter or digit, then up to 127 letters, digits, ``.``, ``_``,
``-``."""
