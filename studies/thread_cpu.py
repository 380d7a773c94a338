"""Where a running server's CPU goes, per thread: reads ``/proc/PID/task/*/stat`` (user + system
time) of the server process ``--pid``, runs the load command given after ``--`` to its end, reads
them again, and prints each thread's CPU seconds and CPU milliseconds per request (``--requests``:
how many the command sends). The main thread (thread id = PID) is the event loop; the others are
named from ``/proc``'s ``comm`` (Python threads are not named there: the two busiest under text
search load are the encoder's batcher threads). Linux only.

usage (a service started with `make serve` or `python -m service serve`, and the peer-bench
load client; any load command works):
    .venv/bin/python studies/thread_cpu.py --pid PID --requests 3000 -- \\
        .peer-bench/venv/bin/python ../shared/peer-bench/load_client.py \\
        http://127.0.0.1:8000/v1/search minilm-l6-v2 \\
        ../shared/data/coco-karpathy-captions/captions_val.csv --mode search --conc 32 \\
        --n 3000 --warmup 0
"""

from __future__ import annotations

import argparse
import os
import subprocess
from pathlib import Path

TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def thread_times(pid: int) -> dict[int, tuple[str, float]]:
    """Thread id → (comm, CPU seconds so far: user + system) of every thread of ``pid``."""
    times: dict[int, tuple[str, float]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
            comm = (task / "comm").read_text().strip()
        except FileNotFoundError:  # the thread ended between the listing and the read
            continue
        # The fields after the parenthesised command name; utime and stime are 14th and 15th.
        fields = stat[stat.rindex(")") + 2 :].split()
        times[int(task.name)] = (comm, (int(fields[11]) + int(fields[12])) / TICKS_PER_S)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pid", type=int, required=True, help="the server process")
    parser.add_argument("--requests", type=int, required=True, help="requests the command sends")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the load command")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or args.requests < 1:
        parser.error("give --requests >= 1 and a load command after --")
    before = thread_times(args.pid)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    after = thread_times(args.pid)
    total = 0.0
    rows = []
    for tid, (comm, seconds) in after.items():
        spent = seconds - before.get(tid, (comm, 0.0))[1]
        total += spent
        if spent > 0:
            name = "event loop (main thread)" if tid == args.pid else f"{comm} {tid}"
            rows.append((spent, name))
    for spent, name in sorted(rows, reverse=True):
        print(f"{name:32s} {spent:7.2f} s  {1000.0 * spent / args.requests:6.2f} ms/request")
    print(f"{'all threads':32s} {total:7.2f} s  {1000.0 * total / args.requests:6.2f} ms/request")


if __name__ == "__main__":
    main()
