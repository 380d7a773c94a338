"""The search engine, in rooms from the top down (import-linter keeps the order):

- ``writes``: creating live collections, write requests made into logged operations;
- ``search``: every search planned once (planner), its vectors made in one place
  (side_vectors), its page made by one executor over any collection view;
- ``collection``: the catalog of bundles and variants, live collections and their writers, and
  the view protocol every kind of collection answers (bundle, live, sharded);
- ``query``: what a search asks (sides, pages, filters, levers, image payloads);
- ``rank`` and ``encode``, side by side: the tie rule, scans, index parameters, keyword indexes
  and fusion; the micro-batcher, admission and the query cache.

Raises domain errors only."""
