"""Which build of the engines is installed: compiled with mypyc, or pure Python (``docs/architecture.md``, "Builds").

The rules, the bots' hot paths and the Nerts simulator are one typed Python source. ``setup.py`` compiles the
modules of :data:`ENGINE_MODULES` with mypyc when ``CARDTABLE_MYPYC=1`` is set at build time (``scripts/setup``
does for the install that serves); otherwise they install as plain Python, as in an editable install. Both builds
play the same: the equivalence goldens (``tests/test_nerts_equivalence.py``, ``tests/test_anemone_equivalence.py``)
pass on each, and CI runs the engine tests on both.

This module imports nothing of cardtable (``setup.py`` reads :data:`ENGINE_MODULES` from it before cardtable is
installed): :func:`engines` looks the modules up without importing them.

>>> engines() in ("compiled (mypyc)", "pure Python") or engines().startswith("mixed")
True
"""

from __future__ import annotations

import importlib.machinery
import importlib.util

__all__ = ["COMPILED", "ENGINE_MODULES", "PURE", "engines"]

ENGINE_MODULES = (
    "cardtable.games",
    "cardtable.games.nerts",
    "cardtable.games.anemone",
    "cardtable.bots.ismcts",
    "cardtable.bots.nerts",
    "cardtable.sim.nerts",
    "cardtable.race",
)
"""The modules ``setup.py`` compiles with mypyc (``CARDTABLE_MYPYC=1``): the rules, the search, the Nerts bots'
and simulator's loops, and the race orderer the simulator and the table server share."""

COMPILED = "compiled (mypyc)"
PURE = "pure Python"


def _compiled(module: str) -> bool:
    spec = importlib.util.find_spec(module)
    origin = spec.origin if spec is not None else None
    return origin is not None and origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def engines() -> str:
    """How the engine modules run here: ``"compiled (mypyc)"`` when every module of :data:`ENGINE_MODULES` is a
    compiled extension, ``"pure Python"`` when none is, else ``"mixed (compiled: NAMES)"`` (a broken build).
    Looks the modules up (``importlib.util.find_spec``) without importing them; raises nothing."""
    compiled = [name for name in ENGINE_MODULES if _compiled(name)]
    if not compiled:
        return PURE
    if len(compiled) == len(ENGINE_MODULES):
        return COMPILED
    return f"mixed (compiled: {', '.join(compiled)})"
