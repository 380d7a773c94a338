"""The engine's query: each side knows its tower and where it is in the request."""

from __future__ import annotations

from service.engine.query.images import ImagePayload
from service.engine.query.query import (
    ImageSide,
    ItemSide,
    PageRequest,
    SearchQuery,
    TextSide,
    VectorSide,
    tower_of,
    where_of,
)


def test_sides_know_their_tower_and_place() -> None:
    image = ImageSide(ImagePayload("pairs.0.left.image", "AAAA"))
    assert [tower_of(side) for side in (TextSide("a", "t"), image)] == ["text", "image"]
    assert tower_of(ItemSide("captions", "x")) is None
    assert tower_of(VectorSide([1.0], "v")) is None
    assert where_of(image, "default") == "pairs.0.left.image"
    assert where_of(TextSide("a", "query.text"), "default") == "query.text"
    assert where_of(VectorSide([1.0], "query.vector"), "default") == "query.vector"
    assert where_of(ItemSide("captions", "x"), "query.item") == "query.item"


def test_a_query_locates_its_side() -> None:
    item = SearchQuery(None, "captions", ItemSide("captions", "x"), PageRequest(k=1))
    assert item.side_where == "query.item"
    bulk = SearchQuery(None, "captions", ItemSide("captions", "x"), PageRequest(k=1), "searches.4")
    assert bulk.side_where == "searches.4.query.item"
    text = SearchQuery(None, "c", TextSide("a", "searches.1.query.text"), PageRequest(k=1))
    assert text.side_where == "searches.1.query.text"
