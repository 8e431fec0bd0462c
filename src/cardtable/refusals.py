"""Every refusal code, with its English template (``docs/protocol.md``, "Refusal codes").

A refusal is an engine :class:`~cardtable.engine.IllegalAction`, a WebSocket ``reject`` or ``error``, or an HTTP
error from the lobby. Each carries today's English ``reason`` (for logs and old clients) plus a stable ``code``
from :data:`CODES` and ``params`` that fill the code's template. The web client words each code in the player's
language from its catalogues (``web/static/i18n/codes/{en,ko,ja}.json``), naming cards and piles as a player
says them.

Params contract:

- keys ending in ``card`` hold card codes as in records (``"KD"``, ``"10H"``, ``"JK1"``, ``"7C"`` in Enemy
  Anemone ``"3A"``);
- keys ending in ``pile`` hold ``{"kind": "nerts" | "waste" | "stock" | "work" | "foundation", "number": N}``
  where ``number`` counts work piles from 1 as a player does (``work:0`` is 1) and is ``None`` for the others;
  a foundation is named by a ``top_card`` param beside it, never by its id;
- keys ending in ``suit`` hold a suit letter (``"S"``, ``"H"``, ``"D"``, ``"C"``; ``"A"`` to ``"F"``);
- every other param is a number or a string (``count``, ``seat`` from 0...).

A template uses only some of its params (at most every one); the others are there for programs.

>>> sorted(placeholders(CODES["nerts.work_pile_order"]))
['card', 'onto_card']
>>> render("nerts.pile_not_empty", {"count": 3})
'Your Nerts pile still has 3 cards'
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

__all__ = ["CODES", "PARAMS", "placeholders", "render"]

CODES: dict[str, str] = {
    # -- any action (both games) --------------------------------------------------------------------------
    "action.malformed": "That action is not understood",
    "action.bad_time": "The time of that action is not valid",
    "action.time_backwards": "That action came too late",
    "action.no_seat": "That seat is not at this table",
    "action.unknown_type": "That action is not part of this game",
    "action.unexpected_field": "That action carries something it should not",
    "action.bad_pile": "That pile is not known",
    "action.bad_count": "The number of cards to move is not valid",
    "action.bad_card": "That is not a card of this game",
    "action.illegal": "That move is not allowed now",
    "action.spectator": "You are watching: take a seat to play",
    "hand.over": "The hand is over",
    # -- Nerts ----------------------------------------------------------------------------------------------
    "nerts.end_without_call": "Nobody has called Nerts",
    "nerts.bad_end_reason": "A hand cannot end that way",
    "nerts.table_action": "The table cannot do that",
    "nerts.table_only": "Only the table can do that",
    "nerts.already_stuck": "You have already said you are stuck",
    "nerts.cycle_not_stuck": "Say you are stuck first: then you may cycle your stock",
    "nerts.cycle_empty_stock": "Your stock is empty: nothing to cycle",
    "nerts.already_called": "Nerts has already been called",
    "nerts.pile_not_empty": "Your Nerts pile still has {count} cards",
    "nerts.called": "Too late: Nerts has been called",
    "nerts.pile_empty": "{pile} is empty",
    "nerts.no_work_pile": "There is no {pile}: you have {count} work piles",
    "nerts.one_card_only": "Only one card at a time comes from {pile}",
    "nerts.run_too_long": "{pile} has only {size} cards, not {count}",
    "nerts.foundation_one_card": "Only one card at a time goes to a foundation",
    "nerts.as_not_joker": "Only a joker stands for another card",
    "nerts.same_pile": "Those cards are already on {pile}",
    "nerts.work_pile_order": (
        "{card} does not go on {onto_card}: work piles go down one rank at a time in alternating colours"
    ),
    "nerts.joker_needs_as": "{card} is a joker: say which card it stands for",
    "nerts.bad_as": "A joker must stand for a real card",
    "nerts.as_joker": "A joker cannot stand for a joker",
    "nerts.foundation_needs_ace": "Only an ace starts a foundation, and {card} is not an ace",
    "nerts.no_foundation": "That foundation is not on the table",
    "nerts.foundation_suit": "{card} does not go on {top_card}: a foundation keeps to one suit",
    "nerts.foundation_finished": "That foundation is finished: it ends with {top_card}",
    "nerts.foundation_moved_on": "Too late: that foundation has moved on to {top_card}",
    "nerts.foundation_order": "{card} does not go on {top_card}: it needs {needed_card} next",
    "nerts.under_own_pile": "A card cannot slide under its own pile",
    "nerts.under_empty_pile": "{pile} is empty: put the card on it, not under it",
    "nerts.under_needs_empty_pile": "You may slide a card under a pile only while one of your work piles is empty",
    "nerts.under_order": "{card} does not go under {under_card}: it must be one rank higher and the other colour",
    "nerts.nothing_to_flip": "Your stock and waste are both empty: nothing to flip",
    # -- Enemy Anemone ----------------------------------------------------------------------------------------
    "anemone.table_action": "The table takes no actions in Enemy Anemone",
    "anemone.not_your_turn": "It is not your turn",
    "anemone.needs_card": "Choose a card first",
    "anemone.bad_anemones": "Those anemones are not valid",
    "anemone.card_not_held": "You do not hold {card}",
    "anemone.discard_with_anemones": "A discard takes no anemones",
    "anemone.discard_can_play": "You cannot discard: you can play a suit that is not in the trick yet",
    "anemone.suit_in_trick": "{card} cannot be played: {suit} is already in the trick, so play another suit",
    "anemone.must_discard": "{card} cannot be played: {suit} is already in the trick, so discard a card",
    "anemone.anemones_not_held": "You do not hold those anemones",
    # -- the table (WebSocket rejects and errors) ---------------------------------------------------------------
    "table.not_started": "The game has not started yet",
    "table.over": "The game is over",
    "seat.kept": "A bot plays this seat to the end of the match: it ran out of time three times",
    "table.broken": "The table stopped on a server error",
    "hello.timeout": "No hello within {seconds} seconds: the connection closes",
    "hello.repeated": "This connection has already said hello",
    "hello.missing": "Say hello first",
    "hello.bad_token": "This link no longer holds a seat at this table",
    "message.rate_limited": "Too many messages: at most {rate} a second",
    "message.too_large": "That message is too large: {size} bytes, at most {limit}",
    "message.malformed": "That message is not understood",
    "message.not_json": "That message could not be read",
    "reaction.unknown": "That reaction is not one of the table's",
    "reaction.spectator": "You are watching: take a seat to send reactions",
    "reaction.rate_limited": "Too many reactions: {burst} at once, then one every {every_s} seconds",
    # -- the HTTP lobby -------------------------------------------------------------------------------------------
    "request.invalid": "That request is not valid",
    "http.error": "The request failed (error {status})",
    "game.unknown": "There is no such game",
    "options.invalid": "One of the table options is not allowed",
    "seats.count": "{count} seats were given for a table of {players}",
    "seats.bad_bot": "That bot is not known",
    "seats.none_open": "At least one seat must be open, for you",
    "table.not_found": "This table does not exist",
    "table.started": "The game has already started",
    "table.full": "The table is full",
    "table.not_ready": "Every seat must be taken before the start",
    "table.not_finished": "The game is not finished: its record is published at the end",
    "review.not_finished": "The game is not finished: its review is made at the end",
    "again.not_over": "The game is not over yet: Play again opens the next table at its end",
    "again.followed": "You already have your seat at the next table",
    "seat.no_such": "There is no such seat at this table",
    "seat.taken": "That seat is taken",
    "seat.account_held": "You already have a seat at this table",
    "table.seed_not_allowed": "Only a table of one person and bots may have a chosen seed",
    "pace.unsupported": "This game cannot be played turn-based: it is played in real time only",
    "turn_clock.too_short": "A turn-based table needs at least {min_s} seconds at the start and per move",
    "turn_clock.invalid": (
        "That turn clock is not valid: at most 30 days at the start, and no more per move than at the start"
    ),
    "turn_based.too_many": "You already have {limit} turn-based games in progress: finish or leave one first",
    "token.bad": "This link no longer holds a seat at this table",
    # -- limits (docs/protocol.md, "Limits"; docs/deploy.md) ----------------------------------------------------
    "connection.seat_limit": "This seat already has {limit} connections",
    "connection.address_limit": "Too many connections to this table from your address: at most {limit}",
    "connection.spectator_limit": "This table already has {limit} spectators",
    "connection.server_limit": "Too many connections from your address: at most {limit}",
    "request.too_large": "The request is too large: at most {limit} bytes",
    "request.head_too_large": "The request's headers are too large: at most {limit} bytes",
    "table.create_limit": "Too many new tables from your address: at most {rate} a minute",
    "lobby.read_limit": "Too many lobby requests from your address: wait {retry_after_s} seconds",
    "table.join_limit": "Too many joins from your address: wait {retry_after_s} seconds",
    "table.seat_limit": "Your address already holds {limit} seats: leave one first",
    # -- the daily deal (docs/protocol.md, "The daily deal") ------------------------------------------------
    "daily.unknown_game": "There is no daily deal of that game",
    "daily.played": "You have played today's daily deal: come back tomorrow",
    "daily.private": "This daily deal's table is private until the end of its day ({date}, UTC): play it first",
    "daily.bad_date": "Give a day up to today, as YYYY-MM-DD",
    # -- accounts and players (docs/protocol.md, "Accounts and players") ------------------------------------
    "account.name_invalid": "A name has 1 to {max} characters: letters, digits, spaces and - _ . '",
    "account.name_taken": "That name is taken",
    "account.password_invalid": "A password has {min} to {max} characters",
    "account.bad_credentials": "Wrong name or password",
    "account.rate_limited": "Too many tries: wait {retry_after_s} seconds",
    "account.not_signed_in": "You are not signed in",
    "account.cross_origin": "That request came from another site",
    "push.endpoint_invalid": "That is not a push service's address (https, at most {max} characters)",
    "push.endpoint_insecure": "Notifications need a secure (https) push service",
    "push.keys_invalid": "That subscription's {field} key is not valid",
    "player.unknown": "There is no player of that name",
    "player.bad_cursor": "That page of matches is not known",
    "name.invisible": "A name may not hold invisible characters, controls or characters that turn the writing around",
    "name.reserved": "That name is kept for bots and the table's own words: choose another",
}
"""Every refusal code and its English template, ``{param}`` placeholders filled from the refusal's params."""

