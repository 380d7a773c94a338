"""Tests of the client's framework integrations."""
