/**
 * Lookups into a resolved assembly shared by the synth tests: a function's role, the table and
 * queue ARNs, and a copy of the assembly with one template changed.
 */
import type { Assembly, Template } from '../../lib/synth/assembly';
import { concurrencyPlan, waitersBound, waits } from '../../lib/concurrency';
import { WORKERS } from '../../lib/routes';
import { isPlainObject } from '../../functions/core/values';
import { allFunctionNames } from '../../lib/stacks/permissions';
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

/**
 * The template edit `-c reservedConcurrency=n -c maxAccountShare=share` makes, without a second
 * synth: the plan as each function's ReservedConcurrentExecutions (each waiting for the
 * deploy-time check, told the plan's total), the waiting routes' wait bound (PIPEGATE_MAX_WAITERS
 * and UpdateItem on their WAITERS# counters) and the event sources' maximum concurrency.
 * test/stack/service-stack.test.ts holds it to what the stack synthesizes.
 */
export const reserving =
  (n: number, share = 50) =>
  (t: Template): void => {
    const plan = concurrencyPlan(allFunctionNames(), n);
    const resources = Object.entries(t.Resources);
    const checkId = resources.find(([, r]) => r.Type === 'Custom::PipegateConcurrencyCheck')?.[0];
    if (!checkId) throw new Error('The template has no concurrency check');
    Object.assign(t.Resources[checkId]?.Properties ?? {}, { Requested: n, Reserved: plan.total, MaxAccountShare: share });
    const nameOf = (id: string): string | undefined => /^pipegate (.+)$/.exec(String(t.Resources[id]?.Properties?.Description ?? ''))?.[1];
    const refId = (x: unknown): string | undefined => {
      if (!isPlainObject(x)) return undefined;
      if (typeof x.Ref === 'string') return x.Ref;
      const att = x['Fn::GetAtt'];
      return Array.isArray(att) && typeof att[0] === 'string' ? att[0] : undefined;
    };
    for (const [id, r] of resources) {
      const name = r.Type === 'AWS::Lambda::Function' ? nameOf(id) : undefined;
      const reserved = name === undefined ? undefined : plan.reserved[name];
      if (r.Type === 'AWS::Lambda::Function' && name !== undefined && reserved !== undefined) {
        const props = r.Properties ?? {};
        props.ReservedConcurrentExecutions = reserved;
        r.DependsOn = [...[r.DependsOn ?? []].flat(), checkId].sort();
        if (!waits(name)) continue;
        (props.Environment as { Variables: Record<string, unknown> }).Variables.PIPEGATE_MAX_WAITERS = String(waitersBound(reserved));
        const role = refId(props.Role);
        const policies = resources.filter(
          ([, p]) => p.Type === 'AWS::IAM::Policy' && [p.Properties?.Roles].flat(2).some((x) => refId(x) === role),
        );
        const statements = policies.flatMap(
          ([, p]) => (p.Properties?.PolicyDocument as { Statement: Record<string, unknown>[] }).Statement,
        );
        const bound = statements.find((st) => st.Action === 'dynamodb:UpdateItem' && st.Condition !== undefined);
        if (bound) {
          const keys = (bound.Condition as Record<string, Record<string, string | string[]>>)['ForAllValues:StringLike'] ?? {};
          keys['dynamodb:LeadingKeys'] = [...[keys['dynamodb:LeadingKeys'] ?? []].flat(), 'WAITERS#*'];
        } else {
          const table = statements.find((st) => [st.Action].flat().includes('dynamodb:GetItem'))?.Resource;
          statements.push({
            Action: 'dynamodb:UpdateItem',
            Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['WAITERS#*'] } },
            Effect: 'Allow',
            Resource: table,
          });
          (policies[0]?.[1].Properties?.PolicyDocument as { Statement: unknown[] }).Statement = statements;
        }
      }
      if (r.Type === 'AWS::Lambda::EventSourceMapping') {
        const consumer = nameOf(refId(r.Properties?.FunctionName) ?? '');
        const queue = consumer === WORKERS.runner ? 'executions' : consumer === WORKERS.callbackDispatch ? 'callbacks' : undefined;
        if (queue) Object.assign(r.Properties ?? {}, { ScalingConfig: { MaximumConcurrency: plan.queueMaxConcurrency[queue] } });
        // A child of its function's construct, it waits for the check with it.
        r.DependsOn = [...[r.DependsOn ?? []].flat(), checkId].sort();
      }
    }
  };
