/**
 * Lone UTF-16 surrogates: a high one not followed by a low one, or a low one not preceded by a high one. JSON.stringify
 * writes them as `\udXXX` escapes, which PostgreSQL's json-to-text refuses, as it refuses `\u0000`.
 */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * Text from outside (a webhook receiver's answer, an error's message) as a text column can hold it: at most `maxChars`
 * UTF-16 units, NUL characters removed (PostgreSQL text cannot hold them) and lone surrogates replaced by U+FFFD (a
 * cut through a pair included). The same text comes back when it was storable already.
 */
export function storableText(text: string, maxChars: number): string {
  const cut = text.length > maxChars ? text.slice(0, maxChars) : text;
  return cut.replace(LONE_SURROGATE, '\ufffd').replaceAll('\u0000', '');
}
