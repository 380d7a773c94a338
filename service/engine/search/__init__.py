"""Searches planned once and run by one page executor; the one place a query side becomes a
vector."""
