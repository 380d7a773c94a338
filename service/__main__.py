"""``python -m service serve`` (console script ``crisscross-serve``): run the API under uvicorn.

Settings come from ``CRISSCROSS_*`` environment variables; the flags given here override them.
Limits (``CRISSCROSS_MAX_K`` ...) are environment-only to keep the command line short.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError

from service.process_layout import resolve_workers, usable_cores
from service.runtime.process_setup import ConnectionLimitError, allow_open_files
from service.runtime.workers import WorkerSupervisor
from service.settings import SETTING_GROUPS, LogLevel, ProviderChoice, Settings, SettingsError

EXIT_BAD_SETTINGS = 2

# flag dest -> Settings field; only flags the user gave are passed on, so the environment and
# the defaults still apply to the others.
_FLAG_FIELDS = (
    "host",
    "port",
    "bundles_root",
    "bundles",
    "variants_root",
    "collections_dir",
    "default_variant",
    "providers",
    "intra_op_threads",
    "graceful_shutdown_s",
    "log_level",
    "follow",
    "replica_set_size",
    "advertise_url",
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="crisscross-serve", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the bundles over HTTP")
    serve.add_argument("--host", help="interface to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="TCP port (default 8000)")
    serve.add_argument("--bundles-root", type=Path, help="folder of bundles (artifacts/bundles)")
    serve.add_argument("--bundles", help="comma-separated bundle names (default: all with CURRENT)")
    serve.add_argument("--variants-root", type=Path, help="folder of variants (artifacts/variants)")
    serve.add_argument(
        "--collections-dir", type=Path, help="folder of live collections (none: no writes)"
    )
    serve.add_argument("--default-variant", help="variant used when a request names none")
    serve.add_argument(
        "--providers", choices=get_args(ProviderChoice), help="onnxruntime providers"
    )
    serve.add_argument("--intra-op-threads", type=int, help="onnxruntime threads (0 = its choice)")
    serve.add_argument(
        "--graceful-shutdown-s", type=int, help="seconds to drain requests on SIGTERM"
    )
    serve.add_argument("--log-level", choices=get_args(LogLevel), help="log level (info)")
    serve.add_argument(
        "--follow", help="URL of the leader to follow (this server then copies its collections)"
    )
    serve.add_argument(
        "--replica-set-size", type=int, help="servers in the replica set, the leader counted (1)"
    )
    serve.add_argument("--advertise-url", help="URL the other replicas reach this server at")
    openapi = commands.add_parser(
        "openapi", help="print the OpenAPI document (regenerates docs/openapi.json)"
    )
    openapi.add_argument("--out", type=Path, help="write to this file instead of stdout")
    settings_doc = commands.add_parser(
        "settings-doc", help="print the settings table (regenerates docs/settings.md)"
    )
    settings_doc.add_argument("--out", type=Path, help="write to this file instead of stdout")
    return parser


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Settings from the environment, overridden by the flags that were given."""
    overrides: dict[str, Any] = {
        name: getattr(args, name) for name in _FLAG_FIELDS if getattr(args, name) is not None
    }
    return Settings(**overrides)


def openapi_document() -> str:
    """The OpenAPI document of the app as committed in docs/openapi.json: indented JSON with a
    final newline, built from the default settings (their limits, no keys), no environment."""
    from service.http.app import create_app  # here, not at the top: see serve

    schema = create_app(Settings.model_construct()).openapi()
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def serve(settings: Settings) -> int:
    """Serve ``settings`` until SIGINT/SIGTERM (blocking): in this process when the ``workers``
    setting resolves to 1, else under a supervisor of that many worker processes. Returns the
    exit status."""
    workers = resolve_workers(settings.workers, usable_cores())
    if settings.collections_dir is not None:
        workers = 1  # a live collection's log has one owner (the settings refuse workers > 1)
    if workers == 1:
        # Imported only to serve here: a supervisor stays free of the serving stack.
        from service.runtime.server import run_server

        run_server(settings)
        return 0
    return WorkerSupervisor(settings, workers).run()


def settings_document() -> str:
    """docs/settings.md: every setting with its default and its description, group by group
    (:data:`service.settings.SETTING_GROUPS`), in field order."""
    lines = [
        "# Service settings",
        "",
        "Every setting is an environment variable with the `CRISSCROSS_` prefix (e.g. "
        "`CRISSCROSS_MAX_K=50`);",
        "`python -m service serve` flags win over the environment. Generated from "
        "`service/settings/`",
        "(`python -m service settings-doc --out docs/settings.md`).",
    ]
    for title, group in SETTING_GROUPS:
        lines += [
            "",
            f"## {title}",
            "",
            (group.__doc__ or "").strip().replace("\n", " "),
            "",
            "| setting | default | what it does / what happens when it is hit |",
            "|---|---|---|",
        ]
        for name in group.model_fields:
            field = Settings.model_fields[name]
            default = field.get_default(call_default_factory=True)
            shown = (
                f"{default:,}"
                if isinstance(default, int) and not isinstance(default, bool)
                else (repr(default))
            )
            lines.append(f"| `{name}` | `{shown}` | {field.description} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m service`` and ``crisscross-serve``; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.command in ("openapi", "settings-doc"):
        document = openapi_document() if args.command == "openapi" else settings_document()
        if args.out is not None:
            args.out.write_text(document, encoding="utf-8")
        else:
            sys.stdout.write(document)
        return 0
    try:
        settings = settings_from_args(args)
        settings.check_serving_paths()
    except ValidationError as exc:
        # Settings hide their input in errors: a refused API key is never printed.
        print(f"crisscross-serve: invalid settings:\n{exc}", file=sys.stderr)
        return EXIT_BAD_SETTINGS
    except SettingsError as exc:
        print(f"crisscross-serve: {exc}", file=sys.stderr)
        return EXIT_BAD_SETTINGS
    try:
        # Raised here, before any worker spawns: the workers inherit the limit.
        allow_open_files(settings.max_connections)
    except ConnectionLimitError as exc:
        print(f"crisscross-serve: {exc}", file=sys.stderr)
        return EXIT_BAD_SETTINGS
    return serve(settings)


if __name__ == "__main__":
    sys.exit(main())
