"""``POST /v1/search/bulk``: many searches in one request, each answered with its own status."""

from __future__ import annotations

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
)

from service.engine.query.query import (
    SearchQuery,
)
from service.http.schemas.search import SearchPageResult, SearchRequest, Timings
from service.http.schemas.wire import EXAMPLE_ITEM, StrictRequest


class BulkSearchRequest(StrictRequest):
    """``POST /v1/search/bulk``: many searches in one request, answered in order."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "searches": [
                        {"query": {"text": "a dog on a couch"}, "collection": "captions", "k": 5},
                        {"query": {"item": EXAMPLE_ITEM}, "collection": "captions", "k": 5},
                    ]
                }
            ]
        }
    )

    searches: list[SearchRequest] = Field(
        min_length=1,
        description="1..max_bulk_searches searches, each exactly a POST /v1/search body.",
    )

    def queries(self) -> list[SearchQuery]:
        """The searches as the engine takes them."""
        return [search.to_query(f"searches.{index}") for index, search in enumerate(self.searches)]


class BulkError(BaseModel):
    """Why one search of a bulk request failed."""

    code: str
    message: str


class BulkItem(BaseModel):
    """The answer to one search of a bulk request: ``status`` 200 with its ``result``, or the
    status and ``error`` a lone POST /v1/search would have answered."""

    status: int
    result: SearchPageResult | None = None
    error: BulkError | None = None


class BulkSearchResponse(BaseModel):
    """One answer per search, in request order, and the request's stage times."""

    responses: list[BulkItem]
    timings_ms: Timings
