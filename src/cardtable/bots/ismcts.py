"""Single-observer information-set Monte Carlo tree search (SO-ISMCTS) for Enemy Anemone.

Each simulation samples a determinization: the cards the seat cannot see (other hands and, with 2 seats, the
deck) dealt at random, consistent with what the seat knows: hand counts, the deck count, and the voids that
forced discards revealed (a seat that discarded held no card of a suit not yet in that trick; with 2 seats only
discards since the last draw count). The sample is rebuilt into a full :class:`AnemoneState` from the view
(:meth:`AnemoneState.from_view`; later samples only replace its hands and deck), then one tree walk runs over
that determinization: UCB1 among the children legal in it (with availability counts), one expansion, a random
playout to the hand's end (:func:`playout`, on the determinization's own lists: no events, no trick history; a
test replays its moves through the engine's ``apply``). A playout is scored for each seat by its point margin
over the mean of the other seats (plus a small value for anemones held, which help in later hands), divided by
10 (:func:`playout_rewards`; options: the searching seat's margin over the best other seat and its share of the
win, in a hand that decides the match; greedy playouts). The most visited root move is played (with sequential
halving at the root, the surviving one).

Budgets (:data:`LEVELS`): a number of simulations and a wall-clock cap per move, whichever comes first.

Speed: the tree walk generates the engine's moves itself (:func:`fast_moves`, tested equal to
:meth:`AnemoneState.moves`; the moves without anemones are tuples made once), computes the root's moves once, and
copies the rebuilt state only around each sample's hands and deck. The playout takes anemones with the engine's
own rule (:func:`~cardtable.games.anemone.anemone_taken`). This module and the engine also compile with mypyc
as they are (``mypyc cardtable/games/anemone.py cardtable/bots/ismcts.py`` in ``src``), choosing the same moves
about three times as fast; the package is not built that way (yet). ``bench/anemone_vs_openspiel.py`` prints
simulations per second against the search as first written, and against issue 28's goal.
"""

from __future__ import annotations

import gc
import math
import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from cardtable.engine import Action, View
from cardtable.games.anemone import (
    CODE,
    POINTS_OF,
    RANK_OF,
    SUIT_OF,
    AnemoneState,
    anemone_taken,
    card_number,
    game_cards,
)

_SUIT_BIT: tuple[int, ...] = tuple(1 << suit for suit in SUIT_OF)


def position_rng(seed: int, view: View) -> random.Random:
    """A generator seeded by ``seed`` and the position in ``view`` (stable across processes and runs)."""
    key = (
        f"{seed}|{view.get('seat')}|{','.join(view.get('hand', []))}|{len(view.get('tricks', []))}|"
        f"{len(view.get('trick', []))}|{len(view.get('trick_discards', []))}|{view.get('round')}"
    )
    return random.Random(key)


Move = tuple[bool, int, tuple[int, ...]]
"""An engine move: (is a play, card number, anemone faces)."""


@dataclass(frozen=True, slots=True)
class Budget:
    """A search budget per move: at most ``simulations`` simulations and ``seconds`` of wall-clock time.

    ``exploration`` is UCB1's constant (rewards are point margins divided by 10); ``others_exploration``, when
    set, is the constant at the other seats' turns in the tree (a lower one models opponents that play their
    best reply more often, a higher one opponents that play more at random). ``greedy`` is the chance that
    a playout turn following a lead plays the lowest card taking the trick so far (else its lowest card) instead
    of a random one; ``win_weight`` adds that much to a seat's reward for a playout it wins (shared wins split).
    Both are 0 at every level but ``hard`` (``greedy`` 0.5).

    ``own_win`` and ``own_vs_best`` change only the searching seat's reward, and only in a hand that decides
    the match as far as the view tells (a one-hand match, or a bare hand): ``own_win`` adds that much times the
    seat's share of the hand's win (1/k for a k-way tie at the top, as the match's result counts it);
    ``own_vs_best`` measures its margin against the best other seat instead of the others' mean. The other
    seats keep the point margin (the same as their own points: the points dealt out are fixed), which models
    opponents that play for points.

    ``prune_spends``: the tree offers each card with only the anemone spends that can change who wins the trick
    (:func:`sensible_moves`). ``halving``: the root's simulations are shared out by sequential halving
    (:class:`_Halving`) instead of UCB1, and the surviving move is played. ``smart``: the chance that a playout
    turn follows a few rules instead (see :func:`playout`). ``max_depth``: the tree stops growing below that
    depth (1: flat Monte Carlo over the root moves); 0 for no limit.

    ``mast``: the chance that a playout turn (one that neither ``smart`` nor ``greedy`` took) plays the playable
    card with the best mean reward so far in this search for the seat that played it, over every simulation
    that played it, in the tree or in a playout (the move-average sampling technique, MAST: Finnsson and
    Björnsson 2008; Powley, Whitehouse and Cowling 2014 for information-set MCTS in card games); a card never
    played yet comes first. 0 for uniformly random playouts.

    ``self_determinize``: the share of simulations dealt as the other seats might imagine the deal, the
    searching seat's own hand at random too (:class:`Determinizer` with ``hide_own``; self-determinization:
    Cowling, Powley and Whitehouse 2015, "Emergent bluffing and inference with Monte Carlo tree search"). Such a
    simulation walks the tree as usual at the other seats' turns and updates only their nodes; at the searching
    seat's turns it takes the most visited move legal in that deal, and plays out from there when none is in the
    tree. Statistics that only ever hold the seat's true hand model opponents who play as if they saw it; these
    simulations model opponents who do not. 0 for none; below 1 (else ``ValueError``: the seat's own moves
    would get no simulations).

    ``paired`` (with ``halving``): each pass over the surviving root moves plays them all on one determinization,
    so that root moves are compared on the same deals (the deal's luck, most of a playout's variance, cancels out
    of their differences); ``common_playouts`` also gives the playouts of one pass the same random numbers.
    """

    simulations: int
    seconds: float
    exploration: float = 0.7
    others_exploration: float | None = None
    greedy: float = 0.0
    win_weight: float = 0.0
    own_win: float = 0.0
    own_vs_best: bool = False
    prune_spends: bool = False
    smart: float = 0.0
    mast: float = 0.0
    self_determinize: float = 0.0
    halving: bool = False
    max_depth: int = 0
    paired: bool = False
    common_playouts: bool = False

    def __post_init__(self) -> None:
        if not 0.0 <= self.self_determinize < 1.0:
            raise ValueError(f"self_determinize must be at least 0 and below 1, not {self.self_determinize}")


