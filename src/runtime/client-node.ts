/**
 * The parts of @kubernetes/client-node the operator runs on, imported from their own modules. The package's root
 * module loads its whole generated API (every group's client and model), which the operator never calls: with
 * lean-client-node.ts registered first (`--import`), the process runs on ~45 MiB less RSS (docs/scale.md).
 * Types may still come from the root: `import type` is erased.
 */
export { KubeConfig } from '@kubernetes/client-node/dist/config.js';
export { Watch } from '@kubernetes/client-node/dist/watch.js';
export { HttpMethod, RequestContext } from '@kubernetes/client-node/dist/gen/http/http.js';
export { IsomorphicFetchHttpLibrary } from '@kubernetes/client-node/dist/gen/http/isomorphic-fetch.js';
