// `node /app/dist/agent/prove-flags-cli.js --binary <target kube-apiserver> (--manifest <file> | -- <flags>)`: the flag
// proof as a command, for a webhook driver's hook (or a person) to run where the target binary is
// (docs/flag-proof.md; the code in prove-flags.ts).
import { proveFlagsCommand } from './prove-flags.ts';

const code = await proveFlagsCommand(process.argv.slice(2), (l) => process.stdout.write(`${l}\n`), (l) => process.stderr.write(`${l}\n`));
process.exitCode = code;
