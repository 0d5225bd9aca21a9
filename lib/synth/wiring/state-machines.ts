/**
 * Every AWS::StepFunctions::StateMachine of the assembly on aws-local-stepfunctions: the
 * template's definition with its substitutions applied, each Task state invoking the function
 * its Resource names, as the machine's role (a role that may not invoke it fails the state as
 * Step Functions reports it).
 */
import { isPlainObject } from '../../../functions/core/values';
import { forEachState, LocalWorkflow, LocalWorkflows, type WorkflowTask } from '../../local/workflow';
import type { StateMachinePort } from '../aws-endpoint';
import { FunctionError } from '../function-host';
import type { ResolvedStack } from '../physical';
import type { FunctionLookup, Wiring } from './context';

export interface StateMachines {
  /** By state machine ARN. */
  machines: Map<string, LocalWorkflow & StateMachinePort>;
  /** The service's two, by type, as the functions' WorkflowPort (what `npm start` calls `workflow`). */
  workflows: LocalWorkflows;
  /** The machines' roles, each resolved once. */
  roles: string[];
}

export function wireStateMachines(w: Wiring, fnByArn: FunctionLookup): StateMachines {
  const machines = new Map<string, LocalWorkflow & StateMachinePort>();
  const machineRoles: string[] = [];
  for (const stack of w.stacks) {
    for (const [id, r] of Object.entries(stack.stack.template.Resources)) {
      if (r.Type !== 'AWS::StepFunctions::StateMachine') continue;
      const where = `${stack.stack.id}.Resources.${id}.Properties`;
      const props = r.Properties ?? {};
      const arn = stack.physical[id]?.ref ?? '';
      const roleArn = stack.resolveString(props.RoleArn, `${where}.RoleArn`);
      machineRoles.push(roleArn);
      const definition = stateMachineDefinition(stack, props, where);
      const tasks: Record<string, WorkflowTask> = {};
      forEachTask(definition, (name, resource) => {
        const fn = fnByArn(resource, `${where} state ${name}`);
        tasks[name] = async (input) => {
          const d = await w.iam.evaluate({ principal: roleArn, action: 'lambda:InvokeFunction', resource: fn.spec.arn });
          if (!d.allowed) {
            // What Step Functions reports when its role may not invoke the function.
            throw new FunctionError(
              'Lambda.AWSLambdaException',
              `User: ${roleArn} is not authorized to perform: lambda:InvokeFunction on resource: ${fn.spec.arn} (Service: Lambda, Status Code: 403, Error Code: AccessDeniedException)`,
            );
          }
          return fn.invoke(input).catch((err: unknown) => {
            // Step Functions names Lambda's service errors Lambda.<error>.
            if (err instanceof FunctionError && err.name === 'TooManyRequestsException')
              throw new FunctionError('Lambda.TooManyRequestsException', err.message);
            throw err;
          });
        };
      });
      // The template's type, with its rules: names, stops, the five minutes of Express.
      const type = props.StateMachineType === 'EXPRESS' ? 'EXPRESS' : 'STANDARD';
      const workflow = new LocalWorkflow({
        definition,
        tasks,
        type,
        arn,
        onError: (name, err) =>
          w.log(`state machine ${arn}: execution ${name} failed: ${err instanceof Error ? err.message : String(err)}`),
      });
      const port: LocalWorkflow & StateMachinePort = workflow;
      w.boot.onStop(() => workflow.stopAll(2_000));
      machines.set(arn, port);
    }
  }

  const ofType = (type: 'EXPRESS' | 'STANDARD'): LocalWorkflow => {
    const found = [...machines.values()].filter((m) => m.type === type);
    if (found.length !== 1 || !found[0]) throw new Error(`Expected one ${type} state machine in the assembly, found ${found.length}`);
    return found[0];
  };
  return { machines, workflows: new LocalWorkflows({ express: ofType('EXPRESS'), standard: ofType('STANDARD') }), roles: machineRoles };
}

/** DefinitionString (or Definition) with DefinitionSubstitutions applied, as Step Functions gets it. */
function stateMachineDefinition(stack: ResolvedStack, props: Record<string, unknown>, where: string): Record<string, unknown> {
  let text =
    props.DefinitionString !== undefined
      ? stack.resolveString(props.DefinitionString, `${where}.DefinitionString`)
      : JSON.stringify(stack.resolve(props.Definition, `${where}.Definition`));
  const subs = (
    props.DefinitionSubstitutions === undefined ? {} : stack.resolve(props.DefinitionSubstitutions, `${where}.DefinitionSubstitutions`)
  ) as Record<string, unknown>;
  text = text.replace(/\$\{([^}]+)\}/g, (m, key: string) => {
    const v = subs[key];
    if (v === undefined) throw new Error(`${where}: DefinitionString names \${${key}}, which DefinitionSubstitutions does not give`);
    return String(v);
  });
  const parsed = JSON.parse(text) as unknown;
  if (!isPlainObject(parsed)) throw new Error(`${where}: the definition is not a JSON object`);
  return parsed;
}

function forEachTask(machine: Record<string, unknown>, visit: (name: string, resource: string) => void): void {
  forEachState(machine, (state, name) => {
    if (state.Type !== 'Task') return;
    const resource = String(state.Resource);
    if (!/^arn:[^:]+:lambda:[^:]+:\d{12}:function:[^:]+$/.test(resource))
      throw new Error(`State ${name}: only direct Lambda function ARNs are run locally (got ${resource})`);
    visit(name, resource);
  });
}
