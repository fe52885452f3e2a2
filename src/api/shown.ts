/** How much of a refused value a message shows. */
const SHOWN = 80;

/**
 * A value that was refused, as a message shows it: JSON-quoted (a newline or a control character shows escaped,
 * never as itself: messages go to status, Events, logs and termination messages) and cut.
 */
export function shownValue(v: string): string {
  // JSON.stringify leaves U+0085, U+2028 and U+2029 as they are: each ends a line for a reader (and for `.` in a
  // regular expression), so they are escaped too, with the other non-ASCII controls and invisible format characters.
  const q = JSON.stringify(v).replace(/[\u007f-\u009f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return q.length <= SHOWN ? q : `${q.slice(0, SHOWN)}…(${v.length} characters)`;
}
