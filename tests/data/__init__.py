"""Tests of the data layer: corpora, token streams, offline assets, the passkey prompt."""
