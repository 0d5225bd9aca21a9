#!/usr/bin/env node
/**
 * The CDK app: `npx cdk deploy --all` (see docs/aws.md). Settings come from cdk.json's context
 * or `-c key=value`; cdk-nag's AwsSolutions checks run on every synth.
 */
import { App } from 'aws-cdk-lib';
import { buildPipegate } from '../lib/stacks/app';

buildPipegate(new App(), { nag: true });
