"""Python client for the Crisscross service."""
