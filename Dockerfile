# The operator's image: Node 24 runs src/main.ts directly (type stripping; the sources use only erasable
# TypeScript syntax, see tsconfig.json's erasableSyntaxOnly), with production dependencies only.
# Build: docker build -t ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:<chart appVersion> .
# Without Docker, e2e/cluster/operator-image.ts builds the same image (node from the `node` npm package of
# package-lock.json, this version) as an OCI tar; test/e2e-cluster/dockerfiles.test.ts keeps the two in step.
FROM node:24.21.0-slim

ENV NODE_ENV=production
WORKDIR /app

COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

COPY src/ ./src/

# The image's own non-root user (node, uid 1000), by number so that runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 8080 8081
# lean-client-node.ts keeps client-node's generated API out of the process (~45 MiB of RSS; docs/scale.md).
ENTRYPOINT ["node", "--disable-warning=ExperimentalWarning", "--import", "./src/runtime/lean-client-node.ts", "src/main.ts"]
CMD ["--in-cluster"]
