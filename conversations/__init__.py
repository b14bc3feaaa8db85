"""Conversations with a corpus and the chat agent turn; arrives with the chat issue."""
