"""Fixtures of the deploy tests: what ``deploy/`` ships, built and run for real where this machine
can (podman, Prometheus, kubectl), checked statically where it cannot.

The tools come from Debian's packages (``make deploy-tools``). A test whose tool is missing is
skipped on a developer's machine, but fails where ``CRISSCROSS_REQUIRE_DEPLOY_TOOLS=1`` (CI sets
it), so CI can never pass by skipping them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.e2e.conftest import build_scenes_roots

DEPLOY_ROOT = REPO_ROOT / "deploy"
REQUIRE_TOOLS_VARIABLE = "CRISSCROSS_REQUIRE_DEPLOY_TOOLS"


def require_tools(*names: str) -> dict[str, str]:
    """The path of each named executable; skips (or, with ``CRISSCROSS_REQUIRE_DEPLOY_TOOLS=1``,
    fails) the test when one is missing."""
    found = {name: shutil.which(name) for name in names}
    missing = sorted(name for name, path in found.items() if path is None)
    if missing:
        message = f"missing {', '.join(missing)}: install them with `make deploy-tools`"
        if os.environ.get(REQUIRE_TOOLS_VARIABLE) == "1":
            pytest.fail(message)
        pytest.skip(message)
    return {name: path for name, path in found.items() if path is not None}


@pytest.fixture(scope="session")
def scenes_roots(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(variants_root, bundles_root): the committed two-tower scenes model and a small bundle of
    generated scenes, so a service answers text and image queries."""
    return build_scenes_roots(tmp_path_factory.mktemp("deploy-scenes"))
