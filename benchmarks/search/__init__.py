"""Search-efficiency benchmark: python -m benchmarks.search (see docs/search.md)."""
