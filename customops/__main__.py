"""``python -m customops``: the ``customops`` command (for when its script is not on PATH)."""

from __future__ import annotations

import sys

try:
    from customops.cli.main import entry
except KeyboardInterrupt:
    print("customops: interrupted", file=sys.stderr)
    sys.exit(130)
sys.exit(entry())
