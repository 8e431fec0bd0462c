"""``cardtable serve``'s options for the server's settings: one per :class:`~cardtable.server.core.settings.Settings`
field, named after its environment variable (``--max-body-bytes`` beside ``CARDTABLE_MAX_BODY_BYTES``), typed and
explained from the field (``docs/deploy.md``). An option left out leaves the variable (or the default) in force.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from cardtable.server.core.settings import HELP, Settings, env_name, option_name

F = TypeVar("F", bound=Callable[..., Any])


def with_setting_options(command: F) -> F:
    """Give ``command`` (a Typer command ending in ``**settings``) one keyword option per setting, default ``None``
    (not given); the command receives them in ``settings`` by field name. ``KeyError`` for a field without
    :data:`~cardtable.server.core.settings.HELP`."""
    signature = inspect.signature(command, eval_str=True)
    parameters = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    for field in dataclasses.fields(Settings):
        kind = type(field.default)
        default = "none" if field.default == "" else field.default  # a text setting left empty
        help_text = f"{HELP[field.name]} (env {env_name(field.name)}, default {default})"
        option = typer.Option(option_name(field.name), help=help_text, show_default=False, rich_help_panel="Settings")
        parameters.append(inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY, default=None,
                                            annotation=Annotated[kind | None, option]))
    command.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return command


def given(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings given on the command line (the options not left out)."""
    return {name: value for name, value in settings.items() if value is not None}
