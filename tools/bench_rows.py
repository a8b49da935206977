"""Put the rows of a filtered bench run into the committed full run, in the suite's order.

Usage, from the repository root::

    customops bench --filter int8 --json /tmp/int8.json
    python tools/bench_rows.py /tmp/int8.json [--into docs/bench.json]

Each workload of the filtered run replaces the row of the same name in ``--into`` (or is added there),
rows ordered as the suite lists them; the machine line, settings and hook measurement of ``--into`` stay
(the summary and targets are derived from the rows whenever the file is read). Then paste ``customops
bench --from docs/bench.json --markdown`` into docs/performance.md, and its targets table into the
README (tests/test_bench.py checks both). docs/performance.md says which rows came from which run.
"""

from __future__ import annotations

import argparse
import sys

from customops import jsonout
from customops.bench.saved import MAX_JSON_BYTES, load, report_from
from customops.bench.suite import suite
from customops.errors import CustomOpsError
from customops.safeio import read_json, write_atomic


def merged(rows: list[dict], into: list[dict]) -> list[dict]:
    """``into``'s rows with ``rows`` in place of those of the same name, in the suite's order."""
    by_name = {r["name"]: r for r in into} | {r["name"]: r for r in rows}
    order = [w.name for w in suite()]
    unknown = sorted(set(by_name) - set(order))
    if unknown:
        raise CustomOpsError(f"rows of workloads the suite does not have: {', '.join(unknown)}")
    return [by_name[name] for name in order if name in by_name]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", help="a --json file of a (filtered) customops bench run")
    parser.add_argument("--into", default="docs/bench.json", help="the committed run (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        load(args.rows, "rows")  # both files checked as --from checks them
        load(args.into, "--into")
        rows = read_json(args.rows, MAX_JSON_BYTES, "rows")["results"]
        whole = read_json(args.into, MAX_JSON_BYTES, "--into")
        whole["results"] = merged(rows, whole["results"])
        report = report_from(whole, "the merged run")
        write_atomic(args.into, jsonout.dumps(report.to_json(), indent=1) + "\n")
    except CustomOpsError as exc:
        print(f"bench_rows: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
