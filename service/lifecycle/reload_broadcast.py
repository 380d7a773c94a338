"""Reload orders passed between worker processes through files in their shared run folder.

A worker that reloaded (``POST /v1/admin/reload`` reaches one worker) publishes an order: the
bundle versions it serves now, under the next generation number. Every other worker polls the
order file, loads those exact versions (not whatever ``CURRENT`` names by then) and writes an
acknowledgement: the versions it serves afterwards, or why it could not. A worker that starts
later (a restart) applies the latest order once it has loaded, so it serves what the others do.

Files are replaced atomically (written beside, then renamed); generation numbers are taken
under an exclusive ``flock`` so two reloads in two workers never share one. No file is ever
read half-written, and nothing here imports the rest of the service.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

ORDER_FILE: Final = "order.json"
LOCK_FILE: Final = "order.lock"


class BroadcastError(RuntimeError):
    """An order or acknowledgement file is unreadable (not what this module writes)."""


@dataclass(frozen=True)
class ReloadOrder:
    """Generation ``generation``: serve ``versions`` (bundle name → version), as worker
    ``origin`` does."""

    generation: int
    origin: int
    versions: Mapping[str, str]


@dataclass(frozen=True)
class ReloadAck:
    """Worker ``worker`` after applying generation ``generation``: it serves ``versions``;
    ``error`` says why not those of the order, when it could not load them."""

    worker: int
    generation: int
    versions: Mapping[str, str]
    error: str | None = None


def _write_atomically(path: Path, payload: object) -> None:
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(json.dumps(payload, sort_keys=True), encoding="utf-8")
    os.replace(partial, path)


def _read(path: Path) -> dict[str, object] | None:
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise BroadcastError(f"{path}: {error}") from error
    if not isinstance(payload, dict):
        raise BroadcastError(f"{path}: not a JSON object")
    return payload


def _versions(path: Path, value: object) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(name, str) and isinstance(version, str) for name, version in value.items()
    ):
        raise BroadcastError(f"{path}: 'versions' is not a map of names to versions")
    return dict(value)


def _integer(path: Path, payload: Mapping[str, object], key: str) -> int:
    value = payload.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise BroadcastError(f"{path}: {key!r} is not an integer")
    return value


class ReloadBroadcast:
    """The order and acknowledgement files of one server's workers, in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with (self.folder / LOCK_FILE).open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def publish(self, origin: int, versions: Mapping[str, str]) -> ReloadOrder:
        """Publish the next order: every worker is to serve ``versions``."""
        with self._locked():
            latest = self.latest()
            order = ReloadOrder(
                generation=(latest.generation if latest else 0) + 1,
                origin=origin,
                versions=dict(versions),
            )
            _write_atomically(
                self.folder / ORDER_FILE,
                {
                    "generation": order.generation,
                    "origin": order.origin,
                    "versions": dict(order.versions),
                },
            )
        return order

    def latest(self) -> ReloadOrder | None:
        """The latest order, or None before the first."""
        path = self.folder / ORDER_FILE
        payload = _read(path)
        if payload is None:
            return None
        return ReloadOrder(
            generation=_integer(path, payload, "generation"),
            origin=_integer(path, payload, "origin"),
            versions=_versions(path, payload.get("versions")),
        )

    def _ack_path(self, worker: int) -> Path:
        return self.folder / f"ack-{worker}.json"

    def acknowledge(self, ack: ReloadAck) -> None:
        """Record what worker ``ack.worker`` serves after generation ``ack.generation``."""
        _write_atomically(
            self._ack_path(ack.worker),
            {
                "worker": ack.worker,
                "generation": ack.generation,
                "versions": dict(ack.versions),
                "error": ack.error,
            },
        )

    def ack_of(self, worker: int) -> ReloadAck | None:
        """Worker ``worker``'s latest acknowledgement, or None before its first."""
        path = self._ack_path(worker)
        payload = _read(path)
        if payload is None:
            return None
        error = payload.get("error")
        if error is not None and not isinstance(error, str):
            raise BroadcastError(f"{path}: 'error' is not a string")
        return ReloadAck(
            worker=_integer(path, payload, "worker"),
            generation=_integer(path, payload, "generation"),
            versions=_versions(path, payload.get("versions")),
            error=error,
        )
