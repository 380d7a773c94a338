"""Tests of the Python client (clients/python)."""
