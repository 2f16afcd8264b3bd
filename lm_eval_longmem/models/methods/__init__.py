"""The long-memory methods, one file each and nothing else: `models/method_registry` finds every
module here and registers the `LongMemMethod` subclasses it defines."""
