"""The tables of this process: registry, seating, Play now, autostart, listings, the daily deal."""
