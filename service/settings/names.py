"""The names and values the settings share: routes, sizes, key and origin rules, the types of
some settings, and the error of settings that cannot serve."""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from encoders.providers import ProviderKeyword

MIB = 1 << 20
KIB = 1 << 10
# Room for the JSON around a text in the smallest request (field names, collection, k).
JSON_OVERHEAD_BYTES = 1024
# Room for the form fields (collection, k, variant, exclude ids, include_metadata) and the
# multipart framing around the file on POST /v1/search/upload.
UPLOAD_OVERHEAD_BYTES = 256 * KIB
UPLOAD_ROUTE = "/v1/search/upload"
BULK_ROUTE = "/v1/search/bulk"

# An API key travels in a header: visible ASCII, no spaces or commas (commas separate keys in the
# environment), long enough not to be guessed.
MIN_KEY_CHARS = 16
_KEY_CHARS = re.compile(r"^[\x21-\x2b\x2d-\x7e]+$")
_ORIGIN = re.compile(r"^https?://[^/\s]+$")
LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost"})

ProviderChoice = ProviderKeyword
LogLevel = Literal["critical", "error", "warning", "info", "debug"]
FaissDevice = Literal["auto", "cpu", "gpu"]


class SettingsError(ValueError):
    """The settings cannot serve: a path is missing or a named bundle does not exist."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an interface address or name) only accepts local connections:
    ``localhost``, 127.0.0.0/8 or ``::1``. ``0.0.0.0``, ``::`` and other names are public."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
