"""The encoder variant manifest (``variant.json``): schema, reading, writing and verification.

A variant is a folder holding ONNX towers, a tokenizer and this manifest (DESIGN §3). The manifest
records the SHA-256 of every other file in the folder; ``fingerprint`` condenses those hashes into
one value that index bundles record, so a service can refuse a bundle built with other weights.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Annotated, Final, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    PositiveFloat,
    PositiveInt,
    StringConstraints,
    ValidationError,
    model_validator,
)

from formats.hashing import sha256_file

MANIFEST_FILENAME: Final = "variant.json"
SCHEMA_VERSION: Final = 1
MANIFEST_FILE_MODE: Final = 0o644

Tower = Literal["text", "image"]
Precision = Literal["fp32", "fp16", "int8"]
# A plain name: no directories, no hidden files, no "..", safe in paths and URLs.
_PLAIN_NAME_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
FileName = Annotated[str, StringConstraints(pattern=_PLAIN_NAME_PATTERN, max_length=255)]
VariantName = Annotated[str, StringConstraints(pattern=_PLAIN_NAME_PATTERN, max_length=128)]
Sha256Hex = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
RgbTriple = tuple[float, float, float]


class VariantError(Exception):
    """A variant folder is missing, malformed, or its files do not match the manifest."""


class _ManifestPart(BaseModel):
    # Unknown keys are refused so a typo in a hand-edited manifest fails loudly instead of being
    # silently ignored; frozen because a loaded manifest describes files that must not change.
    model_config = ConfigDict(extra="forbid", frozen=True)


class TextTower(_ManifestPart):
    """How to turn strings into the text tower's inputs."""

    onnx_file: FileName = "text.onnx"
    tokenizer_file: FileName = "tokenizer.json"
    max_tokens: PositiveInt = Field(description="Truncation length, special tokens included.")
    truncation: Literal["longest_first, right"] = "longest_first, right"
    padding: Literal["dynamic"] = Field(
        default="dynamic", description="Pad each batch to its longest row, never to a fixed length."
    )


class ImageTower(_ManifestPart):
    """How to turn an RGB image into the image tower's input tensor ``[n, 3, height, width]``.

    ``encoders.image_preprocess.preprocess_images`` implements it, in this order:

    1. resize: ``shorter_side`` scales the image, keeping its aspect ratio, so that its shorter
       side is ``resize_to`` pixels (the longer side becomes ``int(resize_to * long / short)``);
       ``exact`` scales it straight to ``height`` x ``width`` (aspect not kept; ``resize_to`` is
       not used);
    2. crop: ``center`` cuts the central ``height`` x ``width`` window (offsets rounded as
       torchvision's ``CenterCrop`` does); a no-op after ``exact``;
    3. scale the 0-255 values to 0-1, then ``(x - mean) / std`` per RGB channel.

    Resampling uses ``interpolation`` with antialiasing when shrinking (Pillow's filters) and is
    computed in float32 on the cropped region only; values are clipped to 0-255 before step 3.
    """

    onnx_file: FileName = "image.onnx"
    height: PositiveInt = Field(description="Input tensor height in pixels.")
    width: PositiveInt = Field(description="Input tensor width in pixels.")
    resize: Literal["shorter_side", "exact"] = Field(
        description="shorter_side: scale so the shorter side equals resize_to, keeping aspect; "
        "exact: scale straight to height x width."
    )
    resize_to: PositiveInt = Field(
        description="Target length in pixels of the shorter side (resize=shorter_side only)."
    )
    interpolation: Literal["bicubic", "bilinear", "nearest"] = "bicubic"
    crop: Literal["center", "none"] = "center"
    mean: RgbTriple = Field(description="Per-channel mean (R, G, B) of 0-1 pixel values.")
    std: tuple[PositiveFloat, PositiveFloat, PositiveFloat] = Field(
        description="Per-channel standard deviation (R, G, B) of 0-1 pixel values."
    )

    @model_validator(mode="after")
    def _resize_yields_the_input_size(self) -> ImageTower:
        # Every rule must end at exactly height x width, or the tensor would not fit the graph.
        if self.resize == "shorter_side":
            if self.crop != "center":
                raise ValueError("resize 'shorter_side' needs crop 'center' to reach a fixed size")
            if self.resize_to < max(self.height, self.width):
                raise ValueError(
                    f"resize_to {self.resize_to} is smaller than the {self.height}x{self.width} "
                    "crop it must contain"
                )
        return self

    @property
    def input_size(self) -> tuple[int, int]:
        """(height, width) in pixels of the tower's input tensor."""
        return self.height, self.width


