# The admission webhook's image (deploy/webhook.yaml): ailint installed from this repository.
#   docker build -t ghcr.io/ailint/ailint:0.1.0 .
# The Deployment passes `webhook serve ...` as args to the ENTRYPOINT; it runs as user
# 65532 with a read-only root file system (bytecode is compiled at build time).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY linter linter
COPY rules rules
COPY schemas schemas
RUN pip install --no-cache-dir --no-compile --prefix=/install . \
 && python -m compileall -q /install

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY --from=build /install /usr/local
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["ailint"]
CMD ["--help"]
