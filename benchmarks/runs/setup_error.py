"""The one refusal a run raises itself (the others are the service's and the data files')."""

from __future__ import annotations


class BenchmarkSetupError(RuntimeError):
    """The service does not serve what the data files describe (a wrong collection size, a
    variant not loaded), a first answer is wrong, or it can answer none of the requested
    tasks."""
