"""Tests of the repository as a whole: the layer rule of docs/architecture.md, links in the docs."""
