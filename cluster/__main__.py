"""``python -m cluster``: Crisscross on a Ray cluster.

- ``build``: embed a corpus on Ray Data actors and write the same bundle as
  ``python -m index_builder build`` (docs/distributed-build.md);
- ``split``: cut one collection of a bundle into shard bundles (docs/sharded-serving.md);
- ``serve-shards``: serve those shards on Ray Serve behind the service's own app.

Without ``--ray-address`` each command starts a local cluster sized by ``--num-cpus``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from cluster import build_command, serve_command


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface: one subcommand per job."""
    parser = argparse.ArgumentParser(
        prog="python -m cluster",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    build_command.register(commands)
    serve_command.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m cluster`` and ``crisscross-cluster``."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    args = build_parser().parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