class SourceModel(_ManifestPart):
    """Where the weights came from and what produced the ONNX files."""

    base_model: str = Field(description="Model id, e.g. sentence-transformers/all-MiniLM-L6-v2.")
    package: str | None = Field(default=None, description="pip package that carried the weights.")
    package_version: str | None = None
    exporter: str | None = Field(default=None, description="Tool, version and settings of export.")


class ParityReport(_ManifestPart):
    """Agreement between the ONNX variant and its reference model on the same inputs."""

    reference: str = Field(description="What the variant was compared against.")
    inputs: PositiveInt = Field(description="Number of inputs compared.")
    min_cosine: float
    mean_cosine: float
    max_abs_diff: float = Field(description="Largest absolute difference of any coordinate.")
    threshold: float = Field(description="The minimum cosine the variant had to reach.")
    worst_input: str = Field(description="The input with the lowest cosine (shortened).")
    status: Literal["passed", "below_bar"] | None = Field(
        default=None,
        description="passed: min_cosine ≥ threshold; below_bar: it is not (the variant was kept "
        "anyway, e.g. an int8 derivation). Absent in manifests written before it existed.",
    )

    @model_validator(mode="after")
    def _status_matches_the_numbers(self) -> ParityReport:
        # A hand-edited or buggy manifest must not call a variant "passed" that is not.
        if self.status is not None and self.status != parity_status(
            self.min_cosine, self.threshold
        ):
            raise ValueError(
                f"status {self.status!r} contradicts min_cosine {self.min_cosine} and "
                f"threshold {self.threshold}"
            )
        return self


def parity_status(min_cosine: float, threshold: float) -> Literal["passed", "below_bar"]:
    """Return "passed" when ``min_cosine`` is a number ≥ ``threshold``, else "below_bar".

    Written as a ``>=`` test so that a NaN minimum is "below_bar".
    """
    return "passed" if min_cosine >= threshold else "below_bar"


class DerivedFrom(_ManifestPart):
    """The fp32 variant a reduced-precision variant was computed from, and how."""

    name: VariantName
    fingerprint: Sha256Hex = Field(description="The source variant's fingerprint.")
    precision: Precision = Field(description="The source variant's precision.")
    method: str = Field(description="Tool, version and settings of the conversion.")
    target: Literal["cpu", "gpu"] = Field(
        description="Where this precision is meant to run: int8 dynamic quantisation is a CPU "
        "format; fp16 is meant for GPUs (onnxruntime's CPU provider runs it, but not faster)."
    )


