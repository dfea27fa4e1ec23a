/**
 * RFC 4180 reader for the tests (no CSV parser is a dependency): records end with CRLF, a quoted field may hold
 * commas, CR, LF and doubled quotes. Refuses what the RFC does not allow (a bare quote inside an unquoted field, a
 * bare LF between records, an unterminated quote), so a test fails on a malformed export rather than reading it loosely.
 */
export function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let i = 0;
  const endField = () => { record.push(field); field = ''; };
  while (i < text.length) {
    const c = text[i];
    if (c === '"' && field === '') {
      // a quoted field, up to its closing quote
      let j = i + 1;
      for (;;) {
        if (j >= text.length) throw new Error(`unterminated quoted field at ${i}`);
        if (text[j] === '"') {
          if (text[j + 1] === '"') { field += '"'; j += 2; continue; }
          break;
        }
        field += text[j++];
      }
      i = j + 1;
      if (i < text.length && text[i] !== ',' && text[i] !== '\r') throw new Error(`text after a closing quote at ${i}`);
      continue;
    }
    if (c === ',') { endField(); i++; continue; }
    if (c === '\r') {
      if (text[i + 1] !== '\n') throw new Error(`CR without LF at ${i}`);
      endField(); records.push(record); record = []; i += 2; continue;
    }
    if (c === '\n') throw new Error(`LF without CR at ${i}`);
    if (c === '"') throw new Error(`quote inside an unquoted field at ${i}`);
    field += c; i++;
  }
  if (field !== '' || record.length) throw new Error('the last record does not end with CRLF');
  return records;
}

/** The records as objects keyed by the header row. */
export function csvObjects(text: string): { header: string[]; rows: Record<string, string>[] } {
  const [header, ...records] = parseCsv(text);
  for (const r of records) if (r.length !== header.length) throw new Error(`a record of ${r.length} fields under ${header.length} headers`);
  return { header, rows: records.map((r) => Object.fromEntries(header.map((h, k) => [h, r[k]]))) };
}
