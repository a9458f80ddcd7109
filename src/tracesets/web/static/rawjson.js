// JSON as written, not as JavaScript numbers: a strict RFC 8259 reader that keeps every
// number and string literal's own text, and a pretty printer that writes them back
// unchanged. JSON.parse would turn 0.1000000000000000000001 into 0.1 and 2.0 into 2.

const MAX_DEPTH = 512;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const WHITESPACE = /[ \t\n\r]*/y;

export class JsonSyntaxError extends Error {
  constructor(message, text, offset) {
    const before = text.slice(0, offset).split('\n');
    const line = before.length;
    const column = before[before.length - 1].length + 1;
    super(`line ${line}, column ${column}: ${message}`);
    this.line = line;
    this.column = column;
  }
}

class Reader {
  constructor(text) {
    this.text = text;
    this.at = 0;
  }

  fail(message) {
    throw new JsonSyntaxError(message, this.text, this.at);
  }

  space() {
    WHITESPACE.lastIndex = this.at;
    WHITESPACE.exec(this.text);
    this.at = WHITESPACE.lastIndex;
  }

  value(depth) {
    if (depth > MAX_DEPTH) this.fail('nested too deeply');
    this.space();
    const c = this.text[this.at];
    if (c === '{') return this.object(depth);
    if (c === '[') return this.array(depth);
    if (c === '"') return this.string();
    if (c === '-' || (c >= '0' && c <= '9')) return this.number();
    for (const word of ['true', 'false', 'null']) {
      if (this.text.startsWith(word, this.at)) {
        this.at += word.length;
        return { type: 'literal', raw: word };
      }
    }
    return this.fail(c === undefined ? 'the text ends where a value is expected' : `unexpected ${JSON.stringify(c)}`);
  }

  object(depth) {
    this.at += 1;
    const members = [];
    this.space();
    if (this.text[this.at] === '}') {
      this.at += 1;
      return { type: 'object', members };
    }
    for (;;) {
      this.space();
      if (this.text[this.at] !== '"') this.fail('expected a member name in double quotes');
      const key = this.string();
      this.space();
      if (this.text[this.at] !== ':') this.fail('expected ":" after the member name');
      this.at += 1;
      members.push({ key, value: this.value(depth + 1) });
      this.space();
      const next = this.text[this.at];
      this.at += 1;
      if (next === '}') return { type: 'object', members };
      if (next !== ',') {
        this.at -= 1;
        this.fail('expected "," or "}"');
      }
    }
  }

  array(depth) {
    this.at += 1;
    const items = [];
    this.space();
    if (this.text[this.at] === ']') {
      this.at += 1;
      return { type: 'array', items };
    }
    for (;;) {
      items.push(this.value(depth + 1));
      this.space();
      const next = this.text[this.at];
      this.at += 1;
      if (next === ']') return { type: 'array', items };
      if (next !== ',') {
        this.at -= 1;
        this.fail('expected "," or "]"');
      }
    }
  }

  string() {
    const start = this.at;
    this.at += 1;
    for (;;) {
      const c = this.text[this.at];
      if (c === undefined) this.fail('a string is not closed');
      if (c === '"') break;
      if (c < ' ') this.fail('a control character must be escaped inside a string');
      if (c === '\\') {
        const e = this.text[this.at + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(this.text.slice(this.at + 2, this.at + 6))) {
            this.fail('\\u must be followed by four hex digits');
          }
          this.at += 6;
          continue;
        }
        if (e === undefined || !'"\\/bfnrt'.includes(e)) this.fail('unknown escape in a string');
        this.at += 2;
        continue;
      }
      this.at += 1;
    }
    this.at += 1;
    const raw = this.text.slice(start, this.at);
    return { type: 'string', raw, value: JSON.parse(raw) };
  }

  number() {
    NUMBER.lastIndex = this.at;
    const match = NUMBER.exec(this.text);
    if (!match) this.fail('malformed number');
    this.at = NUMBER.lastIndex;
    return { type: 'number', raw: match[0] };
  }
}

/** Read one JSON text into nodes that keep each literal's text; throws JsonSyntaxError. */
export function parse(text) {
  const reader = new Reader(text);
  const node = reader.value(0);
  reader.space();
  if (reader.at < text.length) reader.fail('unexpected text after the value');
  return node;
}

/** The node of an object's member, or undefined. */
export function member(node, name) {
  if (node?.type !== 'object') return undefined;
  return node.members.find((m) => m.key.value === name)?.value;
}

/**
 * Pretty lines of a node, two spaces an indent. Each line is {depth, text, path}: path
 * is the dotted member path (root first) of the value that starts on that line, or null.
 */
export function prettyLines(node, rootPath) {
  const lines = [];
  const write = (value, depth, path, prefix, suffix) => {
    const open = value.type === 'object' ? '{' : '[';
    const close = value.type === 'object' ? '}' : ']';
    const children = value.type === 'object' ? value.members : value.type === 'array' ? value.items : null;
    if (children === null) {
      lines.push({ depth, text: prefix + value.raw + suffix, path });
      return;
    }
    if (children.length === 0) {
      lines.push({ depth, text: prefix + open + close + suffix, path });
      return;
    }
    lines.push({ depth, text: prefix + open, path });
    children.forEach((child, i) => {
      const comma = i < children.length - 1 ? ',' : '';
      if (value.type === 'object') {
        write(child.value, depth + 1, `${path}.${child.key.value}`, `${child.key.raw}: `, comma);
      } else {
        write(child, depth + 1, `${path}.${i}`, '', comma);
      }
    });
    lines.push({ depth, text: close + suffix, path: null });
  };
  write(node, 0, rootPath, '', '');
  return lines;
}

export function lineText(line) {
  return '  '.repeat(line.depth) + line.text;
}

/** The whole pretty text: the literals exactly as read, re-indented. */
export function pretty(node) {
  return prettyLines(node, '').map(lineText).join('\n');
}
