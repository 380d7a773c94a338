"""Unit tests mirror modules: every module of a product package has its unit test file.

``<package>/<path>/<module>.py`` is tested by ``tests/unit/<package>/<path>/test_<module>.py``,
or — a module whose tests need an exported model or real data — by the same path under
``tests/models/`` (``__main__.py`` by ``test_main.py``; ``__init__.py`` needs none). A module tested
another way is listed, with the reason, in ``tests/unit/untested_modules.txt`` (``path: reason``,
one a line). Run by ``make lint``; exits 1 naming every module without a test file or a listed
reason, and every listed module that no longer exists or now has a test file.

    .venv/bin/python scripts/check_test_mirror.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "formats",
    "encoders",
    "training",
    "scenes",
    "evaluation",
    "storage",
    "index_builder",
    "service",
    "benchmarks",
    "cluster",
)
EXCEPTIONS = ROOT / "tests" / "unit" / "untested_modules.txt"


SUITES = ("unit", "models")
"""The test folders that mirror the product's modules."""


def mirror_of(module: Path, suite: str = "unit") -> Path:
    """The test file of ``suite`` that mirrors ``module`` (a path relative to the repository)."""
    name = "test_main.py" if module.name == "__main__.py" else f"test_{module.name}"
    return Path("tests") / suite / module.parent / name


def is_mirrored(module: Path) -> bool:
    """Whether a test file of one of :data:`SUITES` mirrors ``module``."""
    return any((ROOT / mirror_of(module, suite)).is_file() for suite in SUITES)


def product_modules() -> list[Path]:
    """Every module of the product packages, relative to the repository, but ``__init__``."""
    modules = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name != "__init__.py":
                modules.append(path.relative_to(ROOT))
    return modules


def listed_exceptions() -> dict[Path, str]:
    """The modules tested another way, with the reason."""
    listed: dict[Path, str] = {}
    for number, line in enumerate(EXCEPTIONS.read_text(encoding="utf-8").splitlines(), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        path, _, reason = text.partition(":")
        if not reason.strip():
            raise SystemExit(f"{EXCEPTIONS}:{number}: give a reason after the path")
        listed[Path(path.strip())] = reason.strip()
    return listed


def main() -> int:
    listed = listed_exceptions()
    problems = []
    modules = product_modules()
    for module in modules:
        tested = is_mirrored(module)
        if not tested and module not in listed:
            problems.append(f"{module}: no {mirror_of(module)} and no reason in {EXCEPTIONS.name}")
        if tested and module in listed:
            problems.append(f"{module}: has {mirror_of(module)}; drop it from {EXCEPTIONS.name}")
    for module in sorted(set(listed) - set(modules)):
        problems.append(f"{module}: listed in {EXCEPTIONS.name} but no such module")
    for problem in problems:
        print(problem, file=sys.stderr)
    mirrored = sum(is_mirrored(module) for module in modules)
    print(
        f"{mirrored} of {len(modules)} modules have a mirroring unit test file; "
        f"{len(listed)} listed with a reason"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
