"""Simulation at scale (issue 17, part 4): faiss index kinds on 1M and 10M synthetic embeddings.

A seeded generator is fit to the real MiniLM caption embeddings of the ``coco-captions`` bundle
(k-means, then per cluster a low-rank Gaussian: the top ``--rank`` principal components of the
cluster's residuals plus an isotropic remainder carrying the rest of its variance; the cluster
weights are the k-means cluster sizes). Sampling draws a cluster, adds a residual and
L2-normalises. The fit is checked against held-out real vectors (nearest-neighbour cosine,
pairwise cosine, explained-variance spectrum, recall of one IVF configuration).

For each ``--scales`` size the ``build`` phase writes, under ``--cache`` (default
``artifacts/scale``, git-ignored), a float32 ``[n, 384]`` ``.npy`` memmap written chunk by chunk,
``--queries`` held-out queries from the same generator, their exact top-10 (numpy matmul in
blocks), and the indexes: Flat, HNSW32, IVF-Flat, IVF-PQ48, IVF-PQ96 and IVF-PQ48 with on-disk
inverted lists (shards of the add are written and merged with ``faiss.contrib.ondisk``). IVF
kinds share one coarse quantizer (two-level spherical k-means on a sample; database vectors are
assigned two-level, queries probe an exact flat quantizer). Large kinds that would not fit the
memory budget are built on disk (IVF-Flat) or skipped with the reason (HNSW, Flat is then
measured by streaming the memmap).

The ``measure`` phase starts one process per index kind (``--phase measure-one``), which loads
the index, reads ``/proc/self/smaps_rollup`` and the Rss of the index file mappings, then times
single queries with one thread after a warm-up for each parameter value (nprobe, efSearch) and
saves the returned ids; recall@10 is computed tie-aware against the exact top-10. The ``report``
phase writes ``report.md``, ``results.json`` and the plots to ``--report`` (``reports/scale``).

Example::

    .venv/bin/python -m studies.scale_simulation --scales 1000000            # all phases
    .venv/bin/python -m studies.scale_simulation --scales 1000000,10000000 --phase measure

(from the checkout's root, as ``make scale-report`` runs it; a study, not installed: see
``studies/README.md``)
"""
