"""The long-memory methods, one file each, named after its method, and nothing else:
`models/method_registry/table.py` lists this folder, and the registry imports a file when its
method is asked for."""