LEVELS: dict[str, Budget] = {
    "easy": Budget(150, 0.15),
    "medium": Budget(800, 0.5),
    "hard": Budget(2500, 0.6, greedy=0.5, own_vs_best=True, prune_spends=True, halving=True),
}
"""Budgets by level; ``hard`` stays under 1 second per move. ``hard`` also plays out half the following turns
greedily, in a hand that decides the match measures its own margin against the best other seat, offers each card
with only the anemone spends that can change who wins the trick, and shares the root's simulations out by
sequential halving. Chosen against OpenSpiel's ISMCTS at 500 simulations over the bench's first 100 deals and
seats (``docs/ai.md``, "How the search options were chosen"): one of ours against three of theirs, 26.0% won
without the last two, 39.5% with them. ``paired`` is not used: it lost at 500 simulations (``docs/ai.md``,
"Trials at stop 20")."""


class _Node:
    __slots__ = ("avail", "children", "depth", "move", "parent", "reward", "seat", "visits")

    def __init__(self, parent: _Node | None, move: Move | None, seat: int) -> None:
        self.parent = parent
        self.move = move
        self.seat = seat
        self.children: dict[Move, _Node] = {}
        self.visits = 0
        self.avail = 0
        self.reward = 0.0
        self.depth = 0


def _void_suits(view: View) -> dict[int, set[int]]:
    """Suits each other seat is known to hold none of (from forced discards since the last draw)."""
    players = int(view["players"])
    suits_used = 4 if players == 2 else min(players, 6)
    all_suits = set(range(suits_used))
    first_trick = 0
    if players == 2:
        first_trick = (16 - int(view.get("deck_count", 0))) // 4
    voids: dict[int, set[int]] = {s: set() for s in range(players)}
    tricks = [(t["plays"], t["discards"]) for t in view["tricks"][first_trick:]]
    tricks.append((view["trick"], view["trick_discards"]))
    for plays, discards in tricks:
        for d in discards:
            order = int(d.get("order", 0))
            seen = {SUIT_OF[card_number(p["card"])] for p in plays if int(p.get("order", 0)) < order}
            voids[int(d["seat"])] |= all_suits - seen
    return voids


