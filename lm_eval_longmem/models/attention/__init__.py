"""Attention functions that change how far apart a query and a key look (Self-Extend,
LM-Infinite), plugged into transformers' AttentionInterface."""
