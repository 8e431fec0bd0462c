"""OpenSkill ratings from finished matches: pure, used by the server and usable by the simulator.

One rating per player per game, in the Plackett-Luce model of the ``openskill`` library (its defaults: a new
player has ``mu`` 25 and ``sigma`` 25/3). A match is rated from its final standings: seats ranked by the match's
winners first, then by total points, tied seats sharing a rank; partners (Nerts partnerships) rate as one team.
Each bot level is a player like any other, so a bot ladder forms; guests are not rated (the caller leaves them out).
What players see is the ordinal, ``mu - 3 * sigma`` (0 for a new player).

>>> new = Rating()
>>> round(new.ordinal, 6)
0.0
>>> winner, loser = rate([[new], [new]], [1, 2])
>>> winner[0].mu > 25 > loser[0].mu
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from openskill.models import PlackettLuce

DEFAULT_MU = 25.0
"""A new player's ``mu`` (the openskill default)."""

DEFAULT_SIGMA = 25.0 / 3.0
"""A new player's ``sigma`` (the openskill default)."""


@lru_cache(maxsize=1)
def model() -> PlackettLuce:
    """The one rating model: openskill's Plackett-Luce with its default parameters."""
    return PlackettLuce(mu=DEFAULT_MU, sigma=DEFAULT_SIGMA)


@dataclass(frozen=True, slots=True)
class Rating:
    """A player's skill in one game: ``mu`` (the mean) and ``sigma`` (the uncertainty), in openskill's units."""

    mu: float = DEFAULT_MU
    sigma: float = DEFAULT_SIGMA

    @property
    def ordinal(self) -> float:
        """``mu - 3 * sigma``: the conservative figure leaderboards sort by (0 for a new player)."""
        return self.mu - 3.0 * self.sigma


def standings(totals: Sequence[int], winners: Sequence[int] | None) -> list[int]:
    """Rank of each seat (1 = best) from a finished match: the ``winners`` rank above everyone, then seats by
    ``totals`` (points) from high to low; equal seats share a rank and the next rank skips (1, 1, 3).

    >>> standings([10, 30, 30, 5], [1, 2])
    [3, 1, 1, 4]
    >>> standings([50, 20, 50], [2])
    [2, 3, 1]
    """
    won = set(winners or ())
    keys = [(1 if seat in won else 0, total) for seat, total in enumerate(totals)]
    return [1 + sum(1 for other in keys if other > key) for key in keys]


def rate(teams: Sequence[Sequence[Rating]], ranks: Sequence[int]) -> list[list[Rating]]:
    """New ratings after one match: ``teams[i]`` (one or more players) finished at ``ranks[i]`` (1 = best; equal
    ranks are a tie). Returns the teams' new ratings in the same shape.

    ``ValueError`` when there are fewer than two teams, an empty team, or ``ranks`` has another length.
    """
    if len(teams) < 2:
        raise ValueError(f"a rated match needs at least two teams, got {len(teams)}")
    if len(ranks) != len(teams):
        raise ValueError(f"{len(ranks)} ranks for {len(teams)} teams")
    if any(not team for team in teams):
        raise ValueError("every team needs at least one player")
    m = model()
    rated = m.rate([[m.rating(mu=r.mu, sigma=r.sigma) for r in team] for team in teams], ranks=list(ranks))
    return [[Rating(float(p.mu), float(p.sigma)) for p in team] for team in rated]


def bot_level_for(ordinal: float | None, ladder: Mapping[str, float], default: str) -> str:
    """The bot (a spec from ``ladder``, which maps each bot level to its ordinal) nearest a player's ``ordinal``;
    ``default`` for a guest (``ordinal`` ``None``) or an empty ladder. Ties go to the stronger bot.

    >>> ladder = {"greedy:easy": -2.0, "greedy:medium": 4.0, "greedy:hard": 11.0}
    >>> bot_level_for(None, ladder, "greedy:medium")
    'greedy:medium'
    >>> bot_level_for(20.0, ladder, "greedy:medium")
    'greedy:hard'
    >>> bot_level_for(-5.0, ladder, "greedy:medium")
    'greedy:easy'
    """
    if ordinal is None or not ladder:
        return default
    return min(ladder, key=lambda spec: (abs(ladder[spec] - ordinal), -ladder[spec], spec))
