"""Research reports: lifecycle, services, citations renderer; arrives with the research-core issue."""
