"""Encoding: the micro-batcher in front of each tower, admission at the door, the query-embedding
cache."""
