"""Writes: creating live collections and turning write requests into logged operations (through
search's side-to-vector step)."""
