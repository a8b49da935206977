"""Strict JSON for every ``--json`` output and every JSON file we write.

Python's ``json`` writes non-finite floats as ``Infinity`` and ``NaN``, which are not JSON (RFC 8259):
JavaScript's ``JSON.parse``, Go and most strict readers reject the whole document. Our reports hold
such values legitimately (the relative error against a reference of 0 is infinite; so is the rtol that
would let it pass), so they are written as the strings ``"inf"``, ``"-inf"`` and ``"nan"``:
``float(value)`` reads every number of a report back, finite or not.
"""

from __future__ import annotations

import json
import math
from pathlib import PurePath
from typing import IO, Any

import numpy as np


def plain(value: Any) -> Any:
    """``value`` with numpy scalars and arrays as Python numbers and lists, tuples as lists, paths as
    strings, non-finite floats as ``"inf"``, ``"-inf"`` or ``"nan"``; other objects as ``str()``."""
    if isinstance(value, float | np.floating):
        x = float(value)
        if math.isfinite(x):
            return x
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, np.generic):
        return plain(value.item())
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [plain(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
    if isinstance(value, PurePath):
        return str(value)
    return str(value)


def dumps(value: Any, **kwargs: Any) -> str:
    """Strict JSON text of :func:`plain` ``(value)`` (``json.dumps`` keyword arguments pass through)."""
    return json.dumps(plain(value), allow_nan=False, **kwargs)


def dump(value: Any, stream: IO[str], **kwargs: Any) -> None:
    """Write :func:`dumps` ``(value)`` to ``stream``."""
    stream.write(dumps(value, **kwargs))
