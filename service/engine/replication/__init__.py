"""Replicas of the live collections: a leader's log followed by other servers."""
