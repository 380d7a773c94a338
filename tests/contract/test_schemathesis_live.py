"""The schemathesis CLI with every check against a live service finds nothing: requests the
OpenAPI document allows are served (or refused only for what the document says: 401/403, 404
for what is not served, 409 for what does not fit what is served), requests it forbids are
refused, every answer matches the document — with no keys configured and with read and admin
keys.

The service is real: uvicorn, the committed two-tower scenes dual encoder (models/), a bundle
of a small generated scenes corpus. ``tests/contract/schemathesis_hooks.py`` teaches the fuzzer
the document's image format; the repository's ``schemathesis.toml`` loads them, and runs with
keys add the key schemes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.e2e.conftest import LiveService, build_scenes_roots, start_service, stop_service

pytestmark = [pytest.mark.e2e]

READ_KEY = "contract-read-key-0123456789"
ADMIN_KEY = "contract-admin-key-0123456789"
SEED = "1"
MAX_EXAMPLES = "30"


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(variants root, bundles root, work folder): the committed model and a bundle of 12
    generated scenes (captions and pixels)."""
    root = tmp_path_factory.mktemp("contract")
    variants_root, bundles_root = build_scenes_roots(root)
    return variants_root, bundles_root, root


def _serve(
    roots: tuple[Path, Path, Path], name: str, env: dict[str, str] | None = None
) -> Iterator[LiveService]:
    """A live service on ``roots`` with ``env`` added, logging to ``<name>.log``; stopped after."""
    variants_root, bundles_root, root = roots
    service = start_service(variants_root, bundles_root, root / f"{name}.log", env)
    yield service
    assert stop_service(service) == 0, service.log()


@pytest.fixture
def open_service(roots: tuple[Path, Path, Path]) -> Iterator[LiveService]:
    yield from _serve(roots, "open")


@pytest.fixture
def keyed_service(roots: tuple[Path, Path, Path]) -> Iterator[LiveService]:
    keys = {
        "CRISSCROSS_READ_KEYS": READ_KEY,
        "CRISSCROSS_ADMIN_KEYS": ADMIN_KEY,
        "CRISSCROSS_ADMIN_RELOAD": "true",
    }
    yield from _serve(roots, "keyed", keys)


@pytest.fixture
def small_body_service(roots: tuple[Path, Path, Path]) -> Iterator[LiveService]:
    """A service whose JSON body limit is a few kilobytes: most bodies the fuzzer draws for
    ``/v1/score`` run past it."""
    limits = {"CRISSCROSS_MAX_TEXT_CHARS": "200", "CRISSCROSS_MAX_BODY_BYTES": "8000"}
    yield from _serve(roots, "small", limits)


KEY_SCHEMES = """
[auth.openapi.bearerKey]
bearer = "{key}"

[auth.openapi.apiKeyHeader]
api_key = "{key}"
"""
"""The service's key schemes, filled with the key, added to the repository's schemathesis.toml
for a run with keys."""


def run_schemathesis(
    service: LiveService, key: str | None, *only_path: str, work: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``schemathesis run <url>/openapi.json --checks all`` with a fixed seed from the
    repository root, as `make contract` runs it (schemathesis finds the repository's
    schemathesis.toml there); ``key`` fills both key schemes (a config file in ``work``: the
    repository's plus the schemes); ``only_path`` limits it to one route."""
    executable = Path(sys.executable).with_name("schemathesis")
    command = [str(executable)]
    if key is not None:
        assert work is not None, "a run with a key writes its config file into work"
        config = work / "schemathesis-with-keys.toml"
        config.write_text(
            (REPO_ROOT / "schemathesis.toml").read_text() + KEY_SCHEMES.format(key=key)
        )
        command += ["--config-file", str(config)]
    command += ["run", f"{service.url}/openapi.json", "--checks", "all", "--seed", SEED]
    command += ["--max-examples", MAX_EXAMPLES, "--workers", "1"]
    command += [option for path in only_path for option in ("--include-path", path)]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def test_schemathesis_finds_nothing_without_keys(open_service: LiveService) -> None:
    result = run_schemathesis(open_service, None)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "No issues found" in result.stdout or "passed" in result.stdout, result.stdout[-3000:]


def test_schemathesis_finds_nothing_with_keys(
    keyed_service: LiveService, roots: tuple[Path, Path, Path]
) -> None:
    result = run_schemathesis(keyed_service, ADMIN_KEY, work=roots[2])
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


def test_a_body_over_the_byte_limit_is_a_documented_refusal(
    small_body_service: LiveService,
) -> None:
    """A body over ``max_body_bytes`` is refused with its documented 413 before it is parsed,
    whether or not it matches the document. The fuzzer draws such bodies now and then at the
    default 1 MiB (1,025 pairs of vectors); with an 8,000-byte limit it draws them every run,
    and none of them may read as a contract failure."""
    result = run_schemathesis(small_body_service, None, "/v1/score")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "route=/v1/score status=413" in small_body_service.log(), "no body ran past the limit"
