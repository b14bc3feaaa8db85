#!/usr/bin/env bash
# Checks that compose/docker-compose.yml parses and validates, using the committed
# deepcite.env.example as its env file (the real deepcite.env holds secrets and is not committed).
# Needs only the docker-compose client (Debian: apt-get install docker-compose); no Docker engine.
#
#   bash compose/validate.sh        # from anywhere; exits non-zero when validation fails
set -euo pipefail

# Run from the repository root (this script's parent folder), whatever the caller's cwd.
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if command -v docker-compose >/dev/null 2>&1; then
    compose=(docker-compose)
elif docker compose version >/dev/null 2>&1; then
    compose=(docker compose)
else
    echo "validate.sh: neither docker-compose nor the docker compose plugin is installed" >&2
    exit 2
fi

# env_file paths are resolved from the compose file's folder, so this names compose/deepcite.env.example.
DEEPCITE_ENV_FILE=deepcite.env.example "${compose[@]}" -f compose/docker-compose.yml config -q
echo "compose/docker-compose.yml: valid (${compose[*]} config, env file compose/deepcite.env.example)"
