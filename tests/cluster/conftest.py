"""One local Ray cluster for the whole cluster test session (starting one takes seconds)."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

import pytest

ray = pytest.importorskip("ray")

# Ray Serve's own config models pass extra keywords to pydantic's Field (``update_type``), which
# pydantic deprecates with a warning at import time; import Serve once here with exactly that
# warning ignored, so the test modules (and the code under test) import it without it.
with warnings.catch_warnings():
    warnings.filterwarnings(
        "ignore",
        message=r"Using extra keyword arguments on `Field` is deprecated",
        category=DeprecationWarning,
    )
    # Without the serve extra the Serve tests skip themselves.
    with contextlib.suppress(ImportError):
        import ray.serve


@pytest.fixture(scope="session")
def ray_session() -> Iterator[None]:
    """A local cluster with 4 logical CPUs on this 2-core machine (actors and read tasks must
    not wait on each other) and a small object store; shut down at the end of the session."""
    ray.init(
        num_cpus=4,
        object_store_memory=128 << 20,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )
    try:
        yield
    finally:
        ray.shutdown()
