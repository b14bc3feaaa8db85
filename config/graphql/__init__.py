"""Shared GraphQL plumbing: the view (auth, limits, error formatting), ids, typed errors."""
