// What client-node's config.js imports from its generated API's index, for KubeConfig.makeApiClient only; the
// operator process answers that import with this module (lean-client-node.ts says why).
const unavailable = (): Error =>
  new Error('KubeConfig.makeApiClient is not available in the operator process: it runs without client-node\'s generated API (src/runtime/lean-client-node.ts); use kubeRequest');

export function createConfiguration(): never {
  throw unavailable();
}

export class ServerConfiguration {
  constructor() {
    throw unavailable();
  }
}
