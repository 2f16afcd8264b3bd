"""What every method is built on: the `LongMemMethod` base class, typed argument parsing, what a
checkpoint records, and the family bases (RoPE extensions, bounded caches). No method lives here."""
