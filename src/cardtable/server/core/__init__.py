"""What every part of the server shares: settings, message parsing and limits, tokens, counters."""
