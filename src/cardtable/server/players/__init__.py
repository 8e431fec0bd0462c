"""People: accounts and sessions, names, match results and ratings, leaderboards."""