class Determinizer:
    """Samples the cards a seat cannot see, consistently with its view (hand counts, deck count, voids).

    With ``hide_own`` the seat's own hand is dealt at random too, from the cards the other seats cannot see
    (its hand count and the suits its discards show it lacks): the deal as they might imagine it (the
    self-determinization of :class:`Budget`).
    """

    def __init__(self, view: View, hide_own: bool = False) -> None:
        self.seat = int(view["seat"])
        self.players = int(view["players"])
        seen = {card_number(c) for c in view["hand"]}
        for pile in view["score_piles"]:
            seen.update(card_number(c) for c in pile)
        seen.update(card_number(p["card"]) for p in view["trick"])
        self.own = [card_number(c) for c in view["hand"]]
        if hide_own:
            seen.difference_update(self.own)
        self.unknown = [c for c in game_cards(self.players) if c not in seen]
        self.counts = list(view["hand_counts"])
        self.deck_count = int(view.get("deck_count", 0))
        voids = _void_suits(view)
        # the seat whose hand is the view's own (-2: none, every hand is dealt)
        self.own_seat = -2 if hide_own else self.seat
        others = [s for s in range(self.players) if s != self.own_seat]
        # holders: other seats, then -1 for the deck
        self.holders = [*others, -1]
        self.capacity = {s: self.counts[s] for s in others}
        self.capacity[-1] = self.deck_count
        self.eligible: dict[int, list[int]] = {}
        for card in self.unknown:
            self.eligible[card] = [h for h in self.holders if h == -1 or SUIT_OF[card] not in voids[h]]
        if len(self.unknown) != sum(self.capacity.values()):
            raise ValueError("view: unseen cards do not match hand counts and deck count")
        # a seat's void suits as a bit mask; the deck has none
        self.void_bits = {h: sum(1 << suit for suit in voids[h]) if h >= 0 else 0 for h in self.holders}
        self.constrained = any(self.void_bits.values())
        self.slices: list[tuple[int, int, int]] = []
        start = 0
        for h in self.holders:
            self.slices.append((h, start, start + self.capacity[h]))
            start += self.capacity[h]

    def sample(self, rng: random.Random) -> tuple[list[list[int]], list[int]]:
        """Each seat's hand and the deck (top first) for one determinization.

        A uniform shuffle dealt in order, kept when no seat gets a suit it is known to lack (tried a few
        times); else dealt card by card among the holders each card may go to.
        """
        rand = rng.random
        void_bits = self.void_bits
        suit_bit = _SUIT_BIT
        for _ in range(4 if self.constrained else 1):
            cards = sorted(self.unknown, key=lambda _card: rand())
            got: dict[int, list[int]] = {}
            for h, start, end in self.slices:
                part = cards[start:end]
                bits = void_bits[h]
                if bits and any(suit_bit[c] & bits for c in part):
                    break
                got[h] = part
            else:
                own_seat = self.own_seat
                hands = [self.own[:] if s == own_seat else got[s] for s in range(self.players)]
                return hands, got[-1]
        return self.sample_card_by_card(rng)

    def sample_card_by_card(self, rng: random.Random) -> tuple[list[list[int]], list[int]]:
        """Like :meth:`sample`, dealing each card in turn among the holders it may go to (the most
        constrained cards first), up to 30 tries; then without the voids."""
        for _ in range(30):
            result = self._try(rng, True)
            if result is not None:
                return result
        result = self._try(rng, False)
        assert result is not None
        return result

    def _try(self, rng: random.Random, constrained: bool) -> tuple[list[list[int]], list[int]] | None:
        cards = self.unknown[:]
        rng.shuffle(cards)
        if constrained:
            cards.sort(key=lambda c: len(self.eligible[c]))
        left = dict(self.capacity)
        got: dict[int, list[int]] = {h: [] for h in self.holders}
        for card in cards:
            options = self.eligible[card] if constrained else self.holders
            total = sum(left[h] for h in options)
            if total == 0:
                return None
            pick = rng.random() * total
            for h in options:
                pick -= left[h]
                if pick < 0 and left[h] > 0:
                    break
            else:
                h = next(h for h in reversed(options) if left[h] > 0)
            got[h].append(card)
            left[h] -= 1
        hands = [self.own[:] if s == self.own_seat else got[s] for s in range(self.players)]
        return hands, got[-1]


