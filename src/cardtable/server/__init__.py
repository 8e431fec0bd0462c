"""The table server: lobby over HTTP, play over WebSocket, records in a database (``docs/architecture.md``, "The table server").

``cardtable serve`` calls :func:`cardtable.server.edge.app.serve`; the wire format is ``docs/protocol.md``.
"""
