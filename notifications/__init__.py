"""In-app notifications; arrives with the research-core issue."""