class VariantManifest(_ManifestPart):
    """The schema of ``variant.json``."""

    schema_version: Literal[1] = SCHEMA_VERSION
    name: VariantName
    towers: list[Tower] = Field(min_length=1)
    dim: PositiveInt = Field(description="Embedding dimension d of every tower's [n, d] output.")
    normalised: bool = Field(description="Whether the ONNX graphs L2-normalise their output.")
    precision: Precision
    text: TextTower | None = None
    image: ImageTower | None = None
    files: dict[FileName, Sha256Hex] = Field(
        description="sha256 of every file of the variant except variant.json itself."
    )
    source_model: SourceModel
    parity: ParityReport | None = None
    parity_by_tower: dict[Tower, ParityReport] | None = Field(
        default=None,
        description="Per-tower parity of a two-tower variant; ``parity`` is over both towers.",
    )
    derived_from: DerivedFrom | None = Field(
        default=None, description="Set on fp16/int8 variants computed from an fp32 variant."
    )
    created_at: AwareDatetime = Field(description="When the variant was exported (UTC).")
    matryoshka_dims: list[PositiveInt] | None = Field(
        default=None,
        description="Dimensions below dim the model was trained to be cut to (Matryoshka "
        "representation learning): the first n values, renormalised, are still an embedding. "
        "None where a cut means nothing (the service then refuses such a cut).",
    )

    @model_validator(mode="after")
    def _towers_match_their_sections(self) -> VariantManifest:
        if len(set(self.towers)) != len(self.towers):
            raise ValueError(f"towers must not repeat: {self.towers}")
        for tower, section in (("text", self.text), ("image", self.image)):
            if (tower in self.towers) != (section is not None):
                raise ValueError(f"tower {tower!r} listed in towers iff its section is present")
        if MANIFEST_FILENAME in self.files:
            raise ValueError(f"{MANIFEST_FILENAME} cannot list its own hash")
        cuts = self.matryoshka_dims or []
        if any(cut >= self.dim for cut in cuts) or len(set(cuts)) != len(cuts):
            raise ValueError(f"matryoshka_dims must be distinct and below dim {self.dim}: {cuts}")
        missing = sorted(set(self.referenced_files()) - set(self.files))
        if missing:
            raise ValueError(f"files used by the towers have no hash in 'files': {missing}")
        return self

    def referenced_files(self) -> list[str]:
        """File names the towers need (ONNX graphs, tokenizer), in a fixed order."""
        names: list[str] = []
        if self.text is not None:
            names += [self.text.onnx_file, self.text.tokenizer_file]
        if self.image is not None:
            names.append(self.image.onnx_file)
        return names

    @property
    def fingerprint(self) -> str:
        """SHA-256 (64 hex chars) identifying the variant's file contents.

        It is the SHA-256 of the UTF-8 text made of one line ``"<filename>:<sha256>\\n"`` per entry
        of ``files``, sorted by file name. Equal fingerprints mean byte-identical files.
        """
        lines = "".join(f"{name}:{digest}\n" for name, digest in sorted(self.files.items()))
        return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def load_variant_manifest(variant_dir: Path) -> VariantManifest:
    """Read and validate ``<variant_dir>/variant.json``; raises ``VariantError`` when it cannot."""
    manifest_path = Path(variant_dir) / MANIFEST_FILENAME
    try:
        raw = manifest_path.read_text(encoding="utf-8")
    except FileNotFoundError as error:
        raise VariantError(f"{variant_dir} is not a variant: no {MANIFEST_FILENAME}") from error
    try:
        return VariantManifest.model_validate_json(raw)
    except ValidationError as error:
        raise VariantError(f"invalid {manifest_path}: {error}") from error


def write_variant_manifest(variant_dir: Path, manifest: VariantManifest) -> Path:
    """Write ``manifest`` to ``<variant_dir>/variant.json`` atomically; returns that path.

    The JSON goes to a temporary file in the same folder, is fsynced, then renamed over the old
    manifest, so a reader sees either the old or the new manifest, never a partial one.
    """
    variant_dir = Path(variant_dir)
    target = variant_dir / MANIFEST_FILENAME
    # matryoshka_dims is written only where declared: manifests without it read as before.
    unset = {"matryoshka_dims"} if manifest.matryoshka_dims is None else None
    document = manifest.model_dump(mode="json", exclude=unset)
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    descriptor, temp_name = tempfile.mkstemp(dir=variant_dir, prefix=".variant.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            # mkstemp creates the file private (0600); readers may run as another user.
            os.fchmod(handle.fileno(), MANIFEST_FILE_MODE)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    return target


def verify_variant_files(variant_dir: Path, manifest: VariantManifest | None = None) -> None:
    """Check every file listed in the manifest exists and has the recorded SHA-256.

    ``manifest`` defaults to the folder's own ``variant.json``. Raises ``VariantError`` naming every
    missing or altered file; returns ``None`` when all match. Files not listed are ignored.
    """
    variant_dir = Path(variant_dir)
    if manifest is None:
        manifest = load_variant_manifest(variant_dir)
    problems: list[str] = []
    for name, expected in sorted(manifest.files.items()):
        path = variant_dir / name
        if not path.is_file():
            problems.append(f"{name}: missing")
            continue
        actual = sha256_file(path)
        if actual != expected:
            problems.append(f"{name}: sha256 {actual} but the manifest records {expected}")
    if problems:
        raise VariantError(
            f"variant {manifest.name!r} at {variant_dir} does not match its manifest: "
            + "; ".join(problems)
        )
