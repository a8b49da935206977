"""Write the support table of docs/support.md again, from the registry and the installed onnxruntime.

Usage, from the repository root::

    python tools/support_page.py [--markdown docs/support.md]

Everything between the page's ``<!-- support-table -->`` and ``<!-- /support-table -->`` markers is
replaced by the table ``customops ops --markdown`` prints (the built-in column probed from the installed
onnxruntime); the prose around the markers is left as it is. tests/test_docs.py checks the page's
customops columns and notes against the registry.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from customops.cli.ops import markdown_table
from customops.errors import CustomOpsError
from customops.safeio import write_atomic
from customops.support import support_table

START, END = "<!-- support-table -->", "<!-- /support-table -->"


def with_table(page: str, table: str) -> str:
    """``page`` with the text between its two markers replaced by ``table``."""
    if page.count(START) != 1 or page.count(END) != 1 or page.index(START) > page.index(END):
        raise CustomOpsError(f"the page needs one {START} line followed by one {END} line")
    head, rest = page.split(START)
    tail = rest.split(END)[1]
    return f"{head}{START}\n{table.strip()}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--markdown", default="docs/support.md", help="the page (default docs/support.md)")
    args = parser.parse_args(argv)
    path = Path(args.markdown)
    try:
        write_atomic(path, with_table(path.read_text(), markdown_table(support_table(probe=True))))
    except (CustomOpsError, OSError) as exc:
        print(f"support_page: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
