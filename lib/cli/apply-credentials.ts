/**
 * The secrets file of `pipegate apply --secrets-out FILE`: the API key and signing secret of
 * each first publish, and the key of each consumer apply creates, keyed by pipeline id. They exist nowhere else (the service keeps only a
 * hash and a sealed copy), so the file is readable by its owner only, written whole through a
 * rename so a crash never leaves half a file, and merged so earlier entries survive.
 */
import { accessSync, chmodSync, constants, existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { UsageError } from './errors';
import { isPlainObject } from '../../functions/core/values';

export interface CredentialsEntry {
  deployment_id: string;
  api_key: string;
  signing_secret: string;
  execute_url: string;
}

/** A consumer's key, under its pipeline's entry, keyed by the consumer's name. */
export interface ConsumerCredentials {
  deployment_id: string;
  consumer_id: string;
  api_key: string;
}

function readExisting(path: string, shown: string): Record<string, unknown> {
  if (!existsSync(path)) return {};
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new UsageError(`--secrets-out ${shown}: cannot read it: ${(e as Error).message}`);
  }
  if (text.trim() === '') return {};
  let doc: unknown;
  try {
    doc = JSON.parse(text) as unknown;
  } catch {
    throw new UsageError(
      `--secrets-out ${shown} exists and is not JSON`,
      'apply merges new keys into a JSON object keyed by pipeline id; give another path',
    );
  }
  if (!isPlainObject(doc)) throw new UsageError(`--secrets-out ${shown} exists and does not hold a JSON object`, 'give another path');
  return doc;
}

export class CredentialsFile {
  private chain: Promise<void> = Promise.resolve();
  readonly path: string;

  /** Checks, before anything is published, that the file can be written and merged. */
  constructor(
    file: string,
    cwd: string,
    private readonly shown = file,
  ) {
    this.path = resolve(cwd, file);
    const dir = dirname(this.path);
    if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory())
      throw new UsageError(`--secrets-out ${shown}: the directory ${dir} does not exist`);
    if (statSync(this.path, { throwIfNoEntry: false })?.isDirectory())
      throw new UsageError(`--secrets-out ${shown} is a directory; give a file path`);
    try {
      accessSync(dir, constants.W_OK);
    } catch {
      throw new UsageError(`--secrets-out ${shown}: cannot write in ${dir}`);
    }
    readExisting(this.path, shown);
  }

  /**
   * Adds (or replaces) one pipeline's deployment credentials. Consumer keys saved earlier for
   * the same deployment stay; those of another (deleted) deployment go with it.
   */
  save(pipelineId: string, entry: CredentialsEntry): Promise<void> {
    return this.queue((doc) => {
      const before = doc[pipelineId];
      const kept =
        isPlainObject(before) && before.deployment_id === entry.deployment_id && isPlainObject(before.consumers)
          ? { consumers: before.consumers }
          : {};
      return { ...doc, [pipelineId]: { ...entry, ...kept } };
    });
  }

  /** Adds (or replaces) one consumer's key under its pipeline's entry, keeping everything else. */
  saveConsumer(pipelineId: string, name: string, entry: ConsumerCredentials): Promise<void> {
    return this.queue((doc) => {
      const before = isPlainObject(doc[pipelineId]) ? doc[pipelineId] : {};
      const consumers = isPlainObject(before.consumers) ? before.consumers : {};
      return { ...doc, [pipelineId]: { ...before, consumers: { ...consumers, [name]: entry } } };
    });
  }

  /** Calls are written one after another, each reading what the last one wrote. */
  private queue(change: (doc: Record<string, unknown>) => Record<string, unknown>): Promise<void> {
    const next = this.chain.then(() => this.write(change));
    this.chain = next.catch(() => undefined);
    return next;
  }

  private write(change: (doc: Record<string, unknown>) => Record<string, unknown>): void {
    const doc = change(readExisting(this.path, this.shown));
    const tmp = `${this.path}.${process.pid}.tmp`;
    try {
      writeFileSync(tmp, `${JSON.stringify(doc, null, 2)}\n`, { mode: 0o600, flag: 'w' });
      // mode applies only when the file is created; a leftover temp file keeps its own.
      chmodSync(tmp, 0o600);
      renameSync(tmp, this.path);
    } catch (e) {
      rmSync(tmp, { force: true });
      throw e;
    }
  }
}
