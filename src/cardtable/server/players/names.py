"""What a name may be: the one rule for account names and the names guests give their seats (``docs/protocol.md``,
"Accounts and players"), and the keys names are compared by.

A name is NFKC-normalised and trimmed, 1 to :data:`NAME_MAX` characters of letters, marks, digits and `` -_.'``
with no two spaces in a row. It may not hold a control character (NUL, C0, C1), a default-ignorable code point
(U+034F, U+FE0F, U+17B4, U+200B, U+3164 HANGUL FILLER...), a bidi control (U+202E, U+2066...) or any other format
character: such a name could look blank, look like another, or turn its row around. The sets come from ICU
(PyICU's ``UnicodeSet``), not from a list kept here.

Names are compared twice: :func:`name_key` (NFKC, case folded) says when two names are the same name, and
:func:`name_skeleton` (the UTS #39 confusable skeleton of the key, by ICU's ``SpoofChecker``) when they only look
the same (``аna`` with a Cyrillic ``а`` and ``ana``; ``bot-l`` and ``bot-1``). Accounts are unique by both.

Nobody may take a name that reads as a bot's (a bot family such as ``greedy`` with levels and numbers:
``greedy hard``, or any name with the word bot in it as a word: ``bot-1``, ``봇 2``) or as one of the table's
own words (``open seat``, ``deleted player``) in English, Korean or Japanese, nor a name that only looks like
one. A guest may give the client's own word for a guest (``Guest``, ``손님``, ``ゲスト``: the names a guest gets
by default); an account may not.

>>> check_name(" Mirae 미래 ")
'Mirae 미래'
>>> name_skeleton("\\u0430na") == name_skeleton("ANA")
True
>>> try:
...     check_name("greedy hard")
... except NameRefused as error:
...     print(error.code, error.params)
name.reserved {'name': 'greedy hard'}
"""

from __future__ import annotations

import functools
import unicodedata
from typing import Any

import icu

from cardtable import bots
from cardtable.games import game_names

__all__ = ["NAME_MAX", "NameRefused", "check_name", "has_control", "name_key", "name_skeleton"]

NAME_MAX = 24
"""Most characters in a name (after NFKC normalisation)."""

NAME_PUNCTUATION = frozenset(" -_.'")
"""The characters other than letters, marks and digits a name may hold."""

BOT_WORDS = ("bot", "봇", "ボット")
"""The catalogues' words for a bot (``seat.bot``, ``player.bot`` in en, ko, ja): a name holding one as a word is
refused."""

GUEST_WORDS = ("guest", "손님", "ゲスト")
"""The catalogues' words for a guest (``lobby.default_name``, ``player.guest``): a guest's default name, so a guest
may give one; an account may not take one, and nobody may take a look-alike of one."""

TABLE_WORDS = ("open seat", "빈 자리", "空席", "deleted", "deleted player", "삭제된 플레이어", "削除されたプレイヤー")
"""The catalogues' words for an open seat and a deleted player (``seat.open``, ``player.deleted``): nobody may take
them, or a look-alike."""

_REFUSED_CHARS = icu.UnicodeSet("[[:Default_Ignorable_Code_Point:][:Bidi_Control:][:Cc:][:Cf:][:Cs:][:Co:]]")
"""Controls (``Cc``: NUL, C0, DEL, C1), format characters (``Cf``), surrogates, private use, every
default-ignorable code point and every bidi control, as ICU's Unicode data defines them."""

_REFUSED_CHARS.freeze()  # read-only from here on, so threads may share it

_CONTROLS = icu.UnicodeSet("[[:Cc:][:Cs:]]")
"""Control characters and surrogates: in no name, id or cursor, old or new."""
_CONTROLS.freeze()

_SPOOF = icu.SpoofChecker()
"""ICU's UTS #39 checker; only its (thread-safe, const) ``getSkeleton`` is used."""


class NameRefused(ValueError):
    """A name refused: a stable ``code`` (``account.name_invalid``, ``name.invisible``, ``name.reserved``), the
    reason in English and the code's ``params``. Answered as HTTP 422."""

    def __init__(self, code: str, detail: str, **params: Any) -> None:
        super().__init__(detail)
        self.code, self.detail, self.params = code, detail, params


def has_control(text: str) -> bool:
    """True if ``text`` holds a control character (NUL, C0, DEL, C1) or a surrogate, which no name, table id or
    cursor ever holds: such text is refused before it reaches the database (PostgreSQL answers a NUL byte in
    text with an error).

    >>> has_control("ana"), has_control("a\\x00b"), has_control("a\\x1bb")
    (False, True, True)
    """
    return any(_CONTROLS.contains(ch) for ch in text)


def name_key(name: str) -> str:
    """The form names are compared in: NFKC, case folded, NFKC again (``"ＡＮＡ"`` and ``"ana"`` are one name).

    >>> name_key("ＡＮＡ")
    'ana'
    """
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def name_skeleton(name: str) -> str:
    """The UTS #39 confusable skeleton of ``name``'s :func:`name_key`, case folded once more (some prototypes are
    capitals: ``0`` becomes ``O``): two names with one skeleton look alike.

    >>> name_skeleton("b0t-1") == name_skeleton("BOT-l")
    True
    """
    return str(_SPOOF.getSkeleton(0, name_key(name))).casefold()


def _char(ch: str) -> str:
    return f"U+{ord(ch):04X}"


