"""The research engine: a run's orchestration and its roles, each role's agent beside its
offline mind. Tasks, commands and tests start runs through research.engine.run only."""