PARAMS: dict[str, tuple[str, ...]] = {
    "action.malformed": (),
    "action.bad_time": ("ms",),
    "action.time_backwards": ("ms", "last_ms"),
    "action.no_seat": ("seat", "seats"),
    "action.unknown_type": ("type",),
    "action.unexpected_field": ("field", "type"),
    "action.bad_pile": ("field",),
    "action.bad_count": ("value",),
    "action.bad_card": ("value",),
    "action.illegal": (),
    "action.spectator": (),
    "hand.over": (),
    "nerts.end_without_call": (),
    "nerts.bad_end_reason": ("reason",),
    "nerts.table_action": ("type",),
    "nerts.table_only": ("type",),
    "nerts.already_stuck": (),
    "nerts.cycle_not_stuck": (),
    "nerts.cycle_empty_stock": (),
    "nerts.already_called": ("seat",),
    "nerts.pile_not_empty": ("count",),
    "nerts.called": ("seat", "until_ms"),
    "nerts.pile_empty": ("pile",),
    "nerts.no_work_pile": ("pile", "count"),
    "nerts.one_card_only": ("pile",),
    "nerts.run_too_long": ("pile", "size", "count"),
    "nerts.foundation_one_card": (),
    "nerts.as_not_joker": (),
    "nerts.same_pile": ("pile",),
    "nerts.work_pile_order": ("card", "onto_card", "pile"),
    "nerts.joker_needs_as": ("card",),
    "nerts.bad_as": ("value",),
    "nerts.as_joker": (),
    "nerts.foundation_needs_ace": ("card",),
    "nerts.no_foundation": (),
    "nerts.foundation_suit": ("card", "top_card", "suit", "pile"),
    "nerts.foundation_finished": ("top_card", "pile"),
    "nerts.foundation_moved_on": ("card", "top_card", "pile"),
    "nerts.foundation_order": ("card", "top_card", "needed_card", "pile"),
    "nerts.under_own_pile": ("pile",),
    "nerts.under_empty_pile": ("pile",),
    "nerts.under_needs_empty_pile": (),
    "nerts.under_order": ("card", "under_card", "pile"),
    "nerts.nothing_to_flip": (),
    "anemone.table_action": (),
    "anemone.not_your_turn": ("seat", "to_act"),
    "anemone.needs_card": ("type",),
    "anemone.bad_anemones": (),
    "anemone.card_not_held": ("seat", "card"),
    "anemone.discard_with_anemones": (),
    "anemone.discard_can_play": ("seat",),
    "anemone.suit_in_trick": ("card", "suit"),
    "anemone.must_discard": ("card", "suit", "seat"),
    "anemone.anemones_not_held": ("seat", "wanted", "held"),
    "table.not_started": (),
    "table.over": (),
    "seat.kept": (),
    "table.broken": ("detail",),
    "hello.timeout": ("seconds",),
    "hello.repeated": (),
    "hello.missing": (),
    "hello.bad_token": (),
    "message.rate_limited": ("rate",),
    "message.too_large": ("size", "limit"),
    "message.malformed": ("detail",),
    "message.not_json": ("detail",),
    "reaction.unknown": ("reaction", "reactions"),
    "reaction.spectator": (),
    "reaction.rate_limited": ("burst", "every_s", "retry_ms"),
    "request.invalid": ("field", "detail"),
    "http.error": ("status",),
    "game.unknown": ("game",),
    "options.invalid": ("option", "detail"),
    "seats.count": ("count", "players"),
    "seats.bad_bot": ("seat", "bot"),
    "seats.none_open": (),
    "table.not_found": ("table",),
    "table.started": (),
    "table.full": (),
    "table.not_ready": (),
    "table.not_finished": (),
    "review.not_finished": (),
    "again.not_over": (),
    "again.followed": ("table",),
    "seat.no_such": ("seat", "seats"),
    "seat.taken": ("seat",),
    "seat.account_held": ("seat",),
    "table.seed_not_allowed": (),
    "pace.unsupported": ("game",),
    "turn_clock.too_short": ("field", "min_s"),
    "turn_clock.invalid": ("detail",),
    "turn_based.too_many": ("limit",),
    "token.bad": (),
    "connection.seat_limit": ("limit",),
    "connection.address_limit": ("limit",),
    "connection.spectator_limit": ("limit",),
    "connection.server_limit": ("limit",),
    "request.too_large": ("limit",),
    "request.head_too_large": ("limit",),
    "table.create_limit": ("rate",),
    "lobby.read_limit": ("rate", "retry_after_s"),
    "table.join_limit": ("rate", "retry_after_s"),
    "table.seat_limit": ("limit",),
    "daily.unknown_game": ("game",),
    "daily.played": ("game", "date"),
    "daily.private": ("table", "date"),
    "daily.bad_date": ("field",),
    "account.name_invalid": ("max", "char"),
    "account.name_taken": ("name",),
    "account.password_invalid": ("min", "max"),
    "account.bad_credentials": (),
    "account.rate_limited": ("retry_after_s",),
    "account.not_signed_in": (),
    "account.cross_origin": (),
    "push.endpoint_invalid": ("max",),
    "push.endpoint_insecure": (),
    "push.keys_invalid": ("field",),
    "player.unknown": ("name",),
    "player.bad_cursor": (),
    "name.invisible": ("char",),
    "name.reserved": ("name",),
}
"""The params each code carries, always all of them (a template shows some; the rest are for programs)."""


def placeholders(template: str) -> set[str]:
    """The ``{name}`` placeholders of ``template`` (``"{card} on {onto_card}"`` gives ``{"card", "onto_card"}``)."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def render(code: str, params: Mapping[str, Any]) -> str:
    """The English template of ``code`` filled with ``params`` as they are (card codes stay codes).

    ``KeyError`` for an unknown code or a placeholder missing from ``params``.
    """
    return CODES[code].format_map(dict(params))
