"""Model providers, agents and the offline engine; arrives with the research-core issue."""
