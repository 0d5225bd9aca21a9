/**
 * Owner secrets: values an owner stores once (`PUT /v1/secrets/{name}`) and pipelines name
 * instead of carrying them, `{{secrets.NAME}}` in an http node's url and header values and
 * `$secrets.NAME` in its body expression. Pure: finding references, substituting values, and
 * redacting values from anything that leaves a run (messages, outputs, traces).
 */
import { keyPath, valueAt } from './field-paths';

export const OWNER_SECRET_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
export const OWNER_SECRET_MAX_LENGTH = 4096;
/** What a redacted value reads as wherever it would have appeared. */
export const REDACTED = '[redacted]';

const NAME = '[A-Za-z_][A-Za-z0-9_]{0,63}';
// Spaces inside the braces are tolerated ({{ secrets.TOKEN }}), as most template languages do.
const TEMPLATE_REF = new RegExp(`\\{\\{\\s*secrets\\.(${NAME})\\s*\\}\\}`, 'g');
// A template that starts like a reference but is not one ({{secrets.9x}}, {{ secrets }}) is a push error, not a literal.
const TEMPLATE_LIKE = /\{\{\s*secrets\b[^}]*\}\}/g;
const BODY_REF = new RegExp(`\\$secrets\\.(${NAME})(?![A-Za-z0-9_])`, 'g');
const BODY_BARE = /\$secrets(?![A-Za-z0-9_.])/;

export interface SecretReference {
  name: string;
  /** Where in the definition: nodes.call.url, nodes.call.headers.Authorization, nodes.call.body. */
  path: string;
}

export interface ReferenceProblem {
  path: string;
  reason: string;
}

function namesIn(text: string, pattern: RegExp): string[] {
  return [...text.matchAll(pattern)].map((m) => m[1] ?? '');
}

/** Where a node type may name secrets (its kind's `secrets`), and which of its fields are JSONata. */
export interface SecretFieldsOf {
  type: string;
  templates: readonly string[];
  bindings: readonly string[];
  expressions: readonly string[];
}

/** The names a node's fields reference, with where: `{{secrets.NAME}}` in templates, `$secrets.NAME` in bindings. */
export function nodeSecretReferences(fields: SecretFieldsOf, nodePath: string, node: Readonly<Record<string, unknown>>): SecretReference[] {
  const refs: SecretReference[] = [];
  for (const field of fields.templates) {
    const value = node[field];
    if (typeof value === 'string') for (const name of namesIn(value, TEMPLATE_REF)) refs.push({ name, path: `${nodePath}.${field}` });
    else if (typeof value === 'object' && value !== null) {
      for (const [key, text] of Object.entries(value)) {
        if (typeof text === 'string')
          for (const name of namesIn(text, TEMPLATE_REF)) refs.push({ name, path: keyPath(`${nodePath}.${field}`, key) });
      }
    }
  }
  for (const field of fields.bindings) {
    const text = valueAt(node, field);
    if (typeof text === 'string') for (const name of namesIn(text, BODY_REF)) refs.push({ name, path: `${nodePath}.${field}` });
  }
  return refs;
}

/**
 * Push-time checks on one node's raw fields (before the definition is typed): malformed
 * `{{secrets…}}` templates, `$secrets` used whole (it would hand the expression every value),
 * and secrets in an expression that binds none, where nothing would substitute them.
 */
