/**
 * A wait node's resume URL inside the pipeline: `$resume_url('approval')` in an http node's body
 * expression, `{{resume_url.approval}}` in its url and header values (the same two spellings as
 * owner secrets, functions/core/owner-secrets.ts), so a job can call back instead of being
 * polled. Where a node type may name them is its kind's `resumeUrls`. Pure: finding references
 * and their push-time problems, and substituting the URLs when the node runs.
 */
import { keyPath, valueAt } from './field-paths';

const ID = '[A-Za-z_][A-Za-z0-9_]{0,63}';
// Spaces inside the braces are tolerated, as for secrets.
const TEMPLATE_REF = new RegExp(`\\{\\{\\s*resume_url\\.(${ID})\\s*\\}\\}`, 'g');
const TEMPLATE_LIKE = /\{\{\s*resume_url\b[^}]*\}\}/g;
const BODY_CALL = new RegExp(`\\$resume_url\\(\\s*(?:'(${ID})'|"(${ID})")\\s*\\)`, 'g');
const BODY_ANY = /\$resume_url\b/g;

/** Where a node type's fields may name resume URLs: template fields (a string, or an object of strings) and JSONata fields. */
export interface ResumeUrlFields {
  templates: readonly string[];
  bindings: readonly string[];
}

export const NO_RESUME_URLS: ResumeUrlFields = { templates: [], bindings: [] };

export interface ResumeReference {
  /** The wait node named. */
  target: string;
  /** Where: nodes.call.body, nodes.call.headers.X-Webhook. */
  path: string;
}

export interface ResumeProblem {
  path: string;
  reason: string;
}

/** Every string of a template field with its path: the field itself, or each value of an object of strings. */
function templateTexts(raw: Readonly<Record<string, unknown>>, field: string, nodePath: string): { text: string; path: string }[] {
  const value = raw[field];
  if (typeof value === 'string') return [{ text: value, path: `${nodePath}.${field}` }];
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    return Object.entries(value).flatMap(([k, text]) =>
      typeof text === 'string' ? [{ text, path: keyPath(`${nodePath}.${field}`, k) }] : [],
    );
  }
  return [];
}

/**
 * A node's resume URL references and the problems with how they are written: a malformed
 * `{{resume_url…}}`, `$resume_url` used other than as a call with a node id written out, or
 * used in a JSONata field where nothing would give it. Which nodes they name is checked by the
 * definition's walk (functions/core/pipeline.ts), which knows the wait nodes.
 */
export function resumeReferences(
  fields: ResumeUrlFields & { type: string; expressions: readonly string[] },
  nodePath: string,
  raw: Readonly<Record<string, unknown>>,
): { refs: ResumeReference[]; problems: ResumeProblem[] } {
  const refs: ResumeReference[] = [];
  const problems: ResumeProblem[] = [];
  for (const field of fields.templates) {
    for (const { text, path } of templateTexts(raw, field, nodePath)) {
      for (const m of text.matchAll(TEMPLATE_LIKE)) {
        const ref = new RegExp(`^${TEMPLATE_REF.source}$`).exec(m[0]);
        if (ref?.[1] !== undefined) refs.push({ target: ref[1], path });
        else problems.push({ path, reason: `${m[0]} is not a resume URL reference; write {{resume_url.ID}} with ID a wait node's id` });
      }
    }
  }
  for (const field of fields.expressions) {
    const text = valueAt(raw, field);
    if (typeof text !== 'string') continue;
    const path = `${nodePath}.${field}`;
    const uses = [...text.matchAll(BODY_ANY)].length;
    if (uses === 0) continue;
    if (!fields.bindings.includes(field)) {
      problems.push({
        path,
        reason: `$resume_url is available only in an http node's body (and {{resume_url.ID}} in its url and headers), not in ${fields.type === 'http' ? `an http node's ${field}` : `${fields.type} nodes`}`,
      });
      continue;
    }
    const calls = [...text.matchAll(BODY_CALL)];
    for (const m of calls) refs.push({ target: m[1] ?? m[2] ?? '', path });
    if (calls.length !== uses) problems.push({ path, reason: "write $resume_url('ID') with ID a wait node's id, as a quoted string" });
  }
  return { refs, problems };
}

/** A run needs the resume URL of a node it has none for (a definition the push would refuse). */
export class MissingResumeUrlError extends Error {
  constructor(readonly nodeId: string) {
    super(`no resume URL for '${nodeId}': it is not a wait node of this pipeline`);
    this.name = 'MissingResumeUrlError';
  }
}

/** `{{resume_url.ID}}` → the URL; throws MissingResumeUrlError for an id without one. */
export function substituteResumeUrls(text: string, urls: Readonly<Record<string, string>>): string {
  return text.replace(TEMPLATE_REF, (_whole, id: string) => {
    const url = Object.hasOwn(urls, id) ? urls[id] : undefined;
    if (url === undefined) throw new MissingResumeUrlError(id);
    return url;
  });
}

/**
 * The `$resume_url` function a body expression is given: the URL of a wait node by id. Every
 * id the body names must have one, checked before it is evaluated (as its secrets are).
 */
export function resumeUrlBinding(body: string, urls: Readonly<Record<string, string>>): (id: unknown) => string {
  for (const m of body.matchAll(BODY_CALL)) {
    const id = m[1] ?? m[2] ?? '';
    if (!Object.hasOwn(urls, id)) throw new MissingResumeUrlError(id);
  }
  return (id) => {
    const url = typeof id === 'string' && Object.hasOwn(urls, id) ? urls[id] : undefined;
    if (url === undefined) throw new MissingResumeUrlError(String(id));
    return url;
  };
}

/** The text with every `{{resume_url.ID}}` replaced by a harmless stand-in, for checking a URL's form at push. */
export function withResumeUrlPlaceholders(text: string): string {
  return text.replace(TEMPLATE_REF, 'resume');
}
