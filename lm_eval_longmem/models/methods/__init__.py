"""The long-memory methods, one file each and nothing else: `models/method_registry/table.py`
names each method's class here, and the registry imports a file when its method is asked for."""
