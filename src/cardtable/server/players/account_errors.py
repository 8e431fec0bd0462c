"""The refusals of the account routes: :class:`AccountError` and the app's handler that answers it as
``4xx {"detail": reason, "code": code, "params": {...}}`` (with ``Retry-After`` when it says how long to wait)."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse


class AccountError(Exception):
    """A refused accounts request: HTTP ``status``, a stable ``code``, a reason and its ``params``."""

    def __init__(self, status: int, code: str, detail: str, **params: Any) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail, self.params = status, code, detail, params


async def account_error(_request: Request, error: Exception) -> JSONResponse:
    """The app's handler for :class:`AccountError`: ``{"detail", "code", "params"}`` with its status."""
    assert isinstance(error, AccountError)
    headers = {"Retry-After": str(error.params["retry_after_s"])} if "retry_after_s" in error.params else None
    return JSONResponse({"detail": error.detail, "code": error.code, "params": error.params},
                        status_code=error.status, headers=headers)