export function secretSyntaxProblems(fields: SecretFieldsOf, nodePath: string, raw: Readonly<Record<string, unknown>>): ReferenceProblem[] {
  const problems: ReferenceProblem[] = [];
  const checkTemplate = (text: unknown, path: string): void => {
    if (typeof text !== 'string') return;
    for (const m of text.matchAll(TEMPLATE_LIKE)) {
      if (!new RegExp(`^${TEMPLATE_REF.source}$`).test(m[0])) {
        problems.push({
          path,
          reason: `${m[0]} is not a secret reference; write {{secrets.NAME}} with NAME matching ${OWNER_SECRET_NAME_PATTERN.source}`,
        });
      }
    }
  };
  for (const field of fields.templates) {
    const value = raw[field];
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      for (const [key, text] of Object.entries(value)) checkTemplate(text, keyPath(`${nodePath}.${field}`, key));
    } else checkTemplate(value, `${nodePath}.${field}`);
  }
  for (const field of fields.expressions) {
    const text = valueAt(raw, field);
    if (typeof text !== 'string') continue;
    if (fields.bindings.includes(field)) {
      if (BODY_BARE.test(text))
        problems.push({ path: `${nodePath}.${field}`, reason: 'use $secrets.NAME for one secret; $secrets on its own is not available' });
    } else if (/\$secrets\b/.test(text)) {
      problems.push({
        path: `${nodePath}.${field}`,
        reason: `secrets are available only in http nodes (url, headers and body), not in ${fields.type} nodes`,
      });
    }
  }
  return problems;
}

/** The text with every `{{secrets.NAME}}` replaced by a harmless stand-in, for checking a URL's form at push. */
export function withSecretPlaceholders(text: string): string {
  return text.replace(TEMPLATE_REF, 'secret');
}

/** A run needs a secret that is not set. Its message names the secret and says how to set it. */
export class MissingSecretError extends Error {
  constructor(readonly secretName: string) {
    super(`secret '${secretName}' is not set (set it with: pipegate secrets set ${secretName})`);
    this.name = 'MissingSecretError';
  }
}

/** `{{secrets.NAME}}` → the value; throws MissingSecretError for a name without one. */
export function substituteSecrets(text: string, values: ReadonlyMap<string, string>): string {
  return text.replace(TEMPLATE_REF, (_whole, name: string) => {
    const value = values.get(name);
    if (value === undefined) throw new MissingSecretError(name);
    return value;
  });
}

/**
 * The `$secrets` binding for a body expression: only the names it references, so nothing else
 * can be reached from it. Throws MissingSecretError for a referenced name without a value.
 */
export function bodySecretsBinding(body: string, values: ReadonlyMap<string, string>): Record<string, string> {
  const binding = Object.create(null) as Record<string, string>;
  for (const name of namesIn(body, BODY_REF)) {
    const value = values.get(name);
    if (value === undefined) throw new MissingSecretError(name);
    binding[name] = value;
  }
  return binding;
}

/**
 * The spellings of a value that may come back from an upstream or through a URL: as is,
 * JSON-escaped, and percent-encoded (a URL's path or query). Longest first, so a longer form
 * is replaced before a shorter one inside it.
 */
function spellings(value: string): string[] {
  const forms = new Set([value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value), encodeURI(value)]);
  return [...forms].filter((f) => f !== '').sort((a, b) => b.length - a.length);
}

/**
 * A redactor for a set of secret values: replaces every occurrence (in any spelling above)
 * in a text with `[redacted]`. Build it once per run and apply it to everything that leaves
 * the run: error messages, outputs, node traces, log fields.
 */
export function secretRedactor(values: Iterable<string>): (text: string) => string {
  const forms = [...new Set([...values].flatMap(spellings))].sort((a, b) => b.length - a.length);
  if (forms.length === 0) return (text) => text;
  return (text) => {
    let out = text;
    for (const form of forms) if (out.includes(form)) out = out.split(form).join(REDACTED);
    return out;
  };
}

/** redactSecrets(text, values): the one-shot form of secretRedactor. */
export function redactSecrets(text: string, values: Iterable<string>): string {
  return secretRedactor(values)(text);
}

/** Every string inside a JSON value (keys included) redacted; other values unchanged. */
export function redactDeep<T>(value: T, redact: (text: string) => string): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return redact(v);
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v === 'object' && v !== null) {
      const out: Record<string, unknown> = {};
      for (const [k, item] of Object.entries(v)) {
        Object.defineProperty(out, redact(k), { value: walk(item), enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
    return v;
  };
  return walk(value) as T;
}
