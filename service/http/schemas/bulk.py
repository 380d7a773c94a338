"""``POST /v1/search/bulk``: many searches in one request, each answered with its own status."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidatorFunctionWrapHandler,
    model_validator,
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
        description="1..max_bulk_searches searches, each exactly a POST /v1/search body. A "
        "search that is not a valid body is answered 422 in its place; the others are "
        "searched.",
    )
    _refused: dict[int, list[Mapping[str, Any]]] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _refuse_searches_one_by_one(
        cls, data: Any, handler: ValidatorFunctionWrapHandler
    ) -> BulkSearchRequest:
        """Validate; where only some searches are invalid (each error lies inside one search),
        keep the others and remember each refused search's errors by its position."""
        try:
            made: BulkSearchRequest = handler(data)
            return made
        except ValidationError as error:
            refused = _refused_searches(error.errors(), data)
            if not refused:
                raise
            kept = [one for n, one in enumerate(data["searches"]) if n not in refused]
            made = handler({**data, "searches": kept})
            made._refused = refused
            return made

    @property
    def count(self) -> int:
        """Searches asked for, refused ones included."""
        return len(self.searches) + len(self._refused)

    @property
    def positions(self) -> list[int]:
        """Each valid search's position in the request."""
        return [n for n in range(self.count) if n not in self._refused]

    def refused(self, position: int) -> list[Mapping[str, Any]] | None:
        """The validation errors of the search at ``position`` (None: it is valid)."""
        return self._refused.get(position)

    def queries(self) -> list[SearchQuery]:
        """The valid searches as the engine takes them."""
        return [
            search.to_query(f"searches.{position}")
            for position, search in zip(self.positions, self.searches, strict=True)
        ]


def _refused_searches(
    errors: Sequence[Mapping[str, Any]], data: Any
) -> dict[int, list[Mapping[str, Any]]]:
    """The errors by search position when every error lies inside one search and some search is
    valid; empty when the request as a whole is wrong."""
    if not isinstance(data, Mapping) or not isinstance(data.get("searches"), list):
        return {}
    refused: dict[int, list[Mapping[str, Any]]] = {}
    for error in errors:
        loc = tuple(error.get("loc", ()))
        if len(loc) < 3 or loc[0] != "searches" or not isinstance(loc[1], int):
            return {}
        refused.setdefault(loc[1], []).append(error)
    if len(refused) >= len(data["searches"]):
        return {}
    return refused


class BulkError(BaseModel):
    """Why one search of a bulk request failed."""

    code: str
    message: str
    param: str | None = Field(
        default=None,
        description="The request field the error concerns (searches.<n>.…), where it is one.",
    )


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
