"""Small pieces every layer uses: typed values, "did you mean", classes that register by being
defined, cache paths, crash-safe files, damaged SQLite databases and the Hub's reachability.
Nothing here imports torch or lm-eval."""
