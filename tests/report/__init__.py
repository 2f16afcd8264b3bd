"""Tests of the report commands: leaderboard and figures."""
