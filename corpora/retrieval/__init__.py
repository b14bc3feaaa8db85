"""Lexical (FTS5 / PostgreSQL full text), dense (stored vectors) and fused passage ranking."""
