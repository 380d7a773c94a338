"""Fixtures of the deploy tests: what ``deploy/`` ships, built and run for real where this machine
can (podman, Prometheus, kubectl), checked statically where it cannot.

The tools come from Debian's packages (``make test-tools``); see
:func:`tests.conftest.require_tools` for what a missing one does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.e2e.conftest import build_scenes_roots

DEPLOY_ROOT = REPO_ROOT / "deploy"


@pytest.fixture(scope="session")
def scenes_roots(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(variants_root, bundles_root): the committed two-tower scenes model and a small bundle of
    generated scenes, so a service answers text and image queries."""
    return build_scenes_roots(tmp_path_factory.mktemp("deploy-scenes"))