def _refuse_invisible(text: str) -> None:
    for ch in text:
        if _REFUSED_CHARS.contains(ch):
            raise NameRefused("name.invisible", f"a name may not contain the invisible or control character "
                              f"{_char(ch)}", char=_char(ch))


def _words(skeleton: str) -> list[str]:
    """``skeleton`` cut into words at punctuation and where letters meet digits (``"bot-l"``, ``"bot2"``: bot and
    the number)."""
    out: list[str] = []
    word = ""
    for ch in skeleton:
        if ch in NAME_PUNCTUATION:
            if word:
                out.append(word)
            word = ""
            continue
        if word and unicodedata.category(ch).startswith("N") != unicodedata.category(word[-1]).startswith("N"):
            out.append(word)
            word = ""
        word += ch
    if word:
        out.append(word)
    return out


@functools.cache
def _vocabulary() -> dict[str, frozenset[str]]:
    """Skeletons of the words :func:`reserved` looks for: ``bot`` (:data:`BOT_WORDS`), ``family`` and ``level``
    (of every bot spec: ``greedy``, ``hard``), ``guest`` (:data:`GUEST_WORDS`), ``table`` (:data:`TABLE_WORDS`),
    and ``digit`` (the characters the skeletons of digits are made of: ``0`` looks like ``o``, ``1`` like ``l``)."""
    families, levels = set(), set()
    for game in game_names():
        for info in bots.bot_infos(game):
            family, _, level = info.spec.partition(":")
            families.add(family)
            if level:
                levels.add(level)
    return {
        "bot": frozenset(map(name_skeleton, BOT_WORDS)), "family": frozenset(map(name_skeleton, families)),
        "level": frozenset(map(name_skeleton, levels)), "guest": frozenset(map(name_skeleton, GUEST_WORDS)),
        "table": frozenset(map(name_skeleton, TABLE_WORDS)), "digit": frozenset(name_skeleton("0123456789")),
    }


def _numeric(word: str, digits: frozenset[str]) -> bool:
    return all(ch in digits or unicodedata.category(ch) == "Nd" for ch in word)


def _one_of(word: str, words: frozenset[str], digits: frozenset[str]) -> bool:
    """``word`` is one of ``words``, or one of them with a number run into it (``botl``: ``bot1``)."""
    return word in words or any(word.startswith(w) and _numeric(word[len(w):], digits) for w in words)


def reserved(name: str, *, guest: bool = False) -> bool:
    """True if ``name`` (already :func:`check_name`'s form) reads as a bot's or as the table's own words, or looks
    like one (all compared by :func:`name_skeleton`): a bot word as one of its words (``bot-1``, ``Bot 2``, ``봇``);
    only bot families, their levels and numbers, with a family (``greedy hard``, ``random 7``, ``heuristic``); a
    phrase of :data:`TABLE_WORDS` (``open seat``); a guest word with or without a number, except, for a
    ``guest``, the word itself (``Guest``: a guest's default name).

    >>> [reserved(n) for n in ("greedy hard", "b0t-l", "Random Joe", "robot", "Guest")]
    [True, True, False, False, True]
    >>> reserved("Guest", guest=True), reserved("Gu\u0435st", guest=True)
    (False, True)
    """
    vocabulary = _vocabulary()
    digits = vocabulary["digit"]
    whole = name_skeleton(name)
    if whole in vocabulary["table"]:
        return True
    words = _words(whole)
    if any(_one_of(w, vocabulary["bot"], digits) for w in words):
        return True
    families = vocabulary["family"]
    if any(_one_of(w, families, digits) for w in words) and all(
            _one_of(w, families, digits) or w in vocabulary["level"] or _numeric(w, digits) for w in words):
        return True
    guests = vocabulary["guest"]
    if any(_one_of(w, guests, digits) for w in words) and all(
            _one_of(w, guests, digits) or _numeric(w, digits) for w in words):
        return not (guest and name_key(name) in {name_key(w) for w in GUEST_WORDS})
    return False


def check_name(raw: str, *, guest: bool = False) -> str:
    """``raw`` as stored (NFKC, trimmed) if it may be a name: an account's, or with ``guest`` a guest's seat name.

    Raises :class:`NameRefused` with code ``name.invisible`` (``char``: ``"U+202E"``) for a control, format, bidi
    or default-ignorable character; ``account.name_invalid`` (``max``, ``char``) for a name empty after
    trimming, longer than :data:`NAME_MAX`, with other characters than letters, marks, digits and `` -_.'`` or
    with two spaces in a row; ``name.reserved`` (``name``) for a name kept for bots and the table's words
    (:func:`reserved`)."""
    _refuse_invisible(raw)
    name = unicodedata.normalize("NFKC", raw).strip()
    _refuse_invisible(name)
    if not 1 <= len(name) <= NAME_MAX:
        raise NameRefused("account.name_invalid", f"a name has 1 to {NAME_MAX} characters", max=NAME_MAX, char=None)
    for ch in name:
        if unicodedata.category(ch)[0] not in "LMN" and ch not in NAME_PUNCTUATION:
            raise NameRefused("account.name_invalid", f"a name may not contain {ch!r}", char=ch, max=NAME_MAX)
    if "  " in name:
        raise NameRefused("account.name_invalid", "a name may not contain two spaces in a row", max=NAME_MAX,
                          char=None)
    if reserved(name, guest=guest):
        raise NameRefused("name.reserved", f"the name {name!r} is kept for bots and the table's own words",
                          name=name)
    return name
