// The node agent for tests: src/agent/run.ts as src/agent/main.ts runs it, with the three things main.ts fixes
// passed as arguments instead (`node agent-entry.ts <termination message file> <poll ms> <run allowance ms>`), so
// that a test reads the termination message from a temp file and waits in tenths of a second. Only tests have
// this file: the image holds the compiled src/ (dist/), whose main.js takes no arguments.
import { runAgent } from '../../../src/agent/run.ts';

const [terminationMessagePath, poll, allowance] = process.argv.slice(2);
if (terminationMessagePath === undefined || poll === undefined || allowance === undefined) {
  process.stderr.write('usage: agent-entry.ts <termination message file> <poll ms> <run allowance ms>\n');
  process.exit(64);
}
runAgent(process.env, { terminationMessagePath, pollMs: Number(poll), runAllowanceMs: Number(allowance) });
