"""Where the service listens and what it serves: the bundles and variants, the devices the
encoders and indexes run on, and how bundle files are mapped."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, Field, field_validator
from pydantic_settings import NoDecode

from encoders.providers import is_provider_name
from service.settings.names import (
    FaissDevice,
    LogLevel,
    ProviderChoice,
    SettingsError,
)
from storage.layout import CURRENT_FILE


class ServingSettings(BaseModel):
    """Where the service listens and what it serves: the bundles and variants, the devices the"""

    host: str = Field(
        default="127.0.0.1",
        description=(
            "Interface the server listens on. A host that is not loopback needs read_keys (or "
            "allow_unauthenticated_public), else the service refuses to start."
        ),
    )
    port: int = Field(default=8000, ge=1, le=65535, description="TCP port the server listens on.")
    bundles_root: Path = Field(
        default=Path("artifacts/bundles"),
        description=(
            "Folder holding the bundles, each <name>/<version>/ with a CURRENT pointer naming "
            "the version served."
        ),
    )
    bundles: Annotated[list[str] | None, NoDecode] = Field(
        default=None,
        description=(
            "Bundle names to serve (comma-separated in the environment); "
            "default: every folder under bundles_root that has a CURRENT pointer."
        ),
    )
    variants_root: Path = Field(
        default=Path("artifacts/variants"),
        description="Folder of encoder variants; a bundle's variant is <variants_root>/<name>.",
    )
    default_variant: str | None = Field(
        default=None,
        description=(
            "Variant used when a request names none; default: the only loaded variant. With "
            "several loaded and none set, a request without 'variant' gets 409 ambiguous_name."
        ),
    )
    providers: Annotated[ProviderChoice | tuple[str, ...], NoDecode] = Field(
        default="auto",
        description=(
            "onnxruntime providers: auto (TensorRT when onnxruntime lists it and libnvinfer "
            "loads, then CUDA when listed, then CPU), cpu, cuda (refuses to start unless the "
            "session really runs on CUDA), tensorrt (likewise for TensorRT), or a forced list "
            "of provider names in priority order, comma-separated (e.g. "
            "CUDAExecutionProvider,CPUExecutionProvider; each must really run). What runs is "
            "reported per tower by /v1/variants."
        ),
    )
    faiss_device: FaissDevice = Field(
        default="auto",
        description=(
            "Where faiss searches: auto (flat and IVF indexes on GPU 0 when the faiss build has "
            "GPU support and sees a GPU, else CPU; HNSW and other kinds stay on CPU), cpu, or "
            "gpu (refuses to start unless every index moves to the GPU). Searches asking for "
            "more rows than the GPU can select (k > 2048) run on the CPU copy. What runs is "
            "reported per collection by /v1/collections."
        ),
    )
    verify_bundle_hashes: bool = Field(
        default=True,
        description=(
            "Check the sha256 of every bundle file before serving it; a bundle whose files do not "
            "match is refused (on reload: 409 bundle_rejected, the old version keeps serving)."
        ),
    )
    bundle_mapping: Literal["private-copy", "in-place"] = Field(
        default="private-copy",
        description=(
            "How the service maps a bundle version's files (vectors, index codes, on-disk lists, "
            "thumbnails). private-copy: it first copies the version into a folder it owns "
            "(private_copies_dir) and verifies and maps the copy, so a bundle file truncated or "
            "rewritten under the running server cannot reach a served page (that would kill "
            "the process with SIGBUS); costs one copy of each served version on disk and the "
            "time to copy it at load. in-place: maps the bundle's own files, for bundles on a "
            "volume nothing writes while it is served (read-only mounts)."
        ),
    )
    private_copies_dir: Path | None = Field(
        default=None,
        description=(
            "Where bundle_mapping=private-copy keeps its copies; default: a fresh folder under "
            "the system's temporary folder (TMPDIR), removed at exit (with several workers: one "
            "they share in their run folder). Point it at a disk, not a RAM-backed /tmp, for "
            "large bundles."
        ),
    )
    log_level: LogLevel = Field(default="info", description="Level of the service's log lines.")

    @field_validator("bundles", mode="before")
    @classmethod
    def _split_bundle_names(cls, value: object) -> object:
        """Accept ``a,b`` (environment style) as well as a list."""
        if isinstance(value, str):
            names = [name.strip() for name in value.split(",")]
            return [name for name in names if name]
        return value

    @field_validator("providers", mode="before")
    @classmethod
    def _split_provider_list(cls, value: object) -> object:
        """A keyword stays a keyword (any case); anything else is a comma-separated list."""
        if isinstance(value, str):
            text = value.strip()
            if text.lower() in get_args(ProviderChoice):
                return text.lower()
            return tuple(part.strip() for part in text.split(",") if part.strip())
        if isinstance(value, list):
            return tuple(value)
        return value

    @field_validator("providers")
    @classmethod
    def _provider_names_are_names(
        cls, value: ProviderChoice | tuple[str, ...]
    ) -> ProviderChoice | tuple[str, ...]:
        if not isinstance(value, tuple):
            return value
        keywords = ", ".join(get_args(ProviderChoice))
        if not value:
            raise ValueError(f"must be one of {keywords} or a list of provider names")
        bad = [name for name in value if not is_provider_name(name)]
        if bad:
            raise ValueError(
                f"{bad} are neither keywords ({keywords}) nor onnxruntime provider names "
                "(e.g. CUDAExecutionProvider)"
            )
        if len(set(value)) != len(value):
            raise ValueError(f"provider names repeat: {list(value)}")
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _lowercase_log_level(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value

    @field_validator("bundles")
    @classmethod
    def _bundle_names_are_plain(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("must name at least one bundle (leave it unset to serve all)")
        for name in value:
            if "/" in name or "\\" in name or name in {".", ".."} or name.startswith("."):
                raise ValueError(f"bundle name {name!r} must be a plain folder name")
        if len(set(value)) != len(value):
            raise ValueError(f"bundle names repeat: {value}")
        return value

    def bundle_dirs(self) -> list[Path]:
        """The ``<bundles_root>/<name>`` folders to serve, sorted by name.

        Raises :class:`SettingsError` when ``bundles_root`` is not a folder, when a named bundle
        has no ``CURRENT`` pointer, or when nothing is left to serve.
        """
        root = self.bundles_root
        # A server of live collections alone needs no bundle.
        live_only = getattr(self, "collections_dir", None) is not None and self.bundles is None
        if not root.is_dir():
            if live_only:
                return []
            raise SettingsError(
                f"bundles_root {str(root)!r} is not a folder (set CRISSCROSS_BUNDLES_ROOT or "
                "--bundles-root; build bundles with `python -m index_builder build`)"
            )
        if self.bundles is None:
            found = sorted(
                child
                for child in root.iterdir()
                if child.is_dir()
                and not child.name.startswith(".")
                and (child / CURRENT_FILE).is_file()
            )
            if not found and not live_only:
                raise SettingsError(f"no bundle with a {CURRENT_FILE} pointer under {str(root)!r}")
            return found
        missing = [name for name in self.bundles if not (root / name / CURRENT_FILE).is_file()]
        if missing:
            raise SettingsError(
                f"bundles {missing} have no {CURRENT_FILE} pointer under {str(root)!r}"
            )
        return [root / name for name in sorted(self.bundles)]

    def check_serving_paths(self) -> None:
        """Fail fast, before the server starts, on paths that cannot serve anything.

        Raises :class:`SettingsError` with a message meant for the operator.
        """
        self.bundle_dirs()
        if not self.variants_root.is_dir():
            raise SettingsError(
                f"variants_root {str(self.variants_root)!r} is not a folder "
                "(set CRISSCROSS_VARIANTS_ROOT or --variants-root)"
            )
