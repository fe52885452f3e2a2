// The static Pod driver's node agent, as its Job runs it: `node /app/dist/agent/main.js`, no arguments. Everything
// it is told comes from its environment, checked by input.ts (run.ts describes the steps and exit codes); where its
// termination message goes and how often it asks /readyz are fixed here, never taken from the environment: the
// container's terminationMessagePath (the API default, which the Job does not change) and every 2 s.
import { AGENT_POLL_INTERVAL_SECONDS, AGENT_RUN_ALLOWANCE_SECONDS, AGENT_TERMINATION_MESSAGE_PATH } from '../api/constants.ts';
import { runAgent } from './run.ts';

runAgent(process.env, {
  terminationMessagePath: AGENT_TERMINATION_MESSAGE_PATH,
  pollMs: AGENT_POLL_INTERVAL_SECONDS * 1000,
  runAllowanceMs: AGENT_RUN_ALLOWANCE_SECONDS * 1000,
});
