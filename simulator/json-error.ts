// Where JSON.parse failed: Node 20's messages often carry no position, so route import scans
// the text itself once parsing has failed. Returns the offset of the first offending character.

const WS = new Set([' ', '\t', '\n', '\r']);
const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/;
// eslint-disable-next-line no-control-regex -- a JSON string holds no raw control character (U+0000–U+001F)
const STRING = /^"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/;

class At extends Error {
  constructor(readonly offset: number) { super(`at ${offset}`); }
}

/** Offset of the first JSON syntax error in `text`, or -1 when it is valid. */
export function jsonErrorOffset(text: string): number {
  let i = 0;
  const skip = () => { while (WS.has(text[i])) i++; };
  const expect = (ch: string) => { skip(); if (text[i] !== ch) throw new At(i); i++; };
  const token = (re: RegExp) => { const m = re.exec(text.slice(i)); if (!m) throw new At(i); i += m[0].length; };
  const list = (close: string, item: () => void) => {
    i++;
    skip();
    if (text[i] === close) { i++; return; }
    for (;;) {
      item();
      skip();
      if (text[i] === close) { i++; return; }
      expect(',');
    }
  };
  const value = (): void => {
    skip();
    const ch = text[i];
    if (ch === '{') list('}', () => { skip(); token(STRING); expect(':'); value(); });
    else if (ch === '[') list(']', value);
    else if (ch === '"') token(STRING);
    else if (ch === '-' || (ch >= '0' && ch <= '9')) token(NUMBER);
    else token(/^(true|false|null)/);
  };
  try {
    value();
    skip();
    return i < text.length ? i : -1;
  } catch (err) {
    if (err instanceof At) return Math.min(err.offset, text.length);
    throw err;
  }
}
