"""Build of cardtable: pure Python, or with the engines compiled by mypyc (``docs/architecture.md``, "Builds").

Everything about the package is in ``pyproject.toml``; this file only adds the compiled engines:

- ``CARDTABLE_MYPYC=1`` (at build time): the modules of ``cardtable.build.ENGINE_MODULES`` are compiled with mypyc
  (``mypy`` is pinned in ``[build-system] requires``), each as an extension module beside the rest of the package,
  which stays Python. ``MYPYC_OPT_LEVEL`` (default 3) is the C compiler's ``-O`` level; ``build_ext -j`` (pip
  passes none: set ``CARDTABLE_MYPYC_JOBS``, default: every core) compiles the C files in parallel.
- unset or ``0``: a pure-Python build, as an editable install for development (``pip install -e .``): no compiled
  file ever lies next to the source, so an edit to the source is what runs.

mypyc type-checks the engines (with ``pyproject.toml``'s mypy settings) against the packages installed where pip
runs, so ``scripts/setup`` installs cardtable's dependencies before a compiled build; errors in the modules the
engines import but that are not compiled are not reported here (``--follow-imports=silent``: ``.venv/bin/mypy``
checks them), so a missing package only makes its types ``Any``. A compiled build that cannot start (no mypy, no
C compiler, a type error in an engine module) fails: it never falls back to pure Python silently; ``scripts/setup``
decides what to do then.
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent


def engine_paths() -> list[str]:
    """The source files of ``cardtable.build.ENGINE_MODULES`` (read without importing cardtable)."""
    names = runpy.run_path(str(HERE / "src" / "cardtable" / "build.py"))["ENGINE_MODULES"]
    paths = []
    for name in names:
        base = Path("src", *name.split("."))
        paths.append(str(base / "__init__.py") if (HERE / base).is_dir() else str(base.with_suffix(".py")))
    return paths


class ParallelBuildExt(build_ext):
    """``build_ext`` compiling the generated C files on ``CARDTABLE_MYPYC_JOBS`` cores (default: all)."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if self.parallel is None:
            jobs = int(os.environ.get("CARDTABLE_MYPYC_JOBS", "0") or 0) or os.cpu_count() or 1
            self.parallel = jobs if jobs > 1 else None


def engine_extensions() -> list[Extension]:
    """mypyc's extension modules for the engines; only for the commands that build them: the package's metadata
    (``dist_info``, ``egg_info``, ``sdist``) needs only to know there are some, so a stand-in spares mypyc's run."""
    if not BUILDS & set(sys.argv[1:]):
        return [Extension("cardtable._mypyc_engines", [])]  # a stand-in: makes the wheel a platform wheel
    if "editable_wheel" in sys.argv or "develop" in sys.argv:
        raise SystemExit(
            "CARDTABLE_MYPYC=1: a compiled build is never editable (docs/architecture.md, 'Builds')"
        )
    from mypyc.build import mypycify  # the build requirement; only a compiled build needs it

    return mypycify(
        [*engine_paths(), "--no-warn-unused-configs", "--follow-imports=silent"],
        opt_level=os.environ.get("MYPYC_OPT_LEVEL", "3"),
        multi_file=True,  # one C file per module: compiled in parallel, each a smaller compile
    )


BUILDS = {"bdist_wheel", "build", "build_ext", "install", "editable_wheel", "develop"}

if os.environ.get("CARDTABLE_MYPYC", "0") not in ("", "0"):
    os.chdir(HERE)  # mypyc's paths (and the C files it writes under build/) are relative to the project
    setup(ext_modules=engine_extensions(), cmdclass={"build_ext": ParallelBuildExt})
else:
    setup()
