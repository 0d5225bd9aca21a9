/**
 * Every AWS::Events::Rule with a rate as a timer in the boot: each target function invoked as
 * EventBridge invokes it (a Scheduled Event, or the target's Input), only with a
 * resource-based permission for the rule.
 */
import { randomUUID } from 'node:crypto';
import { isPlainObject } from '../../../functions/core/values';
import type { FunctionLookup, Wiring } from './context';

export interface Schedule {
  ruleArn: string;
  functionName: string;
  everyMs: number;
  fire(): Promise<unknown>;
}

export function wireSchedules(w: Wiring, fnByArn: FunctionLookup): Schedule[] {
  const schedules: Schedule[] = [];
  for (const stack of w.stacks) {
    const permissions = Object.entries(stack.stack.template.Resources)
      .filter(([, r]) => r.Type === 'AWS::Lambda::Permission')
      .map(([id, r]) => stack.resolve(r.Properties ?? {}, `${stack.stack.id}.Resources.${id}.Properties`) as Record<string, unknown>);
    for (const [id, r] of Object.entries(stack.stack.template.Resources)) {
      if (r.Type !== 'AWS::Events::Rule') continue;
      const where = `${stack.stack.id}.Resources.${id}.Properties`;
      const p = stack.resolve(r.Properties ?? {}, where) as Record<string, unknown>;
      if (typeof p.ScheduleExpression !== 'string' || p.State === 'DISABLED') continue;
      const everyMs = rateMs(p.ScheduleExpression, where);
      const ruleArn = stack.physical[id]?.attributes.Arn ?? '';
      for (const target of Array.isArray(p.Targets) ? p.Targets.filter(isPlainObject) : []) {
        const fn = fnByArn(String(target.Arn), `${where}.Targets`);
        // Without a resource-based permission for events.amazonaws.com (and this rule) the
        // rule fires and the invocation fails (its FailedInvocations metric).
        const permitted = permissions.some(
          (perm) =>
            (perm.FunctionName === fn.spec.arn || perm.FunctionName === fn.spec.name) &&
            perm.Principal === 'events.amazonaws.com' &&
            (perm.Action === 'lambda:InvokeFunction' || perm.Action === 'lambda:*') &&
            (typeof perm.SourceArn !== 'string' || perm.SourceArn === ruleArn),
        );
        const fire = async (): Promise<unknown> => {
          if (!permitted)
            throw new Error(`${ruleArn}: events.amazonaws.com may not invoke ${fn.spec.arn} (no AWS::Lambda::Permission for the rule)`);
          const event =
            typeof target.Input === 'string'
              ? (JSON.parse(target.Input) as unknown)
              : {
                  version: '0',
                  id: randomUUID(),
                  'detail-type': 'Scheduled Event',
                  source: 'aws.events',
                  account: w.resolved.env.account,
                  time: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
                  region: w.resolved.env.region,
                  resources: [ruleArn],
                  detail: {},
                };
          return fn.invoke(event);
        };
        // One pass at a time: a pass still running when the next is due is not started twice here
        // (EventBridge would start it; the functions it targets are safe to run twice).
        w.boot.every(everyMs, fire, (err: unknown) =>
          w.log(`schedule ${ruleArn}: ${fn.spec.name} failed: ${err instanceof Error ? err.message : String(err)}`),
        );
        schedules.push({ ruleArn, functionName: fn.spec.name, everyMs, fire });
      }
    }
  }
  return schedules;
}

/** `rate(1 minute)`, `rate(5 minutes)`, hours and days; cron() schedules are not run locally. */
function rateMs(expression: string, where: string): number {
  const m = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/.exec(expression);
  if (!m?.[1] || !m[2]) throw new Error(`${where}: schedule ${expression} is not run locally (only rate(...) is)`);
  const unit = m[2].startsWith('minute') ? 60_000 : m[2].startsWith('hour') ? 3_600_000 : 86_400_000;
  return Number(m[1]) * unit;
}
