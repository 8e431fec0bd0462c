"""What every part of the server shares: settings, message parsing, limiters (``limits.py``), tokens, the clock."""