def playout(
    state: AnemoneState,
    rng: random.Random,
    anemone_chance: float = 0.1,
    trace: list[Move] | None = None,
    greedy: float = 0.0,
    smart: float = 0.0,
    mast: float = 0.0,
    mast_value: Sequence[float] = (),
    played: list[int] | None = None,
) -> None:
    """Play ``state`` (a determinization: mutated in place) to the hand's end at random, fast.

    The same random policy as :meth:`AnemoneState.playout` (a uniformly random playable card, anemones with
    probability ``anemone_chance``; a random discard when nothing is playable), on the state's own lists without
    events or trick history: only ``hands``, ``anemones``, ``supply``, ``points``, ``deck`` and ``over`` are
    brought up to date. The rules are the engine's ("A trick", "Taking an anemone", the 2-seat draws; a test
    replays ``trace``, the moves made, through :meth:`AnemoneState.apply`).

    With probability ``greedy`` a turn following a lead plays the lowest card that takes the trick so far, else
    the lowest playable card. With probability ``smart`` (tried first) a turn follows rules instead: a leader
    plays a random card; a seat that must discard keeps the card worth most in its own pile (a 3, 5 or 8); a
    follower plays its lowest card that takes the trick so far (a 3, 5 or 8 counting 2 lower), else dumps its
    lowest card that is not a 3, 5 or 8, or, last to act, spends the fewest anemones that make its highest
    card win. With probability ``mast`` (tried after those two) a turn plays the playable card whose
    ``mast_value`` (indexed by card number) is highest. Each card played (not discarded) is appended to
    ``played`` when given, as ``seat << 6 | card``.
    """
    if state.over:
        return
    hands = state.hands
    anemones = state.anemones
    points = state.points
    deck = state.deck
    supply = state.supply
    players = state.players
    turns_per_trick = state.turns_per_trick
    leader = state.leader
    turn = state.turn
    turns_taken = state.turns_taken
    mask = state.trick_suit_mask
    # the trick so far: (seat, card, value)
    trick = [(p[0], p[1], p[3]) for p in state.trick]
    rand = rng.random
    suit_bit = _SUIT_BIT
    rank_of = RANK_OF
    points_of = POINTS_OF
    left = sum(len(hand) for hand in hands)
    high = max((t[2] for t in trick), default=-1)
    while True:
        hand = hands[turn]
        faces: tuple[int, ...] | None = None  # None: anemones at random
        drop = -1  # a discard chosen by the smart policy
        if smart and rand() < smart:
            faces = ()
            if not turns_taken:
                # leading (every card playable): at random
                card = hand[int(rand() * len(hand))]
            elif not (playable := [c for c in hand if not mask & suit_bit[c]]):
                drop = max(hand, key=_KEEP_KEY.__getitem__)
                card = -1
            else:
                winners = [c for c in playable if rank_of[c] >= high]
                if winners:
                    card = min(winners, key=_WIN_KEY.__getitem__)
                else:
                    card = min(playable, key=_DUMP_KEY.__getitem__)
                    held = anemones[turn]
                    if held and turns_taken == turns_per_trick - 1:
                        top = max(playable, key=rank_of.__getitem__)
                        short = high - rank_of[top]
                        if short <= sum(held):
                            ones = held.count(1)
                            spend = _totals(ones, len(held) - ones)[short]
                            if spend is not None:
                                card = top
                                faces = spend
        elif turns_taken and greedy and rand() < greedy:
            # following a lead: the lowest playable card that takes the trick so far, else the lowest playable
            best = worst = -1
            for c in hand:
                if not mask & suit_bit[c]:
                    rank = rank_of[c]
                    if rank >= high and (best < 0 or rank < rank_of[best]):
                        best = c
                    if worst < 0 or rank < rank_of[worst]:
                        worst = c
            card = best if best >= 0 else worst
        elif mast and rand() < mast:
            # the playable card with the best mean so far (-1 when none is playable: a random discard)
            card = -1
            best_mean = -1e18
            for c in hand:
                if not mask & suit_bit[c] and mast_value[c] > best_mean:
                    best_mean = mast_value[c]
                    card = c
        else:
            # a uniformly random playable card: try a random card of the hand (rejection sampling keeps it
            # uniform), then, after two misses, look at the whole hand
            card = hand[int(rand() * len(hand))]
        if card >= 0 and mask & suit_bit[card]:
            card = hand[int(rand() * len(hand))]
            if mask & suit_bit[card]:
                playable = [c for c in hand if not mask & suit_bit[c]]
                card = playable[int(rand() * len(playable))] if playable else -1
        if card >= 0:
            hand.remove(card)
            if played is not None:
                played.append(turn << 6 | card)
            value = rank_of[card]
            held = anemones[turn]
            if faces is not None:
                for face in faces:
                    held.remove(face)
                    value += face
                supply += len(faces)
                if trace is not None:
                    trace.append((True, card, faces))
            elif held and rand() < anemone_chance:
                # a uniformly random sub-multiset of the faces held: how many +1s, how many +2s
                ones = held.count(1)
                twos = len(held) - ones
                spend_ones = int(rand() * (ones + 1))
                spend_twos = int(rand() * (twos + 1))
                faces = (1,) * spend_ones + (2,) * spend_twos
                for face in faces:
                    held.remove(face)
                value += spend_ones + 2 * spend_twos
                supply += spend_ones + spend_twos
                if trace is not None:
                    trace.append((True, card, faces))
            elif trace is not None:
                trace.append((True, card, ()))
            trick.append((turn, card, value))
            mask |= suit_bit[card]
            if value > high:
                high = value
        else:
            card = drop if drop >= 0 else hand[int(rand() * len(hand))]
            hand.remove(card)
            points[turn] += points_of[card]
            if trace is not None:
                trace.append((False, card, ()))
        left -= 1
        turns_taken += 1
        if turns_taken < turns_per_trick:
            turn = (leader + turns_taken) % players
            continue
        winner, _card, high = trick[0]
        lowest, low = winner, high
        gained = 0
        for seat, card, value in trick:
            gained += points_of[card]
            if value >= high:
                high = value
                winner = seat
            if value <= low:
                low = value
                lowest = seat
        points[winner] += gained
        # the lowest takes an anemone: the engine's rule, without its event
        supply = anemone_taken(anemones, supply, lowest)[0]
        if deck:
            for seat in (winner, 1 - winner):
                hands[seat].extend(deck[:2])
                del deck[:2]
                left += 2
        if not left:
            break
        trick = []
        mask = 0
        high = -1
        turns_taken = 0
        leader = turn = winner
    state.supply = supply
    state.over = True


