/**
 * Where JSON text first goes wrong, as line and column. Node's JSON.parse names a character
 * offset for some mistakes and none for others ("Unexpected token …"), so the text is walked
 * by the JSON grammar here and the first offset it cannot accept is reported.
 */
export interface JsonPosition {
  offset: number;
  line: number;
  column: number;
}

class Stop extends Error {
  constructor(readonly at: number) {
    super('stop');
  }
}

/** The offset of the first character JSON cannot accept, or null when the text is valid. */
export function firstJsonErrorOffset(text: string): number | null {
  let i = 0;
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i] ?? '')) i++;
  };
  const expect = (c: string) => {
    if (text[i] !== c) throw new Stop(i);
    i++;
  };
  const string = () => {
    expect('"');
    for (;;) {
      if (i >= text.length) throw new Stop(i);
      const c = text[i] ?? '';
      if (c === '"') {
        i++;
        return;
      }
      if (c < ' ') throw new Stop(i);
      if (c === '\\') {
        const e = text[i + 1] ?? '';
        if ('"\\/bfnrt'.includes(e) && e !== '') i += 2;
        else if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) i += 6;
        else throw new Stop(i + 1);
      } else i++;
    }
  };
  const number = () => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i));
    if (!m || m[0] === '' || m[0] === '-') throw new Stop(i);
    i += m[0].length;
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      ws();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        ws();
        string();
        ws();
        expect(':');
        value();
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        expect('}');
        return;
      }
    }
    if (c === '[') {
      i++;
      ws();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (;;) {
        value();
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        expect(']');
        return;
      }
    }
    if (c === '"') return string();
    for (const word of ['true', 'false', 'null']) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return;
      }
    }
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return number();
    // A literal cut short ("tru") is wrong where it stops matching.
    for (const word of ['true', 'false', 'null']) {
      let k = 0;
      while (k < word.length && text[i + k] === word[k]) k++;
      if (k > 0) throw new Stop(i + k);
    }
    throw new Stop(i);
  };
  try {
    value();
    ws();
    if (i < text.length) throw new Stop(i);
    return null;
  } catch (e) {
    if (e instanceof Stop) return Math.min(e.at, text.length);
    throw e;
  }
}

/** Line and column (both from 1) of an offset. */
export function positionOf(text: string, offset: number): JsonPosition {
  const before = text.slice(0, offset);
  const lines = before.split('\n');
  return { offset, line: lines.length, column: (lines.at(-1) ?? '').length + 1 };
}

/** JSON.parse, or an Error saying where the text goes wrong: "line 3, column 5: …". */
export function parseJsonWithPosition(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    const offset = firstJsonErrorOffset(text) ?? text.length;
    const { line, column } = positionOf(text, offset);
    const reason = (e as Error).message.replace(/ (in JSON )?at position \d+.*$/, '').replace(/, ".*" is not valid JSON$/, '');
    const what = offset >= text.length ? 'the text ends too early' : `unexpected ${JSON.stringify(text[offset])}`;
    throw new JsonSyntaxError(line, column, `${what} (${reason})`);
  }
}

export class JsonSyntaxError extends Error {
  constructor(
    readonly line: number,
    readonly column: number,
    readonly reason: string,
  ) {
    super(`line ${line}, column ${column}: ${reason}`);
    this.name = 'JsonSyntaxError';
  }
}
