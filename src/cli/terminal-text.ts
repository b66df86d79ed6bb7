/**
 * Text the CLI writes to a terminal carries no control characters but newline and tab: a command's
 * output, a job name or an error message could otherwise move the cursor, clear the screen, set
 * the window title (`ESC ] 0 ; … BEL`) or hide log lines. Each other C0 character, DEL and each
 * C1 character is shown as `\xNN` text instead (ESC as `\x1b`), so it stays visible and harmless.
 *
 * Stored data (history `output`/`error`) keeps the bytes as the command wrote them: `--json`
 * prints them JSON-escaped (`\u001b`), the dashboard HTML-escapes them.
 */

/** Control characters other than `\n` and `\t` (C0, DEL, C1). */
const UNPRINTABLE = /(?![\n\t])\p{Cc}/gu;

function hex(c: string): string {
  return c.charCodeAt(0).toString(16).padStart(2, '0');
}

/** `text` with each control character other than newline and tab shown as `\xNN`. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => `\\x${hex(c)}`);
}

/**
 * JSON text (from `JSON.stringify`) with the control characters it leaves raw (DEL and C1, inside
 * strings) written as `\u00NN` escapes: the same JSON value, safe on a terminal.
 */
export function printableJson(json: string): string {
  return json.replace(UNPRINTABLE, (c) => `\\u00${hex(c)}`);
}
