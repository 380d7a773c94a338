"""What bundle_mapping=private-copy costs against in-place: load time and page cache.

Question: the service copies each bundle version it maps into a folder it owns before it
verifies and maps it (storage.private_copies), so that a file truncated under it cannot
kill it with SIGBUS. How much longer does loading take, and how much more memory and disk does
it use, than mapping the bundle's own files?

Method: for each mode, `--repeats` times, load every bundle under `--bundles-root` the way the
service does (verify every sha256, then map vectors and indexes), then read every vector once
(what serving does over time); time the load, and read the kernel's page cache (`Cached` in
/proc/meminfo) before and after. `cold`: the page cache is dropped first (root only; a fresh
machine or a restart after memory pressure); `warm`: the bundle files were just read (a
restart). Prints JSON and a Markdown table.

    sudo .venv/bin/python studies/private_copy_cost.py --bundles-root artifacts/bundles
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from storage.private_copies import PrivateCopies
from storage.reader import load_bundle, resolve_current


def cached_kib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Cached:"):
            return int(line.split()[1])
    raise RuntimeError("no Cached line in /proc/meminfo")


def drop_page_cache() -> None:
    subprocess.run(["sync"], check=True)
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def read_every_file(folders: list[Path]) -> None:
    for folder in folders:
        for path in folder.iterdir():
            if path.is_file():
                path.read_bytes()


def measure(versions: list[Path], mode: str, cache: str, scratch: Path) -> dict[str, float]:
    copies = PrivateCopies(scratch / "copies") if mode == "private-copy" else None
    if cache == "cold":
        drop_page_cache()
    else:
        read_every_file(versions)
    before = cached_kib()
    started = time.perf_counter()
    loaded = [
        load_bundle(copies.adopt(version) if copies is not None else version)
        for version in versions
    ]
    load_s = time.perf_counter() - started
    after_load = cached_kib()
    total = 0.0
    for bundle in loaded:
        for collection in bundle.collections.values():
            total += float(np.asarray(collection.vectors, dtype=np.float64).sum())
    after_read = cached_kib()
    copied = (
        sum(path.stat().st_size for path in (scratch / "copies").rglob("*") if path.is_file())
        if copies is not None
        else 0
    )
    del loaded
    gc.collect()
    if copies is not None:
        copies.close()
    return {
        "load_s": load_s,
        "cached_after_load_mib": (after_load - before) / 1024,
        "cached_after_reading_vectors_mib": (after_read - before) / 1024,
        "disk_copied_mib": copied / (1 << 20),
        "checksum": total,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundles-root", type=Path, default=Path("artifacts/bundles"))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    versions = sorted(
        resolve_current(folder)
        for folder in args.bundles_root.iterdir()
        if (folder / "CURRENT").is_file()
    )
    bundle_mib = sum(path.stat().st_size for version in versions for path in version.iterdir()) / (
        1 << 20
    )
    results: dict[str, dict[str, float]] = {}
    for cache in ("cold", "warm"):
        for mode in ("in-place", "private-copy"):
            runs = []
            for _ in range(args.repeats):
                with tempfile.TemporaryDirectory(dir=args.bundles_root.parent) as scratch:
                    runs.append(measure(versions, mode, cache, Path(scratch)))
            results[f"{mode}/{cache}"] = {
                key: statistics.median(run[key] for run in runs) for key in runs[0]
            }
    report = {
        "bundles": [str(version) for version in versions],
        "bundle_files_mib": bundle_mib,
        "repeats": args.repeats,
        "medians": results,
    }
    print(json.dumps(report, indent=2))
    print()
    print(f"{len(versions)} bundles, {bundle_mib:.1f} MiB of files; medians of {args.repeats}")
    print()
    print(
        "| mode | page cache | load s | page cache grew, MiB (after load / after reading "
        "every vector) | disk copied MiB |"
    )
    print("|---|---|---|---|---|")
    for key, values in results.items():
        mode, cache = key.split("/")
        print(
            f"| {mode} | {cache} | {values['load_s']:.3f} | "
            f"{values['cached_after_load_mib']:.1f} / "
            f"{values['cached_after_reading_vectors_mib']:.1f} | "
            f"{values['disk_copied_mib']:.1f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
