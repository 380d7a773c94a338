"""The run's own refusal (the command line reports it with exit status 1, see ``test_main``)."""

from __future__ import annotations

import pytest

from benchmarks.runs.setup_error import BenchmarkSetupError


def test_a_setup_error_is_a_runtime_error_with_its_message() -> None:
    with pytest.raises(RuntimeError, match="none of the tasks"):
        raise BenchmarkSetupError("the service can answer none of the tasks")
