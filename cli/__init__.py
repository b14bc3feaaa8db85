"""`deepcite`: a command-line client for a Deepcite server's GraphQL API."""
