"""One table: its owner queue, the actions it applies, the fan-out to its audience, bots and fairness."""
