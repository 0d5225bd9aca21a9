/**
 * What each part of start:synth's wiring (lib/synth/runtime.ts) reads: the resolved templates,
 * the IAM evaluator, the boot (data dir, environment, stop steps, timers), the scale model when
 * one is on, and the log.
 */
import type { Boot } from '../../local/bootstrap';
import type { Assembly } from '../assembly';
import type { FunctionHost } from '../function-host';
import type { IamEvaluator } from '../iam';
import type { ResolvedAssembly, ResolvedStack } from '../physical';
import type { ScaleModel } from '../scale-model';

export interface Wiring {
  boot: Boot;
  assembly: Assembly;
  resolved: ResolvedAssembly;
  /** Every stack of the assembly, resolved, in deployment order. */
  stacks: ResolvedStack[];
  iam: IamEvaluator;
  scale: ScaleModel | undefined;
  log: (line: string) => void;
}

/** A function of the assembly by its ARN (or name); `where` names what asks, for the error. */
export type FunctionLookup = (arn: string, where: string) => FunctionHost;
