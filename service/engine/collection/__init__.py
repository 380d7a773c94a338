"""Collections as views: the catalog of bundles, live collections and their writers, and the one
view protocol every kind of collection answers (bundle, live, sharded)."""
