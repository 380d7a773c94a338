"""Command-line options declared once, on the fields of a run's config dataclass.

A field whose metadata is :func:`option`'s is an option of its run's subcommand: the field holds
the default, the declaration the flag, value type, choices, help and — where the command line's
default differs from the field's — the command-line default. From these declarations
:func:`add_options` adds the argparse options (in field order, which is the order ``--help``
lists them in) and :func:`config_from_args` builds the config from the parsed arguments. A field
without a declaration is not on the command line and keeps its default there; a declaration
without a flag fixes the field's command-line value.

Example::

    @dataclass(frozen=True, kw_only=True)
    class LoadRunConfig:
        url: str = field(metadata=url_option())
        k: int = field(default=10, metadata=option("--k", parse=positive_int, help="... (10)"))
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    ConfigT = TypeVar("ConfigT", bound=DataclassInstance)
else:
    ConfigT = TypeVar("ConfigT")

DATA_DIR_ENV: Final = "CRISSCROSS_DATA_DIR"
"""Environment variable naming the default ``--data`` folder."""
DEFAULT_URL: Final = "http://127.0.0.1:8000"

_METADATA_KEY: Final = "benchmarks.runs.options"


class _Unset(enum.Enum):
    UNSET = enum.auto()


UNSET: Final = _Unset.UNSET
"""No command-line default of its own: the field's default is used."""


@dataclass(frozen=True)
class Option:
    """How one config field appears on the command line.

    Attributes:
        flag: the option string (``--probe-k``), or ``None`` for a field the command line sets
            to ``cli_default`` without an option.
        help: the help text.
        parse: the argparse ``type`` (a value parser), or ``None`` for a string.
        choices: the allowed values, or ``None``.
        required: whether the option must be given.
        switch: a flag without a value (``store_true``).
        repeat: the option may be given several times; its values are collected in a list
            (``append``; ``None`` when not given: ``convert`` makes the field's value).
        negate: the field is the switch's negation (``--no-progress`` → ``show_progress``).
        cli_default: the command-line default when it differs from the field's, else
            :data:`UNSET`.
        cli_default_factory: computes the command-line default when the parser is built (an
            environment variable), or ``None``.
        convert: maps the parsed value to the field's (e.g. clamps a negative count to 0).
    """

    flag: str | None
    help: str | None = None
    parse: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    required: bool = False
    switch: bool = False
    repeat: bool = False
    negate: bool = False
    cli_default: object = UNSET
    cli_default_factory: Callable[[], object] | None = None
    convert: Callable[[Any], Any] | None = None

    @property
    def dest(self) -> str:
        """The attribute argparse stores the value under (``--probe-k`` → ``probe_k``)."""
        if self.flag is None:
            raise ValueError("an option without a flag has no argparse destination")
        return self.flag.lstrip("-").replace("-", "_")


def option(
    flag: str | None,
    *,
    help: str | None = None,
    parse: Callable[[str], Any] | None = None,
    choices: tuple[str, ...] | None = None,
    required: bool = False,
    switch: bool = False,
    repeat: bool = False,
    negate: bool = False,
    cli_default: object = UNSET,
    cli_default_factory: Callable[[], object] | None = None,
    convert: Callable[[Any], Any] | None = None,
) -> Mapping[str, Option]:
    """The metadata of a dataclass field that is a command-line option (see :class:`Option`)."""
    return {
        _METADATA_KEY: Option(
            flag=flag,
            help=help,
            parse=parse,
            choices=choices,
            required=required,
            switch=switch,
            repeat=repeat,
            negate=negate,
            cli_default=cli_default,
            cli_default_factory=cli_default_factory,
            convert=convert,
        )
    }


def declared_options(config_type: type[ConfigT]) -> list[tuple[dataclasses.Field[Any], Option]]:
    """The config's fields that carry an :class:`Option`, in field order."""
    declared = []
    for item in dataclasses.fields(config_type):
        found = item.metadata.get(_METADATA_KEY)
        if isinstance(found, Option):
            declared.append((item, found))
    return declared


def cli_default(item: dataclasses.Field[Any], declared: Option) -> object:
    """The value a field takes on the command line when its option is not given."""
    if declared.cli_default_factory is not None:
        return declared.cli_default_factory()
    if declared.cli_default is not UNSET:
        return declared.cli_default
    if item.default is not dataclasses.MISSING:
        return item.default
    if item.default_factory is not dataclasses.MISSING:
        return item.default_factory()
    return None


def add_options(parser: argparse.ArgumentParser, config_type: type[ConfigT]) -> None:
    """Add every declared option of ``config_type`` to ``parser``, in field order."""
    for item, declared in declared_options(config_type):
        if declared.flag is None:
            continue
        settings: dict[str, Any] = {}
        if declared.switch:
            settings["action"] = "store_true"
        elif declared.repeat:
            settings["action"] = "append"
            if declared.parse is not None:
                settings["type"] = declared.parse
        else:
            if declared.parse is not None:
                settings["type"] = declared.parse
            if declared.choices is not None:
                settings["choices"] = declared.choices
            if declared.required:
                settings["required"] = True
            else:
                settings["default"] = cli_default(item, declared)
        parser.add_argument(declared.flag, help=declared.help, **settings)


def config_from_args(config_type: type[ConfigT], args: argparse.Namespace) -> ConfigT:
    """The config of parsed arguments: each declared field from its option (negated or
    converted as declared), or its fixed command-line value; undeclared fields keep their
    defaults.

    Raises:
        ValueError: the config refuses the combination (its ``__post_init__``).
    """
    values: dict[str, Any] = {}
    for item, declared in declared_options(config_type):
        if declared.flag is None:
            values[item.name] = cli_default(item, declared)
            continue
        value = getattr(args, declared.dest)
        if declared.negate:
            value = not value
        if declared.convert is not None:
            value = declared.convert(value)
        values[item.name] = value
    return config_type(**values)


# -- options several runs share -----------------------------------------------------------------


def url_option() -> Mapping[str, Option]:
    """``--url``: the service root (a required field; ``http://127.0.0.1:8000`` on the command
    line)."""
    return option("--url", cli_default=DEFAULT_URL, help="service root URL")


def data_option(holds: str | None = None) -> Mapping[str, Option]:
    """``--data``: the data folder (a required field; ``$CRISSCROSS_DATA_DIR`` or
    ``../shared/data`` on the command line); ``holds`` names what the run reads from it."""
    what = f" with {holds}" if holds else ""
    return option(
        "--data",
        parse=Path,
        cli_default_factory=lambda: Path(os.environ.get(DATA_DIR_ENV, "../shared/data")),
        help=f"data folder{what} (${DATA_DIR_ENV} or ../shared/data)",
    )


def out_option(files: str) -> Mapping[str, Option]:
    """``--out``: the folder the run writes ``files`` into (required on the command line)."""
    return option("--out", parse=Path, required=True, help=f"folder for {files}")


def ready_timeout_option() -> Mapping[str, Option]:
    """``--ready-timeout``: seconds to wait for ``GET /readyz``."""
    return option("--ready-timeout", parse=float, help="seconds for /readyz")


def no_progress_option(help: str = "no progress bars") -> Mapping[str, Option]:
    """``--no-progress``: the field (``show_progress``, default true) is its negation."""
    return option("--no-progress", switch=True, negate=True, help=help)
