"""Scroll and count: a collection's items in row order, page by page, and how many a filter keeps.

A scroll reads the rows a search could return with the same filter — alive and kept — in row
order, which is write order: a bundle's build order, a live collection's order of writes (an
item replaced goes to the end, as its new version is a new row), a sharded collection's shards
one after the other. Each page ends with a **cursor**, where the next page starts: opaque to the
client (URL-safe base64 of a small JSON document), it names the collection, the *generation* its
rows are numbered in and the first row the next page may hold. Nothing is held on the server
between pages; a page costs one filter mask over the collection (as a search does) and the page's
own rows.

What the rows' numbers mean, per kind of collection (:class:`ScrollTarget`):

- a bundle collection: its served version. A reload to another version numbers other items, so a
  cursor of the version before is refused (start again);
- a live collection: the segment it is served from (its generation,
  :attr:`storage.live.segment.SegmentView.generation`: the sequence number the last compaction
  left it at; and the collection's creation time). Writes append rows and never renumber them,
  so a cursor stays good while the collection is written: an item written after the page was
  made appears on a later page, an item deleted before the scroll reaches it does not, and an
  item replaced after the scroll passed it appears again at its new place (its new version's
  row). A compaction renumbers rows but keeps their order; the collection remembers how its last
  compactions renumbered (while the service runs), so the cursor goes on at the first item at or
  after it that the compaction kept. A cursor from before more compactions than that, or from
  before a restart that followed a compaction, is refused (start again). A restart alone
  numbers rows as before;
- a sharded collection: its shards' versions, as for a bundle; a scroll never goes on without a
  shard (a shard that does not answer refuses the page, 503).

Both :func:`scroll` and :func:`count` block (the filter's mask): the HTTP layer runs them on a
worker thread. :func:`scroll_target` and :func:`check_items_filter` are cheap (the event loop).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from service.engine.collection.bundle_view import BundleView
from service.engine.collection.catalog import Catalog
from service.engine.collection.collection_view import CollectionView
from service.engine.collection.live_collections import LiveCollections, LiveEntry
from service.engine.collection.live_view import LiveView
from service.engine.collection.sharded_collections import ShardedCollections
from service.engine.query.filter_grammar import Filter
from service.engine.query.filtering import check_filter
from service.engine.rank.fusion import Leg
from service.exceptions import (
    InvalidQueryError,
    ShardsUnavailableError,
    VariantMismatchError,
    quoted,
)
from storage.columns import Mask
from storage.live.collection import RENUMBERINGS_KEPT

CURSOR_PARAM: Final = "cursor"
"""The request field a cursor error names."""
_CURSOR_VERSION: Final = 1


@dataclass(frozen=True)
class Position:
    """Where a scroll stands: the collection, the generation its rows are numbered in, and the
    first row the next page may hold."""

    collection: str
    generation: str
    row: int

    def encode(self) -> str:
        """The cursor a client hands back: URL-safe base64 of JSON, unpadded."""
        document = {"v": _CURSOR_VERSION, "c": self.collection, "g": self.generation, "r": self.row}
        text = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
        return base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii").rstrip("=")

    @classmethod
    def decode(cls, cursor: str) -> Position:
        """The position ``cursor`` holds; :class:`InvalidQueryError` (``param`` cursor) when it
        holds none."""
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            document = json.loads(raw.decode("utf-8"))
            if not isinstance(document, dict) or document.get("v") != _CURSOR_VERSION:
                raise ValueError("not a cursor")
            collection, generation, row = document["c"], document["g"], document["r"]
            if not (
                isinstance(collection, str)
                and isinstance(generation, str)
                and isinstance(row, int)
                and not isinstance(row, bool)
                and row >= 0
            ):
                raise ValueError("not a cursor")
        except (binascii.Error, UnicodeError, ValueError, KeyError, TypeError):
            raise _cursor_error(
                "cursor: not a cursor of this service; pass the next_cursor of the page before, "
                "as it was given"
            ) from None
        return cls(collection, generation, row)


def _cursor_error(message: str) -> InvalidQueryError:
    return InvalidQueryError(message, param=CURSOR_PARAM)


Carry = Callable[[str, int], int | None]
"""Maps a cursor's (generation, row) to the row of the target's view where it goes on (None:
the generation is not one the target can follow)."""


def _same_generation_only(generation: str, row: int) -> int | None:
    del generation, row
    return None


@dataclass(frozen=True)
class ScrollTarget:
    """A collection as a scroll or count reads it: its view (one moment of it), the generation
    its rows are numbered in, and how a cursor of an earlier generation goes on (see the module
    docstring)."""

    view: CollectionView
    generation: str
    carry: Carry = _same_generation_only
    stale: str = "was reloaded"
    """Why a cursor of another generation is refused, for the message."""


def scroll_target(
    catalog: Catalog,
    live: LiveCollections | None,
    sharded: ShardedCollections | None,
    name: str,
    variant: str | None,
) -> ScrollTarget:
    """The collection ``name`` names, found as a search finds it: a live collection, else a
    sharded one, else a bundle collection (:meth:`Catalog.locate`: a bare name several variants
    serve takes ``variant``, or the default variant's). :class:`NotFoundError`,
    :class:`AmbiguousNameError`, :class:`VariantMismatchError` as a search's target."""
    entry = None if live is None else live.get(name)
    if entry is not None:
        return _live_target(entry, variant)
    shards = None if sharded is None else sharded.get(name)
    if shards is not None:
        if variant is not None and variant != shards.variant:
            raise VariantMismatchError(
                f"variant: sharded collection {quoted(shards.name)} was embedded by variant "
                f"{shards.variant!r}, not {variant!r}: leave 'variant' out"
            )
        view = shards.view()
        return ScrollTarget(view, view.version)
    _, served = catalog.locate(variant, name, lambda _variant: True)
    bundle_view = BundleView(served)
    return ScrollTarget(
        bundle_view,
        f"{served.qualified_name}@{served.bundle_version}",
        stale="was reloaded (or the cursor is of another variant's collection of that name)",
    )


def _live_target(entry: LiveEntry, variant: str | None) -> ScrollTarget:
    collection = entry.collection
    spec = collection.spec
    if variant is not None and variant != spec.variant:
        embedded = f"variant {spec.variant!r}" if spec.variant else "client vectors"
        raise VariantMismatchError(
            f"variant: live collection {quoted(spec.name)} holds {embedded}, not {variant!r}: "
            "leave 'variant' out"
        )
    segment = collection.view()
    view = LiveView(segment, spec.name, entry.fields, entry.lexical)
    created = spec.created

    def carry(generation: str, row: int) -> int | None:
        made, _, number = generation.rpartition("/")
        if made != created or not number.isdigit():
            return None
        return collection.carried_row(int(number), row, segment.generation)

    return ScrollTarget(
        view,
        f"{created}/{segment.generation}",
        carry,
        stale=f"was compacted more than {RENUMBERINGS_KEPT} times, or compacted and restarted,",
    )


def check_items_filter(target: ScrollTarget, node: Filter | None) -> None:
    """The filter checked against the collection's fields as a search's is
    (:func:`service.engine.query.filtering.check_filter`: :class:`FilterNotApplicableError`,
    :class:`InvalidQueryError`, naming ``filter...``)."""
    if node is not None:
        check_filter(node, target.view.filterable, "filter")


@dataclass(frozen=True)
class ScrolledItem:
    """One item of a page: its id, its metadata (None: not asked for) and its stored vector
    (None: not asked for)."""

    item_id: str
    metadata: Mapping[str, Any] | None
    vector: npt.NDArray[np.float32] | None


@dataclass(frozen=True)
class ScrollPage:
    """One page, in row order, and the cursor of the next (None: the page reached the last kept
    row of the view)."""

    items: list[ScrolledItem]
    next_cursor: str | None


def scroll(
    target: ScrollTarget,
    node: Filter | None,
    limit: int,
    cursor: str | None,
    *,
    include_metadata: bool = True,
    include_vectors: bool = False,
    retry_after_s: int = 1,
) -> ScrollPage:
    """Up to ``limit`` items the (checked) filter ``node`` keeps, in row order, from where
    ``cursor`` stands (None: the first row). Blocking. :class:`InvalidQueryError` (``param``
    cursor) for a cursor that is not one, is another collection's, or whose generation the
    target cannot follow; :class:`ShardsUnavailableError` (``retry_after_s``) when a shard did
    not answer."""
    view = target.view
    start = 0 if cursor is None else _start(target, Position.decode(cursor))
    keep = view.keep(node, ())
    found = _kept_from(keep, view.rows, start, limit + 1)
    rows = found[:limit]
    items: list[ScrolledItem] = []
    if len(rows):
        metadata: list[Mapping[str, Any] | None]
        if include_metadata:
            hits = view.hits(Leg(rows, np.zeros(len(rows), dtype=np.float64)), 0)
            ids = [hit.item_id for hit in hits]
            metadata = [dict(hit.metadata) for hit in hits]
        else:
            ids = view.ids_of(rows)
            metadata = [None] * len(rows)
        vectors = view.vectors_of(rows) if include_vectors else None
        items = [
            ScrolledItem(item_id, meta, None if vectors is None else vectors[i])
            for i, (item_id, meta) in enumerate(zip(ids, metadata, strict=True))
        ]
    _whole(view, retry_after_s)
    following = None
    if len(found) > limit:
        following = Position(view.name, target.generation, int(rows[-1]) + 1).encode()
    return ScrollPage(items, following)


def count(target: ScrollTarget, node: Filter | None, *, retry_after_s: int = 1) -> int:
    """How many items the (checked) filter ``node`` keeps (alive): what a search with that
    filter could return at most. Blocking."""
    view = target.view
    kept = view.kept_count(view.keep(node, ()))
    _whole(view, retry_after_s)
    return kept


def _start(target: ScrollTarget, position: Position) -> int:
    """The first row of the page after ``position``, in the target's view."""
    view = target.view
    if position.collection != view.name:
        raise _cursor_error(
            f"cursor: a cursor of collection {quoted(position.collection)}, not of "
            f"{quoted(view.name)}"
        )
    row: int | None = position.row
    if position.generation != target.generation:
        row = target.carry(position.generation, position.row)
        if row is None:
            raise _cursor_error(
                f"cursor: collection {quoted(view.name)} {target.stale} since this cursor was "
                "made; scroll again from the start (no cursor)"
            )
    assert row is not None
    if row > view.rows:
        raise _cursor_error(
            f"cursor: not a cursor of collection {quoted(view.name)} as it stands; scroll "
            "again from the start (no cursor)"
        )
    return row


def _kept_from(keep: Mask | None, rows: int, start: int, wanted: int) -> npt.NDArray[np.int64]:
    """The first ``wanted`` rows at or after ``start`` that ``keep`` holds (None: every row)."""
    if keep is None:
        return np.arange(start, min(rows, start + wanted), dtype=np.int64)
    found = np.flatnonzero(keep[start:])[:wanted]
    return (found + start).astype(np.int64)


def _whole(view: CollectionView, retry_after_s: int) -> None:
    """Refuse an answer without some shards: a page or a count must hold every shard's rows."""
    missing = view.missing
    if missing:
        raise ShardsUnavailableError(
            f"shards {', '.join(missing)} of collection {quoted(view.name)} did not answer; a "
            "scroll or count needs every shard",
            missing,
            retry_after_s,
        )
