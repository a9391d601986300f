# syntax=docker/dockerfile:1
# kubevirt-expand-apiserver: `docker build -t kubevirt-expand-apiserver:0.1.0 .`
#
# The base is pinned to a patch release; pin it harder with a digest for reproducible builds:
#   docker buildx imagetools inspect python:3.11.13-slim-bookworm   (then PYTHON_IMAGE=...@sha256:...)
ARG PYTHON_IMAGE=python:3.11.13-slim-bookworm

# Stage 1: build the wheels (the project's and every dependency's) with the full toolchain at hand.
FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY apiserver ./apiserver
RUN pip wheel --no-cache-dir --wheel-dir /wheels ".[server]"

# Stage 2: the runtime: the server (the "server" extra) and the command line. Installs those wheels and
# nothing else, then removes pip itself:
# no compiler, no package manager, no sources in the image.
FROM ${PYTHON_IMAGE}
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links /wheels "kubevirt-expand-apiserver[server]" \
    && pip uninstall -y pip setuptools wheel
# Numeric, so that the Deployment's runAsNonRoot can verify it (apiservice/base/deployment.yaml).
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["kubevirt-expand", "serve"]
