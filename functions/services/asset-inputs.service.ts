/**
 * ASSET inputs of an execution request: checked before anything is written (sniffed type,
 * size, the input's restrictions, an upload's ownership, presence and size), then stored (inline
 * bytes) or claimed (uploads, single use) once the execution id is known. Records hold the
 * resulting ObjectRefs, never bytes.
 */
import { assetRestrictionProblem, digestStream, sha256Hex, type AssetValueForm } from '../core/assets';
import { AppError } from '../core/errors';
import { executionObjectKey, executionOwner, ownerUploadKey, sameOwner, type ObjectOwner } from '../core/object-keys';
import type { ObjectRef, OpenedObject } from '../core/ports';
import { SNIFF_BYTES, sniffMediaType } from '../core/sniff';
import type { ContractInput, Execution } from '../core/types';
import type { Deps } from '../adapters/deps';

/** An asset input that passed every check, ready to be stored or claimed. */
export interface CheckedAsset {
  id: string;
  media_type: string;
  bytes: number;
  sha256: string;
  source: { kind: 'inline'; body: Uint8Array } | { kind: 'upload'; uploadId: string; key: string };
}

const invalid = (id: string, reason: string) => new AppError('InvalidInput', `input '${id}' ${reason}`);

/**
 * Checks every asset input of a request; 422 naming the input for the first that does not fit.
 * `owner` is who the request runs for: uploads of anyone else (another deployment, a pipeline's
 * owner for a caller, a caller for a run) are refused.
 */
export async function checkAssets(
  d: Deps,
  owner: ObjectOwner,
  inputs: readonly ContractInput[],
  forms: Record<string, AssetValueForm>,
  now: Date,
): Promise<CheckedAsset[]> {
  const checked: CheckedAsset[] = [];
  for (const input of inputs) {
    const form = Object.hasOwn(forms, input.id) ? forms[input.id] : undefined;
    if (input.value_type !== 'asset' || form === undefined) continue;
    checked.push(form.kind === 'inline' ? await checkInline(input, form.bytes) : await checkUpload(d, owner, input, form.uploadId, now));
  }
  return checked;
}

async function checkInline(input: ContractInput, body: Uint8Array): Promise<CheckedAsset> {
  const media_type = await sniffMediaType(body);
  const problem = assetRestrictionProblem(input, { media_type, bytes: body.length });
  if (problem !== null) throw invalid(input.id, problem);
  return { id: input.id, media_type, bytes: body.length, sha256: sha256Hex(body), source: { kind: 'inline', body } };
}

async function checkUpload(d: Deps, owner: ObjectOwner, input: ContractInput, uploadId: string, now: Date): Promise<CheckedAsset> {
  const record = await d.uploads.get(uploadId, now);
  // Unknown, expired and others' uploads answer alike: a caller learns nothing of others'.
  if (!record || !sameOwner(record.owner, owner)) {
    throw invalid(
      input.id,
      `names an upload that does not exist or has expired (an upload can be used for a day, with the ${owner.kind} that made it)`,
    );
  }
  const key = ownerUploadKey(owner, uploadId);
  // One streamed read: its size from the answer, then counted, hashed and its head sniffed as it
  // passes, so the function holds SNIFF_BYTES of it, not the file (up to 100 MiB).
  const opened = await openObject(d, key);
  if (!opened) throw invalid(input.id, 'names an upload whose bytes have not arrived: PUT them to its upload_url first');
  if (opened.bytes !== record.bytes) {
    await drop(opened.body);
    throw invalid(input.id, `names an upload of ${opened.bytes} bytes, not the ${record.bytes} it was made for`);
  }
  const digest = await digestStream(opened.body, SNIFF_BYTES);
  if (digest.bytes !== record.bytes)
    throw invalid(input.id, `names an upload of ${digest.bytes} bytes, not the ${record.bytes} it was made for`);
  const media_type = await sniffMediaType(digest.head);
  const problem = assetRestrictionProblem(input, { media_type, bytes: digest.bytes });
  if (problem !== null) throw invalid(input.id, problem);
  return { id: input.id, media_type, bytes: digest.bytes, sha256: digest.sha256, source: { kind: 'upload', uploadId, key } };
}

/** The object as a stream; a store without streamed reads answers it whole (as one chunk). */
async function openObject(d: Deps, key: string): Promise<OpenedObject | null> {
  if (d.objects.open) return d.objects.open(key);
  const head = await d.objects.head(key);
  const body = head ? await d.objects.read(key) : null;
  return head && body ? { bytes: body.length, media_type: head.media_type, body: once(body) } : null;
}

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

/** Ends a stream not read (its connection given back). */
async function drop(body: AsyncIterable<Uint8Array>): Promise<void> {
  const it = body[Symbol.asyncIterator]();
  await it.return?.();
}

/**
 * Stores inline bytes under the execution and claims uploads for it (single use), before its
 * record is written. A crash in between leaves objects no record points to (never reachable:
 * links are minted from records only; the bucket's lifecycle removes them) and, for an upload,
 * a claim by an execution id that a retry with the same Idempotency-Key takes up again.
 */
export async function storeAssets(
  d: Deps,
  e: Pick<Execution, 'kind' | 'deployment_id' | 'pipeline_id' | 'execution_id'>,
  checked: readonly CheckedAsset[],
  now: Date,
): Promise<Record<string, ObjectRef>> {
  const refs: Record<string, ObjectRef> = {};
  for (const a of checked) {
    let key: string;
    if (a.source.kind === 'inline') {
      key = executionObjectKey(e, `in.${a.id}`);
      await d.objects.put(key, a.source.body, a.media_type);
    } else {
      if (!(await d.uploads.consume(a.source.uploadId, executionOwner(e), e.execution_id, now))) {
        throw invalid(a.id, 'names an upload that another execution has used already (an upload serves one execution; make a new one)');
      }
      key = a.source.key;
    }
    Object.defineProperty(refs, a.id, {
      value: { key, media_type: a.media_type, bytes: a.bytes, sha256: a.sha256 },
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return refs;
}
