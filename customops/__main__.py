"""``python -m customops``: the ``customops`` command (for when its script is not on PATH)."""

from __future__ import annotations

import sys

from customops.cli.main import main

sys.exit(main())
