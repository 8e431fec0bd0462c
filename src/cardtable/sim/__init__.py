"""Simulations and tournaments: many bot-only hands or games, in many processes."""
