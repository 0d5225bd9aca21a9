/**
 * Pushing a definition: the one owner use case that needs the validator (and with it the
 * JSONata compiler), kept apart so the other owner functions do not carry it.
 */
import { isOwnApiUrl, LOOP_GUARD_REASON } from '../core/address-guard';
import { AppError } from '../core/errors';
import { parseJson } from '../core/json-body';
import { PIPELINE_ID_PATTERN } from '../core/ids';
import { secretReferences } from '../core/nodes/secrets';
import { contentHash, validateDefinition } from '../core/pipeline';
import type { PipelineDefinition, Problem } from '../core/types';
import type { Deps } from '../adapters/deps';
import { chooseWorkflow, versionWorkflow } from './workflow-choice';

export async function push(d: Deps, id: string, body: string | null) {
  if (!PIPELINE_ID_PATTERN.test(id)) {
    throw new AppError('InvalidDefinition', [
      { path: 'pipeline_id', reason: 'must be 1-63 lower-case letters, digits or dashes, starting with a letter or digit' },
    ]);
  }
  let raw: unknown;
  if (body !== null) {
    const parsed = parseJson(body);
    if (!parsed.ok) throw new AppError('InvalidDefinition', [{ path: parsed.path, reason: parsed.reason }]);
    raw = parsed.value;
  }
  const checked = validateDefinition(raw, { maxNodes: d.config.maxNodes });
  if (!checked.ok) throw new AppError('InvalidDefinition', checked.problems);
  const loops = loopGuardProblems(checked.definition, [d.config.apiUrl, d.config.publicUrl]);
  if (loops.length > 0) throw new AppError('InvalidDefinition', loops);
  // Decided now and kept with the version, so a later change of the service's settings moves no
  // execution of it to another state machine.
  const choice = chooseWorkflow(checked.definition);
  const pushed = await d.pipelines.push(id, checked.definition, contentHash(checked.definition), d.clock.now().toISOString(), choice.type);
  // The same definition again is the version already stored, with the machine it was given then.
  const stored = pushed.created ? null : await d.pipelines.getVersion(id, pushed.version);
  const type = stored ? versionWorkflow(stored) : choice.type;
  const reason = type === choice.type ? choice.reason : `as decided when version ${pushed.version} was first pushed`;
  const warnings = await missingSecretWarnings(d, checked.definition);
  return {
    status: pushed.created ? 201 : 200,
    body: {
      pipeline_id: id,
      version: pushed.version,
      created: pushed.created,
      workflow: type,
      workflow_reason: reason,
      ...(warnings.length > 0 ? { warnings } : {}),
    },
  };
}

/** http nodes whose URL, as written, is this service's own API (a URL built from a secret is checked at run time). */
function loopGuardProblems(def: PipelineDefinition, ownUrls: readonly (string | undefined)[]): Problem[] {
  return Object.entries(def.nodes)
    .filter(([, n]) => n.type === 'http' && isOwnApiUrl(n.url, ownUrls))
    .map(([id]) => ({ path: `nodes.${id}.url`, reason: LOOP_GUARD_REASON }));
}

/**
 * A reference to a secret that is not set is not an error at push (the owner may set it
 * next), but the answer says so, and a run fails naming it until it is set.
 */
async function missingSecretWarnings(d: Deps, def: PipelineDefinition): Promise<Problem[]> {
  const refs = secretReferences(def);
  if (refs.length === 0) return [];
  const set = new Set((await d.ownerSecrets.list()).map((s) => s.name));
  return refs
    .filter((r) => !set.has(r.name))
    .map((r) => ({ path: r.path, reason: `secret '${r.name}' is not set; runs fail until it is (pipegate secrets set ${r.name})` }));
}
