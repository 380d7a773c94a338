"""Crisscross past one machine, on Ray: distributed build and sharded serving (docs/scale.md)."""
