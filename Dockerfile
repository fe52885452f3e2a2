# The operator's image: src/ compiled to JavaScript (dist/) in a build stage, then Node 24 with the production
# dependencies and dist/ only. Compiled, not run through Node's type stripping: stripping loads a WebAssembly
# compiler that holds ~18 MiB of RSS for the life of the process (bench/README.md, docs/scale.md).
# Build: docker build -t ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:<chart appVersion> .
# Without Docker, e2e/cluster/operator-image.ts builds the same image (node from the `node-linux-<arch>` npm
# package of package-lock.json's node version, its libraries from pinned Debian 12 packages) as an OCI tar;
# test/e2e-cluster/dockerfiles.test.ts keeps the two in step.
# The base by digest (the multi-arch image index of node:24.21.0-slim, Debian 12 bookworm, as Docker's official-image
# record docker-library/repo-info lists it), so that a rebuilt tag cannot change what is built; both stages use it.
FROM node:24.21.0-slim@sha256:0e0ff40c39bc087845bfb27465a0df4ea419520094bc35842ff83dd8cbe6f9b6 AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY src/ ./src/
RUN node node_modules/typescript/bin/tsc -p tsconfig.build.json

# node:24.21.0-slim
FROM node:24.21.0-slim@sha256:0e0ff40c39bc087845bfb27465a0df4ea419520094bc35842ff83dd8cbe6f9b6

ENV NODE_ENV=production
WORKDIR /app

COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

COPY --from=build /app/dist/ ./dist/

# The image's own non-root user (node, uid 1000), by number so that runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 8080 8081
ENTRYPOINT ["node", "dist/main.js"]
CMD ["--in-cluster"]
