// Node strips TypeScript types itself, except in files under a node_modules folder: there it refuses
// (ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING). When the plugin is installed under node_modules (an npm
// install from a tarball), its launcher registers this hook, which strips the types of those files the same way.
import { registerHooks, stripTypeScriptTypes } from 'node:module';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

registerHooks({
  load(url, context, nextLoad) {
    if (url.startsWith('file:') && url.endsWith('.ts') && url.includes('/node_modules/')) {
      return { format: 'module', source: stripTypeScriptTypes(readFileSync(fileURLToPath(url), 'utf8')), shortCircuit: true };
    }
    return nextLoad(url, context);
  },
});
