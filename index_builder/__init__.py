"""The embedding job: a Karpathy-format corpus (read through :mod:`formats`) embedded by one
variant (:mod:`encoders`) into a faiss index bundle — write, verify, load."""
