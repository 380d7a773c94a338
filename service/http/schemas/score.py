"""``POST /v1/score``: pairs of sides and their cosine similarity."""

from __future__ import annotations

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
)

from service.engine.query.query import (
    QuerySide,
)
from service.http.schemas.queries import QueryInput
from service.http.schemas.search import Timings
from service.http.schemas.wire import EXAMPLE_ITEM, StrictRequest


class ScorePair(StrictRequest):
    """Two sides whose similarity is wanted."""

    left: QueryInput
    right: QueryInput


class ScoreRequest(StrictRequest):
    """``POST /v1/score``: cosine similarity of each pair, in order."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"pairs": [{"left": {"text": "a dog on a couch"}, "right": {"item": EXAMPLE_ITEM}}]}
            ]
        }
    )

    pairs: list[ScorePair] = Field(min_length=1, description="1..max_score_pairs pairs.")
    variant: str | None = Field(default=None, description="Encoder variant; default if omitted.")

    def sides(self) -> list[tuple[str, QueryInput]]:
        """Every side in request order (left, right of each pair), with its location."""
        return [
            (f"pairs.{index}.{name}", side)
            for index, pair in enumerate(self.pairs)
            for name, side in (("left", pair.left), ("right", pair.right))
        ]

    def core_sides(self) -> list[QuerySide]:
        """Every side in request order, as the search core takes them."""
        return [side.side(where) for where, side in self.sides()]


class ScoreResponse(BaseModel):
    """One cosine similarity per requested pair, in request order."""

    scores: list[float]
    variant: str
    bundle_version: str | None = Field(
        description="Version of the bundle whose stored vectors were used (comma-joined when "
        "several); null when every side was a text."
    )
    timings_ms: Timings