_KEEP_KEY: tuple[int, ...] = tuple(16 * POINTS_OF[card] - RANK_OF[card] for card in range(60))
"""The smart playout's discard: the card worth most to the seat's own pile (a 3, 5 or 8), the lowest such."""
_WIN_KEY: tuple[int, ...] = tuple(RANK_OF[card] - 2 * POINTS_OF[card] for card in range(60))
"""The smart playout's winning card: the lowest, a 3, 5 or 8 counting 2 ranks lower (its points come along)."""
_DUMP_KEY: tuple[int, ...] = tuple(16 * POINTS_OF[card] + RANK_OF[card] for card in range(60))
"""The smart playout's card that cannot win: the lowest that is not a 3, 5 or 8 (the winner takes it)."""

_PLAY: tuple[Move, ...] = tuple((True, card, ()) for card in range(60))
"""The move that plays ``card`` with no anemones, by card number (made once: no tuple built per move)."""
_DISCARD: tuple[Move, ...] = tuple((False, card, ()) for card in range(60))
"""The move that discards ``card``, by card number."""

_LOG: list[float] = [0.0]
"""``_LOG[n]`` is ``math.log(n)`` (grown as searches need it)."""

_SPENDS: dict[tuple[int, int], list[tuple[int, ...]]] = {}
"""Every sub-multiset of a seat's anemone faces, by (+1s, +2s) held, in :meth:`AnemoneState.moves`'s order."""


def _spends(ones: int, twos: int) -> list[tuple[int, ...]]:
    subs = _SPENDS.get((ones, twos))
    if subs is None:
        subs = [(1,) * i + (2,) * j for i in range(ones + 1) for j in range(twos + 1)]
        _SPENDS[ones, twos] = subs
    return subs


def _moves_without_spends(state: AnemoneState) -> tuple[list[Move] | None, list[int], list[int]]:
    """The seat to act's moves when it can spend no anemone (it must discard: every card of its hand; it holds
    none: every playable card), else ``None``; with its playable cards and the anemone faces it holds."""
    turn = state.turn
    mask = state.trick_suit_mask
    hand = state.hands[turn]
    suit_bit = _SUIT_BIT
    playable = [card for card in hand if not mask & suit_bit[card]]
    held = state.anemones[turn]
    if not playable:
        discard = _DISCARD
        return [discard[card] for card in hand], playable, held
    if not held:
        play = _PLAY
        return [play[card] for card in playable], playable, held
    return None, playable, held


def fast_moves(state: AnemoneState) -> list[Move]:
    """:meth:`AnemoneState.moves` (the same moves in the same order) for a hand not over, faster."""
    plain, playable, held = _moves_without_spends(state)
    if plain is not None:
        return plain
    ones = held.count(1)
    subs = _spends(ones, len(held) - ones)
    return [(True, card, sub) for card in playable for sub in subs]


_TOTALS: dict[tuple[int, int], list[tuple[int, ...] | None]] = {}
"""For (+1s, +2s) held: the faces to spend for each total 0, 1, ... (as many +2s as the total allows, keeping
+1s, which a seat taking an anemone flips), or ``None`` for a total no sub-multiset makes."""


