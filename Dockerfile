# syntax=docker/dockerfile:1
# kubevirt-expand-apiserver at a release tag (docs/ci-automation.md#a-container-image-for-ci):
#   git checkout v0.2.0
#   docker build --build-arg VERSION=0.2.0 --build-arg COMMIT="$(git rev-parse HEAD)" \
#       -t kubevirt-expand-apiserver:v0.2.0 .
#
# The build context holds no .git (.dockerignore), so setuptools-scm cannot read the version from the tag
# as a pip install from git does: VERSION and COMMIT say it (`kubevirt-expand --version`, /version);
# without them the image says 0.1.dev0, commit unknown. At any commit, VERSION="$(python -m setuptools_scm)"
# (with setuptools-scm installed) is the version a pip install of that commit has.
#
# The base is pinned to a patch release; pin it harder with a digest for reproducible builds:
#   docker buildx imagetools inspect python:3.11.13-slim-bookworm   (then PYTHON_IMAGE=...@sha256:...)
ARG PYTHON_IMAGE=python:3.11.13-slim-bookworm

# Stage 1: build the wheels (the project's and every dependency's) with the full toolchain at hand.
FROM ${PYTHON_IMAGE} AS build
ARG VERSION=0.1.dev0
ARG COMMIT=
# setuptools-scm's overrides for this distribution: the version, and the commit as its node ("g" + SHA).
ENV SETUPTOOLS_SCM_PRETEND_VERSION_FOR_KUBEVIRT_EXPAND_APISERVER="${VERSION}" \
    SETUPTOOLS_SCM_PRETEND_METADATA_FOR_KUBEVIRT_EXPAND_APISERVER="{node=\"${COMMIT:+g}${COMMIT}\"}"
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
