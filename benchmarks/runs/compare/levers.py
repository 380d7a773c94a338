"""Lever settings: the rows of a compare run (``--setting NAME=key:value,...``).

A setting names the encoder variant that answers and the search levers every search of the run
carries (``POST /v1/search`` and each search of ``POST /v1/search/bulk``): ``mode`` (dense,
lexical, hybrid), ``fusion`` (``rrf`` with ``rrf_k``, or ``weighted`` with ``alpha``, the dense
leg's weight), ``window`` (candidates per hybrid leg or of a re-rank's first stage),
``rerank`` (``exact``, or a served variant's name), ``lexical_field`` (the field keywords are
searched in; the keywords are always the query's own text) and the index's ``nprobe`` /
``ef_search`` / ``exact``. A key left out is the service's default. ``--variants a,b`` is the
settings ``a=variant:a`` and ``b=variant:b``, which send nothing but the variant.

Every value is checked here, before any request: unknown keys, values of the wrong kind and
levers that cannot go together (``fusion`` without ``mode:hybrid``, ``exact:true`` with
``nprobe``, ...) raise :class:`ValueError` naming the setting and the key.

A hybrid or re-ranked ranking is its first stage's best ``window`` rows, so it depends on the
window; such a setting always sends one (its own, else :data:`DEFAULT_WINDOW`, the service's
default for k ≤ 100), and its retrieval replays ask for at most that many results
(:meth:`LeverSetting.quality_k`): the quality and latency searches then rank the same way, and a
replay's first ``probe_k`` results are a prefix of its deeper ones.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Final

from crisscross_client import models as m

SETTING_KEYS: Final = (
    "variant",
    "mode",
    "fusion",
    "rrf_k",
    "alpha",
    "window",
    "rerank",
    "lexical_field",
    "nprobe",
    "ef_search",
    "exact",
)
"""The keys of a setting, in the order the report lists them."""
MODES: Final = ("dense", "lexical", "hybrid")
FUSIONS: Final = ("rrf", "weighted")
DEFAULT_WINDOW: Final = 100
"""The window a hybrid or re-ranked setting sends when it names none: the service's default
(``max(100, offset + k)``) for k ≤ 100."""
SETTING_HELP: Final = (
    "a row of the comparison, repeatable: NAME=key:value,... with keys variant (service "
    "default), mode (dense|lexical|hybrid), fusion (rrf|weighted), rrf_k (≥ 1), alpha (0..1, "
    "dense weight), window (≥ 1; 100 when hybrid or re-ranked), rerank (exact|<variant>), "
    "lexical_field, nprobe, ef_search, exact (true|false); e.g. --setting "
    "hybrid=variant:minilm-l6-v2,mode:hybrid,fusion:rrf; the first is the baseline; instead of "
    "--variants"
)

_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+@-]*\Z")
_TRUE: Final = frozenset({"true", "1", "yes", "on"})
_FALSE: Final = frozenset({"false", "0", "no", "off"})


@dataclass(frozen=True)
class LeverSetting:
    """One row of a compare run: a name, the variant and the search levers (``None``: left out
    of the request, the service's default).

    Raises:
        ValueError: a value the API does not take, or levers that do not go together.
    """

    name: str
    variant: str | None = None
    mode: str | None = None
    fusion: str | None = None
    rrf_k: int | None = None
    alpha: float | None = None
    window: int | None = None
    rerank: str | None = None
    lexical_field: str | None = None
    nprobe: int | None = None
    ef_search: int | None = None
    exact: bool | None = None

    def __post_init__(self) -> None:
        for problem in self._problems():
            raise ValueError(f"setting {self.name!r}: {problem}")
        if self.fusion is None and self.rrf_k is not None:
            object.__setattr__(self, "fusion", "rrf")
        if self.fusion is None and self.alpha is not None:
            object.__setattr__(self, "fusion", "weighted")

    def _problems(self) -> list[str]:
        problems = []
        if not _NAME.match(self.name):
            problems.append(
                "a name is letters, digits and . _ + @ - (starting with a letter or digit)"
            )
        for key in ("variant", "rerank", "lexical_field"):
            value = getattr(self, key)
            if value is not None and not value.strip():
                problems.append(f"{key} is empty")
        if self.mode is not None and self.mode not in MODES:
            problems.append(f"mode must be one of {', '.join(MODES)}; got {self.mode!r}")
        if self.fusion is not None and self.fusion not in FUSIONS:
            problems.append(f"fusion must be one of {', '.join(FUSIONS)}; got {self.fusion!r}")
        for key in ("rrf_k", "window", "nprobe", "ef_search"):
            value = getattr(self, key)
            if value is not None and value < 1:
                problems.append(f"{key} must be at least 1; got {value}")
        if self.alpha is not None and not 0.0 <= self.alpha <= 1.0:
            problems.append(f"alpha must be in [0, 1]; got {self.alpha}")
        if self.rrf_k is not None and self.fusion == "weighted":
            problems.append("rrf_k goes with fusion rrf, not weighted")
        if self.alpha is not None and self.fusion == "rrf":
            problems.append("alpha goes with fusion weighted, not rrf")
        if self.rrf_k is not None and self.alpha is not None:
            problems.append("give rrf_k (fusion rrf) or alpha (fusion weighted), not both")
        fused = self.fusion is not None or self.rrf_k is not None or self.alpha is not None
        if fused and self.mode != "hybrid":
            problems.append("fusion, rrf_k and alpha need mode:hybrid")
        if self.window is not None and self.mode != "hybrid" and self.rerank is None:
            problems.append("window needs mode:hybrid or a rerank")
        if self.lexical_field is not None and self.mode not in ("lexical", "hybrid"):
            problems.append("lexical_field needs mode:lexical or mode:hybrid")
        if self.exact and (self.nprobe is not None or self.ef_search is not None):
            problems.append("exact:true goes alone, without nprobe or ef_search")
        return problems

    @classmethod
    def of_variant(cls, variant: str) -> LeverSetting:
        """The row of ``--variants``: named after the variant, sending only the variant."""
        return cls(name=variant, variant=variant)

    def with_variant(self, variant: str) -> LeverSetting:
        """The same setting with its variant named (a setting without one gets the service's
        default before the run searches)."""
        return dataclasses.replace(self, variant=variant)

    @property
    def ranked_by_window(self) -> bool:
        """Whether the ranking is a window's (hybrid, or re-ranked)."""
        return self.mode == "hybrid" or self.rerank is not None

    def sent_window(self) -> int | None:
        """The window the searches send: the setting's, else :data:`DEFAULT_WINDOW` for a
        ranking by window, else none."""
        if self.window is not None:
            return self.window
        return DEFAULT_WINDOW if self.ranked_by_window else None

    def quality_k(self, k: int) -> int:
        """Results a retrieval replay asks for: ``k``, at most the window sent."""
        window = self.sent_window()
        return k if window is None else min(k, window)

    def rerank_variant(self) -> str | None:
        """The variant a re-rank by variant names (``None``: none, or ``exact``)."""
        return None if self.rerank in (None, "exact") else self.rerank

    def levers(self) -> dict[str, object]:
        """The keys the setting sets, in :data:`SETTING_KEYS` order (fusion inferred from
        ``rrf_k`` / ``alpha`` included)."""
        return {key: getattr(self, key) for key in SETTING_KEYS if getattr(self, key) is not None}

    def search_fields(self) -> dict[str, Any]:
        """The fields every search of this setting carries besides its query, collection, k,
        exclusions and variant, as the API client's models write them (empty: none)."""
        request = m.SearchRequest(
            collection="-",
            query=m.TextQuery(text="-"),
            mode=self._mode(),
            lexical=(
                None if self.lexical_field is None else m.LexicalOptions(field=self.lexical_field)
            ),
            fusion=self._fusion(),
            window=self.sent_window(),
            rerank=self._rerank(),
            search_params=self._search_params(),
        )
        fields = request.body()
        for key in ("collection", "query"):
            fields.pop(key)
        return fields

    def _mode(self) -> m.SearchMode | None:
        for mode in ("dense", "lexical", "hybrid"):
            if self.mode == mode:
                return mode
        return None

    def _fusion(self) -> m.RrfFusion | m.WeightedFusion | None:
        if self.fusion == "rrf":
            return m.RrfFusion(method="rrf", k=self.rrf_k)
        if self.fusion == "weighted":
            return m.WeightedFusion(method="weighted", alpha=self.alpha)
        return None

    def _rerank(self) -> m.ExactRerank | m.VariantRerank | None:
        if self.rerank is None:
            return None
        if self.rerank == "exact":
            return m.ExactRerank(by="exact")
        return m.VariantRerank(by="variant", variant=self.rerank)

    def _search_params(self) -> m.SearchParams | None:
        if self.nprobe is None and self.ef_search is None and self.exact is None:
            return None
        return m.SearchParams(nprobe=self.nprobe, ef_search=self.ef_search, exact=self.exact)

    def describe(self) -> str:
        """The levers in a few words (``mode hybrid, fusion rrf (k 60), window 200``); ``–``
        when the setting sets none but the variant."""
        parts = []
        if self.mode is not None:
            parts.append(f"mode {self.mode}")
        if self.fusion == "rrf":
            parts.append("fusion rrf" + (f" (k {self.rrf_k})" if self.rrf_k is not None else ""))
        elif self.fusion == "weighted":
            alpha = f" (alpha {self.alpha:g})" if self.alpha is not None else ""
            parts.append(f"fusion weighted{alpha}")
        if self.lexical_field is not None:
            parts.append(f"keywords in {self.lexical_field}")
        if self.rerank is not None:
            parts.append(f"rerank {self.rerank}")
        window = self.sent_window()
        if window is not None:
            parts.append(f"window {window}" + ("" if self.window is not None else " (default)"))
        for key in ("nprobe", "ef_search", "exact"):
            value = getattr(self, key)
            if value is not None:
                parts.append(f"{key} {str(value).lower()}")
        return ", ".join(parts) or "–"


def _integer(key: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{key} must be an integer; got {text!r}") from None


def _number(key: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{key} must be a number; got {text!r}") from None


def _boolean(key: str, text: str) -> bool:
    lowered = text.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"{key} must be true or false; got {text!r}")


def _typed(key: str, text: str) -> object:
    if key in ("rrf_k", "window", "nprobe", "ef_search"):
        return _integer(key, text)
    if key == "alpha":
        return _number(key, text)
    if key == "exact":
        return _boolean(key, text)
    return text


def parse_setting(text: str) -> LeverSetting:
    """``NAME=key:value,key:value`` → its :class:`LeverSetting` (``NAME=``: the service's
    defaults).

    Raises:
        ValueError: no name, a pair without ``:``, an unknown or repeated key, a value of the
            wrong kind, or levers that do not go together (the message names the setting).
    """
    name, equals, body = text.partition("=")
    name = name.strip()
    if not equals or not name:
        raise ValueError(f"expected NAME=key:value,...; got {text!r}")
    values: dict[str, Any] = {}
    try:
        for pair in (part.strip() for part in body.split(",")):
            if not pair:
                continue
            key, colon, value = pair.partition(":")
            key, value = key.strip(), value.strip()
            if not colon or not value:
                raise ValueError(f"expected key:value; got {pair!r}")
            if key not in SETTING_KEYS:
                raise ValueError(f"unknown key {key!r}; keys: {', '.join(SETTING_KEYS)}")
            if key in values:
                raise ValueError(f"{key} is given twice")
            values[key] = _typed(key, value)
    except ValueError as error:
        raise ValueError(f"setting {name!r}: {error}") from None
    return LeverSetting(name=name, **values)


def setting_argument(text: str) -> LeverSetting:
    """``--setting``'s value type: :func:`parse_setting`, its error as argparse shows it."""
    try:
        return parse_setting(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
