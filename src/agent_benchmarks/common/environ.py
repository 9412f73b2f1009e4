"""The process environment as a plain mapping of strings, decoded once per change.

``os.environ`` keeps bytes and decodes a variable at every read, so copying it decodes
every variable: done for each attempt's command and each redaction, that was a large part
of the harness's own CPU per instant attempt. CPython keeps those bytes in
``os.environ._data``, which every assignment or deletion changes: comparing it with the
copy the mapping was decoded from is a C-speed equality test.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import MappingProxyType

_cache: tuple[dict[bytes, bytes], Mapping[str, str]] | None = None


def current() -> Mapping[str, str]:
    """The environment now, read-only: the same object until ``os.environ`` changes."""
    global _cache
    data = getattr(os.environ, "_data", None)
    cached = _cache
    if data is not None and cached is not None and cached[0] == data:
        return cached[1]
    decoded: Mapping[str, str] = MappingProxyType(dict(os.environ))
    if data is not None:
        _cache = (dict(data), decoded)
    return decoded
