"""The model layer: the machinery methods are built from (rope/, attention/, bounded_cache/,
compressive_memory/, fox/, kv_presses/, runtime/, checkpoint/), the method framework, the methods
(one file each) and their registry."""
