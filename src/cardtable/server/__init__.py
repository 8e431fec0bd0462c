"""The table server: lobby over HTTP, play over WebSocket, records in a database (``shared/design.md``, "The server").

``cardtable serve`` calls :func:`cardtable.server.app.serve`; the wire format is ``docs/protocol.md``.
"""
