"""Developer and first-try settings: DEBUG on unless the env says otherwise."""

from config.env import env_bool, env_str
from config.settings.base import *  # noqa: F403

DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_str("SECRET_KEY", "local-development-only-not-secret")
