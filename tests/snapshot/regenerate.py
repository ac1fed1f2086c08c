"""Rewrite the behaviour-snapshot fixtures: `python tests/snapshot/regenerate.py`.

Run it deliberately, never to make a failing snapshot test pass. Regenerating is legitimate
only when the live-commerce behaviour is meant to change (a new template, a judge rubric edit,
an oracle or hook change, a harness edit) and the commit says so; review the change with
`python tests/snapshot/regenerate.py --diff` first, which prints what differs and writes nothing.
A pure refactor (issue 16: moving the domain behind `Domain`) must leave every fixture as it is.
A change to harness_hashes alone means a harness file changed without changing behaviour.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # behaviour_snapshot, and tests/tiny.py
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import behaviour_snapshot as bs  # noqa: E402


def main(argv: list[str]) -> int:
    only_diff = "--diff" in argv
    with tempfile.TemporaryDirectory(prefix="hatkit-snapshot-") as work:
        snapshot = bs.compute(Path(work))
    changed = 0
    for name in bs.SNAPSHOTS:
        records = snapshot[name]
        old = bs.read_fixture(name) if bs.fixture_path(name).is_file() else []
        diff = bs.difference(name, old, bs.dumps(records))
        if diff is None:
            print(f"{name}: unchanged ({len(records)} records)")
            continue
        changed += 1
        print(diff.rsplit("\n", 1)[0])
        if not only_diff:
            path = bs.write_fixture(name, records)
            print(f"  wrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path} "
                  f"({path.stat().st_size} bytes)")
    return 1 if only_diff and changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