def _totals(ones: int, twos: int) -> list[tuple[int, ...] | None]:
    faces = _TOTALS.get((ones, twos))
    if faces is None:
        faces = []
        for total in range(ones + 2 * twos + 1):
            spend = None
            for j in range(min(twos, total // 2), -1, -1):
                if total - 2 * j <= ones:
                    spend = (1,) * (total - 2 * j) + (2,) * j
                    break
            faces.append(spend)
        _TOTALS[ones, twos] = faces
    return faces


def sensible_moves(state: AnemoneState) -> list[Move]:
    """:func:`fast_moves` without the anemone spends that cannot matter, for a hand not over.

    Anemones only change which card wins the trick (a card that does not win is better off low: the lowest takes
    an anemone), so a card is played with no anemones, and with one spend per total value (as many +2s as it
    allows) from the least that makes it win so far (the highest value in the trick; a tie goes to the later
    card) to the least that beats the most any seat still to act could reach (10 plus its anemones), if the
    seat holds that many. Every move returned is legal (one of :func:`fast_moves`).
    """
    plain, playable, held = _moves_without_spends(state)
    if plain is not None:
        return plain
    anemones = state.anemones
    ones = held.count(1)
    totals = _totals(ones, len(held) - ones)
    most = len(totals) - 1
    high = max((play[3] for play in state.trick), default=-1)
    players = state.players
    leader = state.leader
    later = [
        sum(anemones[(leader + j) % players]) for j in range(state.turns_taken + 1, state.turns_per_trick)
    ]
    need = max(high, 11 + max(later)) if later else high
    moves: list[Move] = []
    rank_of = RANK_OF
    play = _PLAY
    for card in playable:
        rank = rank_of[card]
        moves.append(play[card])
        for total in range(max(1, high - rank), min(most, need - rank) + 1):
            spend = totals[total]
            if spend is not None:
                moves.append((True, card, spend))
    return moves


def playout_rewards(
    points: Sequence[int],
    anem: Sequence[Sequence[int]],
    seat: int,
    anemone_weight: float,
    win_weight: float = 0.0,
    own_win: float = 0.0,
    own_vs_best: bool = False,
) -> list[float]:
    """The reward of each seat for a played-out hand (``points`` per seat, ``anem`` the anemone faces each holds),
    as the search of ``seat`` counts it.

    Each seat: its point margin over the mean of the others, plus ``anemone_weight`` times the same margin in
    anemone faces held, divided by 10; plus ``win_weight`` times its share of the hand's win (1/k for k tied
    top seats). For ``seat`` only: with ``own_vs_best`` its point margin over the best other seat, divided by 10,
    instead; plus ``own_win`` times its share of the win (see :class:`Budget`).
    """
    players = len(points)
    others = players - 1
    total = sum(points)
    if anemone_weight:
        held_sums = [sum(faces) for faces in anem]
        all_held = sum(held_sums)
        rewards = [
            (
                points[s]
                - (total - points[s]) / others
                + anemone_weight * (held_sums[s] - (all_held - held_sums[s]) / others)
            )
            / 10.0
            for s in range(players)
        ]
    else:
        rewards = [(points[s] - (total - points[s]) / others) / 10.0 for s in range(players)]
    if win_weight:
        top = max(points)
        share = win_weight / points.count(top)
        rewards = [r + share if points[s] == top else r for s, r in enumerate(rewards)]
    if own_vs_best or own_win:
        mine = points[seat]
        best_other = max(points[s] for s in range(players) if s != seat)
        own = (mine - best_other) / 10.0 if own_vs_best else rewards[seat]
        if own_win and mine >= best_other:
            own += own_win / points.count(mine)
        rewards[seat] = own
    return rewards


class _Halving:
    """Sequential halving over the root moves (Karnin, Koren and Somekh 2013, as hybrid MCTS uses it at the
    root): the budget split evenly over ceil(log2(moves)) rounds; in each round every surviving move gets the
    same number of simulations, then the better half by mean reward survives. The moves below the root are
    chosen by the tree as usual."""

    def __init__(self, root: _Node, moves: list[Move], simulations: int) -> None:
        self.root = root
        self.survivors = list(moves)
        self.simulations = simulations

    def plan(self) -> Iterator[tuple[Move, bool]]:
        """The root move of each simulation, in order (round robin within a round), each with whether it starts a
        pass over the surviving moves (a search that pairs its samples deals a new determinization there)."""
        rounds = max(1, math.ceil(math.log2(len(self.survivors))))
        used = 0
        for done in range(rounds):
            survivors = self.survivors
            per = max(1, (self.simulations - used) // (len(survivors) * (rounds - done)))
            for _ in range(per):
                for i, move in enumerate(survivors):
                    yield move, i == 0
            used += per * len(survivors)
            self.survivors = sorted(survivors, key=self._mean, reverse=True)[: (len(survivors) + 1) // 2]
        while True:
            for i, move in enumerate(self.survivors):
                yield move, i == 0

    def _mean(self, move: Move) -> float:
        child = self.root.children.get(move)
        return child.reward / child.visits if child is not None and child.visits else -1e18

    def best(self) -> Move:
        """The surviving move with the best mean reward."""
        return max(self.survivors, key=self._mean)


def search(
    view: View,
    budget: Budget,
    rng: random.Random,
    include: Move | None = None,
    root_points: dict[Move, list[float]] | None = None,
) -> tuple[Move, dict[Move, int]]:
    """Run SO-ISMCTS from ``view`` (the seat to act's own view) within ``budget``.

    Returns the most visited root move and the visit count of every root move. The moves at a node are
    :meth:`AnemoneState.moves`'s (computed inline, in its order), made with :meth:`AnemoneState.step`.
    ``include``: a move (legal at the root) searched at the root even when ``prune_spends`` leaves it out.
    ``root_points``: filled with ``[points, simulations]`` per root move: the searching seat's points at the
    playouts' ends (rules page, "End of a hand"), summed over the simulations through that move
    (:func:`root_statistics`).
    """
    started = time.perf_counter()
    seat = int(view["seat"])
    det = Determinizer(view)
    hands, deck = det.sample(rng)
    base = AnemoneState.from_view(view, [[CODE[c] for c in h] for h in hands], [CODE[c] for c in deck])
    moves_of = sensible_moves if budget.prune_spends else fast_moves
    root_moves = moves_of(base)
    if include is not None and include not in root_moves:
        root_moves = [*root_moves, include]
    last_hand = view.get("round") is not None and view.get("round") == view.get("rounds")
    anemone_weight = 0.1 if last_hand else 0.5
    deciding = view.get("rounds") in (None, 1)
    own_win = budget.own_win if deciding else 0.0
    own_vs_best = budget.own_vs_best and deciding
    root = _Node(None, None, seat)
    c = budget.exploration
    c_others = c if budget.others_exploration is None else budget.others_exploration
    greedy = budget.greedy
    smart = budget.smart
    mast = budget.mast
    # MAST: the mean reward of each card (by number) for the seat that played it; never played: first
    mast_value = [1e9] * 64 if mast else []
    mast_count = [0] * 64 if mast else []
    played: list[int] | None = [] if mast else None
    max_depth = budget.max_depth or -1
    paired = budget.paired and budget.halving
    common_playouts = budget.common_playouts and budget.halving
    pass_seed = 0
    win_weight = budget.win_weight
    deadline = started + budget.seconds
    simulations = budget.simulations
    sims = 0
    logs = _LOG  # availability counts never exceed the simulations run: grown as they go
    sqrt = math.sqrt
    rand = rng.random
    sample = det.sample
    self_determinize = budget.self_determinize
    imagined = Determinizer(view, hide_own=True).sample if self_determinize else None
    # the halving plan shares out the simulations dealt from the seat's own view
    real = round(simulations * (1.0 - self_determinize))
    halving = _Halving(root, root_moves, real) if budget.halving and len(root_moves) > 1 else None
    plan = halving.plan() if halving is not None else None
    while sims < simulations:
        if sims and sims % 8 == 0 and time.perf_counter() > deadline:
            break
        sims += 1
        if sims >= len(logs):
            logs.extend(math.log(n) for n in range(len(logs), 2 * sims + 64))
        if imagined is not None and rand() < self_determinize:
            # a deal as the other seats might imagine it (the seat's own hand at random too)
            imagining = True
            state = base.with_hidden(*imagined(rng))
            node = root
            moves = moves_of(state)
        else:
            imagining = False
            if plan is not None:
                move, fresh = next(plan)
                if sims > 1 and (fresh or not paired):
                    hands, deck = sample(rng)
                if common_playouts and fresh:
                    pass_seed = rng.getrandbits(32)
            elif sims > 1:
                hands, deck = sample(rng)
            # a simulation uses up the lists it is given: one shared by a pass is copied
            state = (
                base.with_hidden([h[:] for h in hands], deck[:]) if paired else base.with_hidden(hands, deck)
            )
            node = root
            moves = root_moves
            if plan is not None:
                # the root move is the halving plan's; then the tree as usual
                child = root.children.get(move)
                if child is None:
                    child = root.children[move] = _Node(root, move, seat)
                    child.depth = 1
                state.step(*move)
                node = child
                moves = moves_of(state) if not state.over and max_depth != 1 else []
        # selection and expansion
        while moves:
            children = node.children
            if imagining and state.turn == seat:
                # the seat's own turn in an imagined deal: its most visited move legal here, if the tree has one
                best = node
                for m in moves:
                    ch = children.get(m)
                    if ch is not None and (best is node or ch.visits > best.visits):
                        best = ch
                if best is node:
                    break
            else:
                # one pass: every child legal here gains an availability; UCB1 among them unless some move is untried
                cc = c if state.turn == seat else c_others
                untried: list[Move] | None = None
                best = node
                best_score = -1e18
                for m in moves:
                    ch = children.get(m)
                    if ch is None:
                        if untried is None:
                            untried = [m]
                        else:
                            untried.append(m)
                        continue
                    avail = ch.avail + 1
                    ch.avail = avail
                    if untried is None:
                        visits = ch.visits
                        score = ch.reward / visits + cc * sqrt(logs[avail] / visits)
                        if score > best_score:
                            best_score = score
                            best = ch
                if untried is not None:
                    move = untried[int(rand() * len(untried))]
                    child = _Node(node, move, state.turn)
                    child.avail = 1
                    child.depth = node.depth + 1
                    children[move] = child
                    state.step(*move)
                    node = child
                    break
            state.step(*best.move)  # type: ignore[misc]
            node = best
            if state.over or node.depth == max_depth:
                break
            moves = moves_of(state)
        playout(
            state,
            random.Random(pass_seed) if common_playouts else rng,
            greedy=greedy,
            smart=smart,
            mast=mast,
            mast_value=mast_value,
            played=played,
        )
        rewards = playout_rewards(
            state.points, state.anemones, seat, anemone_weight, win_weight, own_win, own_vs_best
        )
        if played is not None:
            # the tree's plays too: each node holds the move into it and the seat that made it
            tree: _Node | None = node
            while tree is not None and tree.move is not None:
                if tree.move[0]:
                    played.append(tree.seat << 6 | tree.move[1])
                tree = tree.parent
            for key in played:
                card = key & 63
                count = mast_count[card] + 1
                mast_count[card] = count
                reward = rewards[key >> 6]
                mast_value[card] = (
                    reward if count == 1 else mast_value[card] + (reward - mast_value[card]) / count
                )
            played.clear()
        walk: _Node | None = node
        while walk is not None:
            if not imagining or walk.seat != seat:
                walk.visits += 1
                walk.reward += rewards[walk.seat]
            walk = walk.parent
        if root_points is not None and not imagining:
            first: _Node = node
            while first.parent is not None and first.parent is not root:
                first = first.parent
            if first.move is not None:
                tally = root_points.setdefault(first.move, [0.0, 0.0])
                tally[0] += state.points[seat]
                tally[1] += 1.0
    root_visits = {m: ch.visits for m, ch in root.children.items()}
    if halving is not None:
        return halving.best(), root_visits
    best_move = max(root.children.values(), key=lambda ch: (ch.visits, ch.reward)).move
    assert best_move is not None
    return best_move, root_visits


@dataclass(frozen=True, slots=True)
class RootStat:
    """One root move of a search and what the search learned of it."""

    move: Move
    """The move (:data:`Move`)."""
    visits: int
    """Simulations through it."""
    mean_points: float
    """The searching seat's mean points for the hand at the end of those simulations (rules page, "End of a
    hand": 1 per card in its score pile, 1 more per 3, 5 and 8); 0.0 with no visit."""


def root_statistics(
    view: View, budget: Budget, rng: random.Random, include: Move | None = None
) -> tuple[Move, list[RootStat]]:
    """Search from ``view`` as :func:`search` does; the move it prefers and every root move's :class:`RootStat`
    (in the order first visited). ``include`` as for :func:`search`. With a budget whose ``seconds`` cannot run
    out (``math.inf``), the result depends only on ``view``, ``budget`` and ``rng``'s state."""
    tallies: dict[Move, list[float]] = {}
    best, visits = search(view, budget, rng, include, tallies)
    stats: list[RootStat] = []
    for move, count in visits.items():
        tally = tallies.get(move)
        mean = tally[0] / tally[1] if tally is not None and tally[1] else 0.0
        stats.append(RootStat(move, count, mean))
    return best, stats


def action_to_move(action: Action) -> Move:
    """The engine move of a record action (``play`` with its anemone faces, or ``discard``); ``ValueError`` for
    another action or an unknown card."""
    kind = action.get("type")
    card = card_number(str(action.get("card")))
    if kind == "play":
        return (True, card, tuple(sorted(int(face) for face in action.get("anemones") or [])))
    if kind == "discard":
        return (False, card, ())
    raise ValueError(f"not a play or a discard: {action!r}")


def move_to_action(move: Move) -> Action:
    """The record action of an engine move."""
    is_play, card, faces = move
    if is_play:
        return {"type": "play", "card": CODE[card], "anemones": list(faces)}
    return {"type": "discard", "card": CODE[card]}


def matching_action(move: Move, legal: Sequence[Action]) -> Action | None:
    """A copy of the action of ``legal`` that makes ``move`` (the same card, and the same anemone faces in any
    order), or ``None`` if none does."""
    action = move_to_action(move)
    for candidate in legal:
        if (
            candidate["type"] == action["type"]
            and candidate["card"] == action["card"]
            and sorted(candidate.get("anemones", [])) == action.get("anemones", [])
        ):
            return dict(candidate)
    return None


class IsmctsBot:
    """SO-ISMCTS at a level of :data:`LEVELS` (``"easy"``, ``"medium"``, ``"hard"``), or a custom :class:`Budget`."""

    def __init__(self, seed: int, level: str | Budget = "medium") -> None:
        self.seed = seed
        self.budget = level if isinstance(level, Budget) else LEVELS[level]

    def choose(self, view: View, legal: Sequence[Action]) -> Action | None:
        """The most visited move of a search from ``view``; with one legal action, that action at once."""
        if not legal:
            return None
        if len(legal) == 1:
            return dict(legal[0])
        collecting = gc.isenabled()
        gc.disable()  # the tree is freed at the end; no collector pauses mid-search
        try:
            move, _ = search(view, self.budget, position_rng(self.seed, view))
        finally:
            if collecting:
                gc.enable()
        return matching_action(move, legal) or dict(legal[0])
