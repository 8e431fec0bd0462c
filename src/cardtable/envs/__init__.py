"""Standard game-AI environments (the ``ai`` extra: ``pip install cardtable[ai]``; ``docs/ai.md``).

- :mod:`cardtable.envs.anemone_v0`: Enemy Anemone as a PettingZoo AEC environment;
- :mod:`cardtable.envs.nerts_v0`: Nerts as a PettingZoo Parallel environment, one step per clock tick.

This package imports nothing itself: each environment module imports PettingZoo, Gymnasium and NumPy.
"""
