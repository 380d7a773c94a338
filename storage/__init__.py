"""The on-disk format of Crisscross, and the one place that knows it.

A bundle version is an immutable segment (DESIGN §4): a manifest, and per collection its faiss
index files, ids and metadata, stored vectors, typed columns and thumbnails. Its writer
(:mod:`storage.writer`, imported by the index builder) publishes a version atomically; its
reader (:mod:`storage.reader`, imported by the service) verifies and maps one. The service never
imports the writer (an import-linter contract). The formats inside a version have a module each
(:mod:`storage.manifest`, :mod:`storage.columns`, :mod:`storage.id_table`,
:mod:`storage.index_files`, :mod:`storage.thumbnails`); :mod:`storage.layout` names the files
and folders, :mod:`storage.durability` makes writes durable, and :mod:`storage.private_copies`
keeps the copies a server maps.
"""
