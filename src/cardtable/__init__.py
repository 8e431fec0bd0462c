"""cardtable: Nerts and Enemy Anemone, their bots, simulations and a table server."""

__version__ = "0.1.0"
