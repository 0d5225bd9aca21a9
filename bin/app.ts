#!/usr/bin/env node
/**
 * The CDK app: `npx cdk deploy --all` (see docs/aws.md). Settings come from cdk.json's context
 * or `-c key=value`; cdk-nag's AwsSolutions checks run on every synth unless `-c nag=false`
 * (the local synthesized mode's own synth: the checks only report, they change no template).
 */
import { App } from 'aws-cdk-lib';
import { buildPipegate } from '../lib/stacks/app';

const app = new App();
const nag: unknown = app.node.tryGetContext('nag');
buildPipegate(app, { nag: nag !== false && nag !== 'false' });
