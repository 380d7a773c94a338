"""index_builder package."""
