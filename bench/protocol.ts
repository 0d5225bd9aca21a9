/**
 * Messages between the benchmark (parent) and the server under test (a child process, so the
 * load generator and the server each have a core of a 2-core machine).
 */
import * as v from 'valibot';

export const ReadyMessage = v.object({
  type: v.literal('ready'),
  url: v.string(),
  apiKey: v.optional(v.string()),
  deploymentId: v.optional(v.string()),
});

export const DoneMessage = v.object({
  type: v.literal('done'),
  id: v.string(),
  status: v.string(),
  created_at: v.string(),
  completed_at: v.nullable(v.string()),
});

export const ReplyMessage = v.object({
  type: v.literal('reply'),
  seq: v.number(),
  ok: v.boolean(),
  result: v.optional(v.unknown()),
});

export const ChildMessage = v.variant('type', [ReadyMessage, DoneMessage, ReplyMessage]);
export type ChildMessage = v.InferOutput<typeof ChildMessage>;
export type DoneMessage = v.InferOutput<typeof DoneMessage>;

export const CommandName = v.picklist(['count', 'pause', 'resume', 'cpu', 'snapshot', 'units', 'stop']);
export type CommandName = v.InferOutput<typeof CommandName>;

export const CommandMessage = v.object({
  type: v.literal('cmd'),
  seq: v.number(),
  name: CommandName,
  arg: v.optional(v.number()),
});
export type CommandMessage = v.InferOutput<typeof CommandMessage>;

export type ServerMode = 'runtime' | 'floor';
