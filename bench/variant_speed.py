"""Harness variant speed: seconds per `make_variant` (copy, augment, validate, write the
provenance) of the shipped harness, train and heldout families, so that building hundreds of
HSA variants for a dataset is never the slow stage. Floor: under 0.5 s a variant (this was a
test's wall-clock assertion; speed lives here so a busy machine cannot fail the test tier).

A run that built fewer distinct variants than asked stops before the verdict.
`--smoke`: 2 variants per family (seconds; not the floor).
Prints a table, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from _common import BenchFailed

from hatkit import __version__
from hatkit.domains.live_commerce import DOMAIN as LC
from hatkit.sim.augment import make_variant

BENCH = "variant_speed"
FLOOR_S = 0.5


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variants", type=int, default=10, help="per family")
    ap.add_argument("--base", default="live_commerce", help="harness to vary")
    ap.add_argument("--smoke", action="store_true", help="2 variants per family (seconds)")
    args = ap.parse_args(argv)
    if args.smoke:
        args.variants = min(args.variants, 2)

    rows: dict[str, float] = {}
    hashes: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="hatkit-variant-bench-") as tmp:
        make_variant(args.base, Path(tmp) / "warm-up", family="train", hsa=LC.hsa, seed=10**6)
        for family in ("train", "heldout"):
            started = time.perf_counter()
            for seed in range(args.variants):
                hashes.add(make_variant(args.base, Path(tmp) / f"{family}-{seed}", family=family, hsa=LC.hsa,
                                        seed=seed).content_hash)
            rows[family] = (time.perf_counter() - started) / args.variants
    if len(hashes) != 2 * args.variants:
        raise BenchFailed(BENCH, f"{len(hashes)} distinct variants of {2 * args.variants} built")
    print(f"{'family':8} {'variants':>9} {'s/variant':>10}")
    for family, secs in rows.items():
        print(f"{family:8} {args.variants:9d} {secs:10.3f}")
    worst = max(rows.values())
    met = worst < FLOOR_S
    print(f"floor < {FLOOR_S:g} s a variant: {'met' if met else 'NOT met'} (worst {worst:.3f} s)")
    print(json.dumps({"bench": BENCH, "smoke": args.smoke, "base": args.base,
                      "variants_per_family": args.variants,
                      "seconds_per_variant": {k: round(v, 4) for k, v in rows.items()},
                      "floor_s": FLOOR_S, "met": met, "hatkit": __version__,
                      "python": platform.python_version()}))


if __name__ == "__main__":
    main()
