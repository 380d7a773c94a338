"""What a build does with bad items: refuse the build (the default) or skip them; and the
refusals, the same for the single-machine and the distributed build.

A build is refused — nothing embedded or written — when it meets bad items under ``refuse``
before embedding (:func:`refuse_bad_items`), when an image fails to decode while embedding under
``refuse`` (:func:`refuse_decode_failures`), and under either policy when a collection is left
with no item (:func:`refuse_if_empty`).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Final

from index_builder.build_report import problem_lines
from index_builder.items import BadItem

SHOWN_REFUSALS: Final = 50


class OnError(StrEnum):
    """What a build does with bad items."""

    REFUSE = "refuse"
    SKIP = "skip"


class BuildRefusedError(Exception):
    """The build found bad items under ``on_error=refuse`` (or nothing left to index) and
    wrote nothing. ``bad`` lists them; ``str()`` names each, up to a cap."""

    def __init__(self, bad: Sequence[BadItem], *, read: int, headline: str) -> None:
        self.bad = sorted(bad, key=BadItem.sort_key)
        self.read = read
        self.headline = headline
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        """The headline, then one ``file:line: reason`` line per bad item (capped)."""
        return [self.headline, *problem_lines(self.bad, limit=SHOWN_REFUSALS, indent="  ")]


def refuse_bad_items(bad: Sequence[BadItem], read: int, on_error: OnError) -> None:
    """Before embedding: :class:`BuildRefusedError` for any bad item under ``refuse``
    (``read``: the records read, over every collection)."""
    if bad and on_error is OnError.REFUSE:
        raise BuildRefusedError(
            bad,
            read=read,
            headline=(
                f"refused: {len(bad)} of {read} records are bad; nothing was embedded or "
                "written (--on-error skip leaves them out)"
            ),
        )


def refuse_decode_failures(
    bad: Sequence[BadItem], failed: int, read: int, on_error: OnError, *, stopped: bool
) -> None:
    """After embedding: :class:`BuildRefusedError` under ``refuse`` when ``failed`` images
    could not be decoded (``stopped``: the embedding stopped there, leaving later images
    untried)."""
    if failed and on_error is OnError.REFUSE:
        later = " (the build stopped there: later images were not tried)" if stopped else ""
        raise BuildRefusedError(
            bad,
            read=read,
            headline=(
                f"refused: {failed} image(s) could not be decoded while embedding{later}; "
                "nothing was written (--on-error skip leaves them out)"
            ),
        )


def refuse_if_empty(
    collection: str, kept: int, bad: Sequence[BadItem], read: int, *, collections: int = 1
) -> None:
    """:class:`BuildRefusedError` when ``collection`` keeps no item of the ``read`` records
    read for it (``collections``: how many the build writes; with more than one the headline
    names this one)."""
    if kept:
        return
    where = f" in {collection}" if collections > 1 else ""
    raise BuildRefusedError(
        bad,
        read=read,
        headline=(
            f"nothing to index{where}: none of the {read} records is usable; nothing written"
        ),
    )
