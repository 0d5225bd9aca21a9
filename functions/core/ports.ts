/**
 * What the pure core needs from the outside world, handed in by adapters. Core code imports
 * these types only, never an adapter.
 */
export interface HttpRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Bodies past this size are cut off and the call fails. */
  maxResponseBytes?: number;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * One HTTP exchange through the address guard. It rejects (throws an Error whose message is
 * fit to show a user) on a blocked address, a time-out, an abort or a network failure; it
 * never follows redirects (a 3xx is returned as it is).
 */
export type HttpPort = (req: HttpRequest) => Promise<HttpResponse>;

/** An owner secret as anyone may see it: never its value. */
export interface OwnerSecretSummary {
  name: string;
  updated_at: string;
}

/** Owner secrets, sealed at rest (see functions/core/owner-secrets.ts for their use). */
export interface OwnerSecretsPort {
  /** Creates or replaces a secret. */
  put(name: string, value: string, updatedAt: string): Promise<OwnerSecretSummary>;
  /** Every secret's name and when it was last set, by name. */
  list(): Promise<OwnerSecretSummary[]>;
  /** False when there was no such secret. */
  remove(name: string): Promise<boolean>;
  /**
   * The values of those of `names` that are set. Read at most once per process per TTL: a
   * changed value is seen within the TTL, a write through this same port at once.
   */
  values(names: readonly string[]): Promise<Map<string, string>>;
}

export interface Clock {
  now(): Date;
}

export interface IdSource {
  uuid(): string;
}

/** Queue names come from the one queue definition (plain data). */
export type { QueueName } from '../../lib/queues';
import type { QueueName } from '../../lib/queues';

/** Messages out to the executions and callbacks queues (SQS on AWS, durable local queues). */
export interface QueuePort {
  send(queue: QueueName, body: Record<string, unknown>, opts?: { delaySeconds?: number }): Promise<void>;
}

/** The state machine: one workflow execution per pipegate execution, named by its id. */
export interface WorkflowPort {
  /** Starts the workflow; a second start of the same name is harmless and reports so. */
  start(name: string, input: Record<string, unknown>): Promise<'started' | 'already_exists'>;
  /** Stops it if it is still going; stopping a finished or unknown one is not an error. */
  stop(name: string, cause: string): Promise<void>;
}

/**
 * Wakes callers that wait for an execution to finish (`Prefer: wait`). A wake only means "read
 * the record again": it may come before the execution is terminal, and the reader decides.
 */
export interface CompletionsPort {
  /**
   * Starts watching one execution. Watch first, then read the record: a completion written
   * between the read and the wait still wakes the watcher.
   */
  watch(executionId: string): CompletionWatch;
  /** Called by the one place that writes terminal states, after the write won. */
  notify(executionId: string): void;
}

export interface CompletionWatch {
  /** Resolves true when the record is worth reading again, false when `ms` passed first. */
  next(ms: number): Promise<boolean>;
  /** Stops watching; always called, also when the wait ends early. */
  close(): void;
}
