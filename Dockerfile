# The operator's image: src/ compiled to JavaScript (dist/) in a build stage, then Node 24 with the production
# dependencies and dist/ only. Compiled, not run through Node's type stripping: stripping loads a WebAssembly
# compiler that holds ~18 MiB of RSS for the life of the process (bench/README.md, docs/scale.md).
# Build: docker build -t ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:<chart appVersion> .
# Without Docker, e2e/cluster/operator-image.ts builds the same image (node from the `node` npm package of
# package-lock.json, this version) as an OCI tar; test/e2e-cluster/dockerfiles.test.ts keeps the two in step.
FROM node:24.21.0-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY src/ ./src/
RUN node node_modules/typescript/bin/tsc -p tsconfig.build.json

FROM node:24.21.0-slim

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
