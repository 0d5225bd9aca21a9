/**
 * Lookups into a resolved assembly shared by the synth tests: a function's role, the table and
 * queue ARNs, and a copy of the assembly with one template changed.
 */
import type { Assembly, Template } from '../../lib/synth/assembly';
import type { LocalEnvironment } from '../../lib/synth/physical';
import type { ResolvedAssembly } from '../../lib/synth/physical';

export const localEnv = (awsEndpointUrl = 'http://127.0.0.1:4599'): Omit<LocalEnvironment, 'account' | 'region'> => ({
  partition: 'aws',
  urlSuffix: 'amazonaws.com',
  awsEndpointUrl,
});

const pascal = (name: string): string =>
  name
    .split('-')
    .map((p) => (p[0]?.toUpperCase() ?? '') + p.slice(1))
    .join('');

/** The logical id of the one resource of this type whose id starts with the prefix. */
export function logicalId(resolved: ResolvedAssembly, stack: string, type: string, prefix: string): string {
  const hits = Object.entries(resolved.stack(stack).stack.template.Resources).filter(([id, r]) => r.Type === type && id.startsWith(prefix));
  if (hits.length !== 1) throw new Error(`${hits.length} ${type} resources named ${prefix}* in ${stack}`);
  return hits[0]?.[0] ?? '';
}

/** The role ARN of a function, by its handler name (execute, deployment-readiness, ...). */
export function functionRoleArn(resolved: ResolvedAssembly, fn: string): string {
  const id = logicalId(resolved, 'Pipegate', 'AWS::Lambda::Function', `${pascal(fn)}Function`);
  const s = resolved.stack('Pipegate');
  return s.resolveString(s.stack.template.Resources[id]?.Properties?.Role);
}

export function tableArn(resolved: ResolvedAssembly): string {
  return (
    resolved.stack('PipegateStateful').physical[logicalId(resolved, 'PipegateStateful', 'AWS::DynamoDB::Table', 'Table')]?.attributes.Arn ??
    ''
  );
}

/** `Executions` or `Callbacks`. */
export function queueArn(resolved: ResolvedAssembly, which: string): string {
  return (
    resolved.stack('PipegateStateful').physical[logicalId(resolved, 'PipegateStateful', 'AWS::SQS::Queue', `${which}Queue`)]?.attributes
      .Arn ?? ''
  );
}

/** A copy of the assembly whose template of one stack `edit` has changed (the files stay as they are). */
export function withTemplate(assembly: Assembly, stack: string, edit: (t: Template) => void): Assembly {
  const copy = structuredClone(assembly);
  const s = copy.stacks.find((x) => x.id === stack);
  if (!s) throw new Error(`No stack ${stack}`);
  edit(s.template);
  return copy;
}
