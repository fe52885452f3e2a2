/**
 * Registered before the operator's modules load (`node --import ./src/runtime/lean-client-node.ts src/main.ts`, or
 * the compiled `dist/runtime/lean-client-node.js` in the image):
 * client-node's KubeConfig module imports the generated API's index only for `makeApiClient`, which the operator
 * never calls; that import is answered by client-node-api-stub.ts instead, and the generated clients and models
 * (~45 MiB of RSS, measured in docs/scale.md) are never loaded. Everything else resolves as usual. Should a
 * client-node release import anything else from there, the stub's missing export fails the process at start,
 * loudly (test/runtime/lean-client-node.test.ts runs the operator's module graph through it).
 */
import { registerHooks } from 'node:module';

// The stub beside this module, with this module's own extension: .ts from src/, .js once compiled into dist/ (a URL
// in a string is not an import, so tsc's extension rewriting does not reach it).
export const API_STUB_URL = new URL(`./client-node-api-stub${import.meta.url.slice(import.meta.url.lastIndexOf('.'))}`, import.meta.url).href;
const CONFIG_MODULE = '/@kubernetes/client-node/dist/config.js';

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier === './gen/index.js' && context.parentURL?.endsWith(CONFIG_MODULE)) return { url: API_STUB_URL, shortCircuit: true };
    return nextResolve(specifier, context);
  },
});
