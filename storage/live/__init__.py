"""A live collection's own storage: the write-ahead log, the records it holds, the mutable
segment they are applied to, and the collection folder that ties them together.

Immutable bundles (:mod:`storage.reader`, :mod:`storage.writer`) stay what they are; a live
collection is a folder with a spec and a log, replayed into a mutable segment at start-up.
"""
