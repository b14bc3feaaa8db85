"""Corpora, documents and passages: ingestion and lexical + dense retrieval."""
