"""A run as a list of phases: named steps over one shared context, run in order.

Each run (:mod:`benchmarks.runs.quality`, :mod:`benchmarks.runs.load`,
:mod:`benchmarks.runs.compare`, :mod:`benchmarks.runs.cider`) declares its phases as a tuple of
:class:`Phase`; a phase reads the run's settings and what earlier phases left in the context, and
adds its own results there (a phase with nothing to do for the run's settings returns at once).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

logger = logging.getLogger(__name__)

ContextT = TypeVar("ContextT")


@dataclass(frozen=True)
class Phase(Generic[ContextT]):
    """One step of a run.

    Attributes:
        name: what the step is called in logs.
        run: the step, given the run's context.
    """

    name: str
    run: Callable[[ContextT], Awaitable[None]]


async def run_phases(phases: Sequence[Phase[ContextT]], context: ContextT) -> None:
    """Run ``phases`` in order over ``context``."""
    for phase in phases:
        logger.debug("phase %s", phase.name)
        await phase.run(context)
