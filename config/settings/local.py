"""Developer and first-try settings: DEBUG on unless the env says otherwise."""

from config.env import env_bool, env_str
from config.settings.base import *  # noqa: F403

DEBUG = env_bool("DEBUG", True)
# base read GRAPHIQL's default from its own DEBUG (off): on here, as the README says, with DEBUG.
GRAPHIQL = env_bool("GRAPHIQL", DEBUG)
SECRET_KEY = env_str("SECRET_KEY", "local-development-only-not-secret")
