"""The HTTP and WebSocket edge: the app, its guards, the lobby's routes and the connections."""
