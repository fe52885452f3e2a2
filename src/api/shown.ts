/** How much of a refused value a message shows. */
const SHOWN = 80;

/**
 * A value that was refused, as a message shows it: JSON-quoted (a newline or a control character shows escaped,
 * never as itself: messages go to status, Events, logs and termination messages) and cut.
 */
export function shownValue(v: string): string {
  const q = JSON.stringify(v);
  return q.length <= SHOWN ? q : `${q.slice(0, SHOWN)}…(${v.length} characters)`;
}
